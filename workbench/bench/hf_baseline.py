"""(c) The "PyTorch native" baseline: Hugging Face transformers ``generate``, no paging, no batching
across requests beyond one padded batch. Time-boxed to a fixed number of new tokens, given as rates."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from workbench.engine.metrics import tokens_per_s

BATCH_SIZES = (1, 4, 8, 16, 32, 64, 128, 256)


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


def run_hf_baseline(folder: str, workload, vocab: int, progress=lambda label, fraction: None) -> list[HFResult]:
    """Batch 1, then growing batches up to the workload's size until one fails to fit or the time box ends."""
    import torch

    model, device = load_hf_model(folder)
    _generate(model, device, 1, min(16, workload.prompt_len), 2, vocab)  # warm-up
    results: list[HFResult] = []
    spent = 0.0
    sizes = [b for b in BATCH_SIZES if b <= workload.num_requests]
    for i, batch in enumerate(sizes):
        progress(f"(c) generate at batch {batch}", 0.75 + 0.25 * i / len(sizes))
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        try:
            elapsed, ttft, gaps = _generate(model, device, batch, workload.prompt_len, workload.hf_tokens, vocab)
        except torch.cuda.OutOfMemoryError as exc:
            results.append(HFResult(batch, workload.hf_tokens, 0.0, 0.0, None, f"out of memory: {exc}"[:200]))
            break
        results.append(HFResult(batch, workload.hf_tokens, elapsed, ttft, _peak_memory(device), gaps_s=gaps))
        spent += elapsed
        if spent > workload.hf_time_box_s:
            break
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return results


def best_batch(results: list[HFResult]) -> HFResult | None:
    ok = [r for r in results if not r.error]
    return max(ok, key=lambda r: r.tokens_per_s) if ok else None
