"""The search space vLLM's engine arguments offer, by version and platform, with vLLM's own names."""
from __future__ import annotations

from workbench.tune.values import SearchParameter, SearchSpace

SPECULATION_OFF = "off"
QUANTIZATION_OFF = "none"  # the model's own weights (vLLM's default: what its config says)


def _version_at_least(version: str, wanted: tuple[int, int]) -> bool:
    parts = []
    for piece in version.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts) >= wanted


def default_space(vllm_version: str, platform: str) -> SearchSpace:
    """The parameters a search varies by default on ``platform`` ("cuda" or "cpu") for ``vllm_version``.
    Those that may change the model's outputs (fp8 weights, fp8 KV cache, speculative decoding) are present but not
    enabled: the user ticks them."""
    on_cpu = platform == "cpu"
    params = [
        SearchParameter("max_num_seqs", "int", 4 if on_cpu else 16, 128 if on_cpu else 512, log=True),
        SearchParameter("max_num_batched_tokens", "int", 256 if on_cpu else 1024, 8192 if on_cpu else 32768,
                        log=True, note="a prompt longer than this needs chunked prefill"),
        SearchParameter("enable_chunked_prefill", "bool"),
        SearchParameter("block_size", "choice", choices=(32, 64, 128) if on_cpu else (16, 32, 64),
                        note="CPU attention needs a multiple of 32" if on_cpu else ""),
    ]
    if not on_cpu:
        params += [
            SearchParameter("gpu_memory_utilization", "float", 0.80, 0.95, step=0.05),
            SearchParameter("async_scheduling", "bool"),
            SearchParameter("max_cudagraph_capture_size", "choice", choices=(128, 256, 512),
                            note="the largest batch captured as a CUDA graph"),
            SearchParameter("optimization_level", "choice", choices=(0, 1, 2),
                            note="vLLM's -O: 0 no compilation or CUDA graphs, 1 piecewise CUDA graphs, 2 full and "
                                 "piecewise (its default)"),
            SearchParameter("kv_cache_dtype", "choice", choices=("auto", "fp8"), changes_outputs=True,
                            enabled=False),
            SearchParameter("quantization", "choice", choices=(QUANTIZATION_OFF, "fp8"), changes_outputs=True,
                            enabled=False, note="fp8 weights, quantized as the model loads"),
        ]
    params.append(SearchParameter("speculative_config", "choice", choices=(SPECULATION_OFF, "ngram:3", "ngram:5"),
                                  changes_outputs=True, enabled=False,
                                  note="ngram speculative decoding, its number of speculative tokens"))
    if _version_at_least(vllm_version, (0, 30)):
        params.append(SearchParameter("performance_mode", "choice", choices=("balanced", "throughput")))
    return SearchSpace(tuple(params))


def gpu_only(vllm_version: str) -> tuple[str, ...]:
    """The parameters a search offers on a GPU and not on a CPU, by vLLM's names (the tab lists them on a CPU,
    so that none of them is missing unsaid)."""
    on_cpu = {p.name for p in default_space(vllm_version, "cpu").parameters}
    return tuple(p.name for p in default_space(vllm_version, "cuda").parameters if p.name not in on_cpu)


def chunking_needed(batched: int | None, max_model_len: int | None) -> bool:
    """Whether chunked prefill must stay on: fewer batched tokens than a full-length prompt (off, vLLM refuses)."""
    return batched is not None and max_model_len is not None and batched < max_model_len


def engine_value(name: str, value):
    """A parameter's value as vLLM's engine argument takes it (``"ngram:3"`` becomes the
    ``speculative_config`` dict; ``"off"`` and quantization's ``"none"`` None, vLLM's default)."""
    if name == "quantization":
        return None if value in (None, QUANTIZATION_OFF) else value
    if name != "speculative_config":
        return value
    if value in (None, SPECULATION_OFF):
        return None
    method, _, num = str(value).partition(":")
    return {"method": method, "num_speculative_tokens": int(num or 3), "prompt_lookup_max": 4}
