"""A preset made concrete for this machine and model: the ``EngineConfig`` it starts, the sampling
settings it gives new conversations, and each value as written beside the value it resolved to."""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

from workbench.engine.sampling import SamplingSettings
from workbench.engine.spec import EngineConfig
from workbench.presets.checks import AUTO, MODEL_MAX, for_platform, parse_size
from workbench.presets.document import PresetDocument, is_platform_table
from workbench.presets.machine import CPU_AVX512, Machine
from workbench.presets.model_facts import QUANTIZE_AT_LOAD, ModelFacts
from workbench.presets.trust import is_trusted

CPU_KV_BYTES = 1 << 30  # the CPU KV budget when a preset says auto: host memory is not a KV budget
CONFIG_FIELDS = {f.name for f in fields(EngineConfig)} - {"model", "extra", "usage_context"}


@dataclass(frozen=True)
class ResolvedValue:
    key: str
    written: object  # as the preset file has it
    value: object  # as it applies here (None: vLLM's default)
    note: str = ""  # why it differs from what is written


@dataclass(frozen=True)
class ResolvedPreset:
    name: str
    config: EngineConfig
    sampling: SamplingSettings
    values: tuple[ResolvedValue, ...]
    needs_trust: bool = False  # the preset asks to run the model's own code, and the user has not allowed it


def platform_note(written: dict, machine: Machine) -> str:
    """Which key of a per-platform value applies here; where a CPU's more specific one does not, why."""
    key = machine.table_key(written)
    if key == "cpu" and CPU_AVX512 in written:
        return f"the cpu value: {machine.cpu.describe()}; the {CPU_AVX512} value ({written[CPU_AVX512]}) is for " \
               "CPUs with them"
    return f"the {key} value"


def _resolve_one(key: str, written, machine: Machine, model: ModelFacts | None) -> ResolvedValue:
    here = for_platform(written, machine.platform_keys)
    value = parse_size(here) if key.endswith("_bytes") else here
    note = platform_note(written, machine) if is_platform_table(written) else ""
    if key == "max_model_len" and value in (AUTO, MODEL_MAX):
        return ResolvedValue(key, written, model.max_position_embeddings if model else None,
                             "the model's context (config.json)")
    if key == "gpu_memory_utilization" and machine.on_cpu:
        return ResolvedValue(key, written, None, "not used on CPU: the KV budget is kv_cache_memory_bytes")
    if key == "kv_cache_memory_bytes" and machine.on_cpu and value == AUTO:
        return ResolvedValue(key, written, CPU_KV_BYTES, "on CPU the KV budget is host memory; 1 GiB")
    if key == "quantization" and value in QUANTIZE_AT_LOAD and model is not None and model.quant_method:
        return ResolvedValue(key, written, None, f"the model's files are quantized with {model.quant_method}: "
                                                 "kept as they are")
    if key == "block_size" and value == AUTO:
        return ResolvedValue(key, written, 32 if machine.on_cpu else 16, "the platform's block size")
    if value == AUTO:
        return ResolvedValue(key, written, None, f"vLLM's default; {note}" if note else "vLLM's default")
    return ResolvedValue(key, written, value, note)


def resolve_preset(document: PresetDocument, base: EngineConfig, machine: Machine,
                   model: ModelFacts | None) -> ResolvedPreset:
    """The preset applied to ``base`` (which gives the model and the app's own settings, such as
    priority scheduling); values the preset leaves out take EngineConfig's defaults."""
    values = [_resolve_one(k, v, machine, model) for k, v in document.engine().items()]
    if machine.on_cpu and "kv_cache_memory_bytes" not in document.engine():
        values.append(ResolvedValue("kv_cache_memory_bytes", None, CPU_KV_BYTES,
                                    "on CPU the KV budget is host memory; 1 GiB"))
    needs_trust = False
    direct, extra = {}, {}
    for item in values:
        if item.key == "trust_remote_code" and item.value and not is_trusted(base.model):
            needs_trust = True
            continue
        if item.value is not None:
            (direct if item.key in CONFIG_FIELDS else extra)[item.key] = item.value
    config = replace(EngineConfig(model=base.model, scheduling_policy=base.scheduling_policy), **direct,
                     extra=tuple(sorted(extra.items())))
    sampling = replace(SamplingSettings(), **{k: (None if k == "seed" and v < 0 else v)
                                              for k, v in document.sampling().items()})
    return ResolvedPreset(document.name, config, sampling, tuple(values), needs_trust)


def config_rows(config: EngineConfig, on_cpu: bool) -> dict[str, object]:
    """The engine arguments a configuration gives vLLM, by name (for the diff against a preset)."""
    rows = config.engine_kwargs(on_cpu)
    rows.pop("model", None)
    rows.pop("disable_log_stats", None)
    return rows


def diff_configs(running: EngineConfig, chosen: EngineConfig, on_cpu: bool) -> list[tuple[str, object, object]]:
    """(name, running value, chosen value) for each engine argument that differs."""
    old, new = config_rows(running, on_cpu), config_rows(chosen, on_cpu)
    return [(k, old.get(k), new.get(k)) for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
