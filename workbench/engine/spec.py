"""The engine specification: the engine arguments the workbench sets for a local vLLM engine.

Anything not set here stays at vLLM's default. A remote server's address will live here too.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace

DEMO_MODEL = "demo"  # EngineConfig.model value meaning "the demo model, built on first use"
DEMO_VL_MODEL = "demo-vl"  # the vision-language demo model (Idefics3, images), built on first use
DEMO_VL_SETTINGS = (("limit_mm_per_prompt", {"image": 5}),)  # what demo-vl starts with unless told otherwise
SERVE_CONTEXT = "serve"  # EngineConfig.usage_context: the batch limits left open as `vllm serve` sets them


@dataclass(frozen=True)
class EngineConfig:
    """The engine arguments the workbench sets; anything else stays at vLLM's default."""

    model: str
    max_model_len: int = 2048
    max_num_seqs: int = 64
    block_size: int | None = None  # CPU attention needs a multiple of 32; GPU default is 16
    num_gpu_blocks_override: int | None = None
    kv_cache_memory_bytes: int | None = None
    gpu_memory_utilization: float | None = None
    enable_prefix_caching: bool = True
    enforce_eager: bool | None = None  # default: eager on CPU, CUDA graphs on GPU
    scheduling_policy: str | None = None  # "priority": chat requests go ahead of waiting batch work
    # Whose defaults fill the batch limits left open (max_num_batched_tokens, max_num_seqs): None, vLLM's for an
    # LLMEngine (its usage context ENGINE_CONTEXT); SERVE_CONTEXT, those `vllm serve` starts with (on an H200
    # vLLM 0.32 gives an LLMEngine 2,048 tokens and 128 sequences a step, `vllm serve` 8,192 and 1,024). Not an
    # engine argument: the engine session hands it to LLMEngine.from_engine_args.
    usage_context: str | None = None
    extra: tuple[tuple[str, object], ...] = field(default=())

    def option(self, name: str, default=None):
        """One of the ``extra`` engine arguments."""
        return dict(self.extra).get(name, default)

    def engine_kwargs(self, on_cpu: bool) -> dict:
        kwargs = dict(
            model=self.model,
            max_model_len=self.max_model_len,
            max_num_seqs=self.max_num_seqs,
            enable_prefix_caching=self.enable_prefix_caching,
            enforce_eager=on_cpu if self.enforce_eager is None else self.enforce_eager,
            block_size=self.block_size or (32 if on_cpu else 16),
            disable_log_stats=False,  # vLLM fills RequestOutput.metrics only with stats on
        )
        for name in ("num_gpu_blocks_override", "kv_cache_memory_bytes", "gpu_memory_utilization",
                     "scheduling_policy"):
            if getattr(self, name) is not None:
                kwargs[name] = getattr(self, name)
        if on_cpu and self.kv_cache_memory_bytes is None and "VLLM_CPU_KVCACHE_SPACE" not in os.environ:
            kwargs["kv_cache_memory_bytes"] = 1 << 30
        kwargs.update(dict(self.extra))
        return kwargs

    def with_changes(self, changes) -> "EngineConfig":
        """This configuration with some engine arguments changed ((name, value) pairs; None removes an
        ``extra`` argument, so vLLM's default applies)."""
        direct = {f.name for f in fields(self)} - {"model", "extra"}
        extra = dict(self.extra)
        updates = {}
        for name, value in changes:
            if name in direct:
                updates[name] = value
            elif value is None:
                extra.pop(name, None)
            else:
                extra[name] = value
        return replace(self, **updates, extra=tuple(sorted(extra.items())))

    def with_model(self, model: str) -> "EngineConfig":
        """These settings on another model; the vision demo takes five images a prompt unless a limit
        is set (a text-only model ignores the limit)."""
        config = replace(self, model=model)
        if model == DEMO_VL_MODEL and self.option("limit_mm_per_prompt") is None:
            config = config.with_changes(DEMO_VL_SETTINGS)
        return config

    @property
    def schedules_by_priority(self) -> bool:
        return (self.option("scheduling_policy") or self.scheduling_policy) == "priority"
