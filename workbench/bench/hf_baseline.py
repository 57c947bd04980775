"""(c) The "PyTorch native" baseline: Hugging Face transformers ``generate``, no paging, no batching
across requests beyond one padded batch.

Like for like with (a): every batch size runs the workload's prompt and output lengths in full. The
time box limits which batch sizes are tried, never the tokens: batch 1, then doubling up to the
workload's number of requests, each skipped when its run (estimated from the size before, as if time
grew with the batch) would end past the box, or when its KV cache would not fit the memory left.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from workbench.engine.metrics import tokens_per_s


@dataclass(frozen=True)
class HFResult:
    batch_size: int
    new_tokens: int
    elapsed_s: float
    ttft_s: float
    peak_memory_bytes: int | None
    error: str = ""
    gaps_s: tuple[float, ...] = ()  # between consecutive new tokens (the batch's tokens arrive together)

    @property
    def tokens_per_s(self) -> float:
        return 0.0 if self.error else tokens_per_s(self.batch_size * self.new_tokens, self.elapsed_s)


@dataclass(frozen=True)
class HFSkipped:
    batch_size: int
    reason: str


@dataclass(frozen=True)
class HFBaseline:
    """The batch sizes run (one failed run, out of memory, ends the list) and those left out, with why."""

    runs: tuple[HFResult, ...] = ()
    skipped: tuple[HFSkipped, ...] = ()

    def best(self) -> HFResult | None:
        ok = [r for r in self.runs if not r.error]
        return max(ok, key=lambda r: r.tokens_per_s) if ok else None

    def batch_one(self) -> HFResult | None:
        return next((r for r in self.runs if r.batch_size == 1 and not r.error), None)


def batch_sizes(num_requests: int) -> list[int]:
    """1, 2, 4, ... below ``num_requests``, then ``num_requests`` itself."""
    sizes = [1]
    while sizes[-1] * 2 < num_requests:
        sizes.append(sizes[-1] * 2)
    return sizes + [num_requests] if num_requests > 1 else sizes


def load_hf_model(folder: str):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    if any(Path(folder).glob("*.safetensors")):
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype)
        return model.to(device).eval(), device
    # A config-only shape: random weights, as vLLM's load_format="dummy", created on the device
    # itself (initialising 7B parameters on the CPU first took minutes on the H200's host).
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(folder), dtype=dtype)
    return model.eval(), device


class _TokenClock:
    """A stopping criterion that never stops: it notes when each new token exists, so TTFT and the
    gaps come from the same ``generate`` call as the rate."""

    def __init__(self, device: str):
        self.device = device
        self.stamps: list[float] = []

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        if self.device == "cuda":
            torch.cuda.synchronize()
        self.stamps.append(time.perf_counter())
        return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)


def _generate(model, device: str, batch: int, prompt_len: int, new_tokens: int,
              vocab: int) -> tuple[float, float, tuple[float, ...]]:
    """Seconds for the whole call, to the first new token, and between new tokens."""
    import torch
    from transformers import StoppingCriteriaList

    input_ids = torch.randint(10, vocab - 10, (batch, prompt_len), device=device)
    clock = _TokenClock(device)
    if device == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    with torch.inference_mode():
        model.generate(input_ids, attention_mask=torch.ones_like(input_ids), max_new_tokens=new_tokens,
                       min_new_tokens=new_tokens, do_sample=False, pad_token_id=0,
                       stopping_criteria=StoppingCriteriaList([clock]))
    if device == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - started
    stamps = clock.stamps
    gaps = tuple(b - a for a, b in zip(stamps, stamps[1:]))
    return elapsed, (stamps[0] - started) if stamps else elapsed, gaps


def _peak_memory(device: str) -> int | None:
    import torch

    if device == "cuda":
        return torch.cuda.max_memory_allocated()
    import psutil
    return psutil.Process().memory_info().rss


def _kv_cache_bytes(model, batch: int, num_tokens: int) -> int:
    """The KV cache ``generate`` builds for ``batch`` sequences of ``num_tokens`` (keys and values)."""
    config = model.config
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    per_token = 2 * config.num_hidden_layers * kv_heads * head_dim * next(model.parameters()).element_size()
    return per_token * batch * num_tokens


def time_box_reason(batch: int, last: HFResult | None, spent_s: float, time_box_s: float) -> str:
    """Why ``batch`` is skipped for time (empty: it fits): its run is estimated from the size before
    as if time grew with the batch, which it does at most. Batch 1 always runs."""
    if last is None:
        return ""
    estimate_s = last.elapsed_s * batch / last.batch_size
    if spent_s + estimate_s <= time_box_s:
        return ""
    return (f"about {estimate_s:.0f} s (batch {last.batch_size} took {last.elapsed_s:.1f} s) would end past "
            f"the {time_box_s:.0f} s time box ({spent_s:.0f} s spent)")


def memory_reason(model, batch: int, num_tokens: int) -> str:
    """Why ``batch`` is skipped on a CPU for memory (empty: it fits). A GPU says so itself
    (OutOfMemoryError); a CPU would swap instead."""
    import psutil

    need = _kv_cache_bytes(model, batch, num_tokens)
    free = psutil.virtual_memory().available
    if need > free // 2:
        return f"its KV cache needs {need / 2**30:.1f} GiB, more than half the {free / 2**30:.1f} GiB free"
    return ""


def run_hf_baseline(folder: str, workload, vocab: int, progress=lambda label, fraction: None) -> HFBaseline:
    """Batch 1, then doubling up to the workload's number of requests, each at the full output length,
    until a batch size would pass the time box or does not fit (see the module's docstring)."""
    import torch

    model, device = load_hf_model(folder)
    _generate(model, device, 1, min(16, workload.prompt_len), 2, vocab)  # warm-up
    runs: list[HFResult] = []
    skipped: list[HFSkipped] = []
    spent = 0.0
    sizes = batch_sizes(workload.num_requests)
    new_tokens = workload.output_len
    for i, batch in enumerate(sizes):
        reason = time_box_reason(batch, runs[-1] if runs else None, spent, workload.hf_time_box_s)
        if not reason and device == "cpu":
            reason = memory_reason(model, batch, workload.prompt_len + workload.output_len)
        if reason:
            skipped = [HFSkipped(batch, reason)] + [HFSkipped(b, f"after batch {batch}") for b in sizes[i + 1:]]
            break
        progress(f"(c) generate at batch {batch}", 0.75 + 0.25 * i / len(sizes))
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        try:
            elapsed, ttft, gaps = _generate(model, device, batch, workload.prompt_len, new_tokens, vocab)
        except torch.cuda.OutOfMemoryError as exc:
            runs.append(HFResult(batch, new_tokens, 0.0, 0.0, None, f"out of memory: {exc}"[:200]))
            skipped = [HFSkipped(b, f"after batch {batch} ran out of memory") for b in sizes[i + 1:]]
            break
        runs.append(HFResult(batch, new_tokens, elapsed, ttft, _peak_memory(device), gaps_s=gaps))
        spent += elapsed
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return HFBaseline(tuple(runs), tuple(skipped))
