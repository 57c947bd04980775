"""(c) The "PyTorch native" baseline: Hugging Face transformers ``generate``, no paging, no batching
across requests beyond one padded batch. Time-boxed to a fixed number of new tokens, given as rates."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

BATCH_SIZES = (1, 4, 8, 16, 32, 64, 128, 256)


@dataclass(frozen=True)
class HFResult:
    batch_size: int
    new_tokens: int
    elapsed_s: float
    ttft_s: float
    peak_memory_bytes: int | None
    error: str = ""

    @property
    def tokens_per_s(self) -> float:
        return self.batch_size * self.new_tokens / self.elapsed_s if self.elapsed_s and not self.error else 0.0

    @property
    def itl_s(self) -> float:
        return (self.elapsed_s - self.ttft_s) / max(1, self.new_tokens - 1)


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


def _generate(model, device: str, batch: int, prompt_len: int, new_tokens: int, vocab: int) -> float:
    import torch

    input_ids = torch.randint(10, vocab - 10, (batch, prompt_len), device=device)
    if device == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    with torch.inference_mode():
        model.generate(input_ids, attention_mask=torch.ones_like(input_ids), max_new_tokens=new_tokens,
                       min_new_tokens=new_tokens, do_sample=False, pad_token_id=0)
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - started


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
            ttft = _generate(model, device, batch, workload.prompt_len, 1, vocab)
            elapsed = _generate(model, device, batch, workload.prompt_len, workload.hf_tokens, vocab)
        except torch.cuda.OutOfMemoryError as exc:
            results.append(HFResult(batch, workload.hf_tokens, 0.0, 0.0, None, f"out of memory: {exc}"[:200]))
            break
        results.append(HFResult(batch, workload.hf_tokens, elapsed, ttft, _peak_memory(device)))
        spent += elapsed + ttft
        if spent > workload.hf_time_box_s:
            break
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return results


def best_batch(results: list[HFResult]) -> HFResult | None:
    ok = [r for r in results if not r.error]
    return max(ok, key=lambda r: r.tokens_per_s) if ok else None
