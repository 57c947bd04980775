"""Why an engine did not start, in vLLM's own words, then what to do about it.

The message a user sees has three parts: a headline, the root cause as vLLM's processes logged it
(the exception and the last error lines, wherever they were raised), and the workbench's advice
where it recognises the cause. The full log stays one click away (Engine > Show engine log).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from workbench.engine.engine_log import RootCause, root_cause
from workbench.engine.run_folder import PREFIX as RUN_FOLDER_PREFIX
from workbench.engine.weights_check import find_damaged_weights

GENERIC_ADVICE = "Check the model and the engine settings, and the engine log for the whole story."


@dataclass(frozen=True)
class FailureContext:
    """What the advice may look at: vLLM's words, and the start that failed."""

    said: str  # the root cause and the error lines, joined
    traceback: str  # the frames above the root cause ("" when unknown)
    model_path: str
    max_model_len: int
    gpu_memory_utilization: float | None = None  # as the failed start asked (None: vLLM's 0.9)


Change = tuple[tuple[str, object], ...]  # engine arguments to set for a retry (None: leave at vLLM's default)


@dataclass(frozen=True)
class Advice:
    headline: str
    what_to_do: str
    retry: Change = ()  # the change that fixes it, offered as one click


def retry_label(change: Change) -> str:
    return "Retry with " + ", ".join(f"{k}={'auto' if v is None else v}" for k, v in change)


_KV_TOO_SMALL = re.compile(r"max seq len \((\d+)\).*?estimated maximum model length is (\d+)", re.S)
_KV_SIZES = re.compile(r"\(([\d.]+) GiB KV cache is needed.*?available KV cache memory \(([\d.]+) GiB\)", re.S)
_NO_QUANT_FILES = re.compile(r"Cannot find the config file for (\w+)|Quantization method specified in the model "
                             r"config \((\w+)\) does not match the quantization method specified in the "
                             r"`quantization` argument \((\w+)\)", re.S)
_TP_TOO_LARGE = re.compile(r"World size \((\d+)\) is larger than the number of available GPUs \((\d+)\)")
_FREE_BELOW_UTIL = re.compile(r"Free memory on device.*?\(([\d.]+)/([\d.]+) GiB\) on startup is less than desired "
                              r"GPU memory utilization \(([\d.]+), ([\d.]+) GiB\)", re.S)
_SHAPE_MISMATCH = re.compile(r"Attempted to load weight \((torch\.Size\(\[[\d, ]*\]\))\) into parameter "
                             r"\((torch\.Size\(\[[\d, ]*\]\))\)|size mismatch", re.S)
# vLLM's CPU attention (v1/attention/backends/cpu_attn.py, _get_attn_isa) refuses fp8 KV with these words.
_FP8_KV_ON_CPU = re.compile(r"FP8 KV cache on CPU requires x86 with AVX-512 or AMX"
                            r"|FP8 KV cache requires head_size divisible by 32 on CPU")
_IPC_PATH_TOO_LONG = re.compile(r'ipc path "([^"]+)" is longer than \d+ characters')
_NOT_INITIALIZED = re.compile(r"Following weights were not initialized from checkpoint: (\{.*?\})", re.S)


def _damaged_weights(ctx: FailureContext) -> Advice | None:
    damaged = find_damaged_weights(Path(ctx.model_path)) if ctx.model_path else []
    if not damaged:
        return None
    first = damaged[0]
    others = f" ({len(damaged) - 1} more file(s) are damaged too)" if len(damaged) > 1 else ""
    return Advice(f"the weights file {first.path} is damaged: {first.problem}{others}",
                  f"Download {first.path.name} again (an interrupted download leaves such a file), "
                  "or choose another model folder.")


def _kv_too_small(ctx: FailureContext) -> Advice | None:
    match = _KV_TOO_SMALL.search(ctx.said)
    if not (match or "KV cache is needed" in ctx.said or "No available memory for the cache blocks" in ctx.said):
        return None
    need, fits = (int(match.group(1)), int(match.group(2))) if match else (ctx.max_model_len, 0)
    sizes = _KV_SIZES.search(ctx.said)
    cost = f" needs {sizes.group(1)} GiB of KV cache, {sizes.group(2)} GiB is available" if sizes else ""
    use = fits // 32 * 32
    retry = (("max_model_len", use),) if use >= 32 else ()
    return Advice(f"the KV cache is too small for max_model_len={need}"
                  + (f" (it fits about {fits} tokens)" if fits else ""),
                  f"max_model_len {need}{cost}: use {use if use >= 32 else 'a shorter max_model_len'}, or fp8 KV "
                  "cache (kv_cache_dtype=fp8), or give the KV cache more memory (KV cache size on CPU, "
                  "gpu_memory_utilization on a GPU).", retry)


def _fp8_kv_cache_on_cpu(ctx: FailureContext) -> Advice | None:
    match = _FP8_KV_ON_CPU.search(ctx.said)
    if not match:
        return None
    if "head_size" in match.group(0):
        return Advice("vLLM's CPU build keeps an fp8 KV cache only for a head size divisible by 32, and this "
                      "model's is not", "Use vLLM's default KV cache dtype (kv_cache_dtype=auto: the model's "
                      "own dtype, twice the bytes of fp8), or a model whose head size is a multiple of 32.",
                      (("kv_cache_dtype", None),))
    return Advice("this CPU cannot hold an fp8 KV cache: vLLM's CPU build needs x86 with AVX-512 or AMX for one",
                  "Use vLLM's default KV cache dtype (kv_cache_dtype=auto: the model's own dtype, twice the bytes "
                  "of fp8), or run on a CPU with AVX-512 or AMX (Intel Xeon since Skylake-SP, AMD EPYC since "
                  "Zen 4) or on a GPU. In a preset, give it per platform: "
                  'kv_cache_dtype = { cpu = "auto", cpu_avx512 = "fp8" }.', (("kv_cache_dtype", None),))


def _free_memory_below_utilization(ctx: FailureContext) -> Advice | None:
    match = _FREE_BELOW_UTIL.search(ctx.said)
    if not match:
        return None
    free, total, util, wanted = match.groups()
    fits = max(0.05, float(free) / float(total) - 0.02)
    return Advice(f"only {free} of {total} GiB of GPU memory are free, and gpu_memory_utilization={util} asks "
                  f"for {wanted} GiB",
                  f"Other programs hold GPU memory (nvidia-smi lists them). Close them, or lower "
                  f"gpu_memory_utilization to {fits:.2f} or less.", (("gpu_memory_utilization", round(fits, 2)),))


def _cuda_out_of_memory(ctx: FailureContext) -> Advice | None:
    if "out of memory" not in ctx.said.lower():
        return None
    lower = round(max(0.1, (ctx.gpu_memory_utilization or 0.9) - 0.1), 2)
    return Advice("the GPU ran out of memory while the engine started",
                  f"Lower gpu_memory_utilization (to {lower}), max_model_len or max_num_seqs, close other programs "
                  "that use the GPU, or choose a smaller (or quantized) model.", (("gpu_memory_utilization", lower),))


def _quantization_missing(ctx: FailureContext) -> Advice | None:
    match = _NO_QUANT_FILES.search(ctx.said)
    if not match:
        return None
    asked = match.group(1) or match.group(3)
    has = f"its files are quantized with {match.group(2)}" if match.group(2) and match.group(2) != "None" \
        else "its files are not quantized"
    return Advice(f"the model lacks the requested quantization {asked} ({has})",
                  "Leave quantization to the model (quantization=auto: vLLM reads it from config.json), or choose "
                  f"a model whose files are quantized with {asked}.", (("quantization", None),))


def _tensor_parallel_too_large(ctx: FailureContext) -> Advice | None:
    match = _TP_TOO_LARGE.search(ctx.said)
    if not match:
        return None
    asked, gpus = int(match.group(1)), int(match.group(2))
    return Advice(f"tensor parallelism asks for {asked} GPUs, and this machine has {gpus}",
                  f"Use tensor_parallel_size={max(1, gpus)}, or run on a machine with {asked} GPUs.",
                  (("tensor_parallel_size", max(1, gpus)),))


def _cuda_fork(ctx: FailureContext) -> Advice | None:
    if "Cannot re-initialize CUDA in forked subprocess" not in ctx.said:
        return None
    return Advice("vLLM's engine process was forked from a process that already used CUDA",
                  "The workbench starts engine processes with 'spawn'; something in the environment asks for "
                  "'fork' (VLLM_WORKER_MULTIPROC_METHOD=fork). Unset it and restart the engine.")


def _socket_path_too_long(ctx: FailureContext) -> Advice | None:
    match = _IPC_PATH_TOO_LONG.search(ctx.said)
    if not match:
        return None
    folder = Path(match.group(1)).parent
    if folder.name.startswith(RUN_FOLDER_PREFIX):  # the engine's run folder: the temp folder holds it
        folder = folder.parent
    return Advice("the paths of vLLM's socket files are longer than a socket's path may be (107 bytes)",
                  f"vLLM makes its socket files in {folder}. Set TMPDIR (or VLLM_RPC_BASE_PATH) to a short "
                  "folder, such as /tmp, and start the app again.")


def _weights_do_not_match_config(ctx: FailureContext) -> Advice | None:
    match = _SHAPE_MISMATCH.search(ctx.said)
    if not match:
        return None
    shapes = f" (a tensor of {match.group(1)} for a parameter of {match.group(2)})" if match.group(1) else ""
    return Advice(f"the weights do not match the model's config.json{shapes}",
                  f"config.json and the weights in {ctx.model_path} come from different models or revisions. "
                  "Download the model again, or restore its config.json.")


def _weights_missing_tensors(ctx: FailureContext) -> Advice | None:
    match = _NOT_INITIALIZED.search(ctx.said)
    if not match:
        return None
    return Advice(f"the weights lack tensors the model needs: {match.group(1)[:200]}",
                  f"The weights in {ctx.model_path} are incomplete or belong to another model. "
                  "Download the model again.")


def _loading_weights_failed(ctx: FailureContext) -> Advice | None:
    if "load_weights" not in ctx.traceback and "weight_loader" not in ctx.traceback:
        return None
    return Advice(f"loading the weights from {ctx.model_path} failed",
                  "The weights may not match the model's config.json (files from different models or "
                  "revisions), or be incomplete. Download the model again, or restore its config.json.")


# In order: a named damaged file explains most loader errors, so it comes first; the loader's
# generic failure comes last, after the rules that say more.
RULES: tuple[Callable[[FailureContext], Advice | None], ...] = (
    _damaged_weights, _fp8_kv_cache_on_cpu, _kv_too_small, _free_memory_below_utilization,
    _quantization_missing, _tensor_parallel_too_large, _cuda_out_of_memory, _cuda_fork, _socket_path_too_long,
    _weights_do_not_match_config, _weights_missing_tensors, _loading_weights_failed,
)


def advise(ctx: FailureContext) -> Advice | None:
    for rule in RULES:
        if advice := rule(ctx):
            return advice
    return None


def explain_start_failure(exc: BaseException, log_text: str, model_path: str, max_model_len: int,
                          phase_error: str | None = None, gpu_memory_utilization: float | None = None
                          ) -> tuple[str, Change]:
    """One message: what went wrong (vLLM's own words, from whichever process said them) and what to do;
    and the change that fixes it, where one does."""
    cause = root_cause(log_text)
    said = vllm_said(cause, phase_error, exc)
    advice = advise(FailureContext(said, cause.traceback if cause else "", model_path, max_model_len,
                                   gpu_memory_utilization))
    headline = f"The engine did not start: {advice.headline}." if advice else "The engine did not start."
    what_to_do = advice.what_to_do if advice else GENERIC_ADVICE
    return f"{headline} {what_to_do}\n\n{said}", advice.retry if advice else ()


def vllm_said(cause: RootCause | None, phase_error: str | None, exc: BaseException) -> str:
    """vLLM's words: the root cause from the engine log, else what the start hooks or the client saw."""
    if cause is None or not (cause.exception or cause.error_lines):
        return f"vLLM said: {phase_error or f'{type(exc).__name__}: {exc}'}"
    where = f" (in vLLM's {cause.process} process)" if cause.process else ""
    parts = [f"vLLM said{where}: {cause.exception or cause.error_lines[-1]}"]
    errors = [line for line in cause.error_lines if line not in cause.exception]
    if errors:
        parts.append("Last errors logged:\n" + "\n".join(f"  {line}" for line in errors))
    return "\n".join(parts)
