"""Per-request figures, defined once: TTFT, decode speed, prompt and cached-prompt tokens.

They come from vLLM's own request metrics (``RequestOutput.metrics``, filled when stats logging
is on); where a field is missing the client's own clock stands in, and the figure says so.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RequestFigures:
    """What the chat pane shows under a reply and what the benchmarks aggregate."""

    prompt_tokens: int
    cached_prompt_tokens: int
    output_tokens: int
    ttft_s: float | None  # arrival to first token, vLLM's first_token_latency
    decode_tokens_per_s: float | None  # tokens after the first / time from first to last token
    source: str = "vllm"  # "vllm", or "client" when vLLM gave no timestamps

    @property
    def cache_hit_fraction(self) -> float:
        return self.cached_prompt_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


def decode_rate(num_tokens: int, first_s: float, last_s: float) -> float | None:
    """Tokens after the first, divided by the time between first and last token."""
    if num_tokens < 2 or last_s <= first_s:
        return None
    return (num_tokens - 1) / (last_s - first_s)


def figures_from_output(output, num_output_tokens: int, client_times: tuple[float, float, float]) -> RequestFigures:
    """``output`` is the final ``RequestOutput``; ``client_times`` = (submitted, first, last) on
    the client's monotonic clock, used only when vLLM recorded no timestamps."""
    stats = getattr(output, "metrics", None)
    ttft = getattr(stats, "first_token_latency", 0.0) or 0.0
    first_ts = getattr(stats, "first_token_ts", 0.0) or 0.0
    last_ts = getattr(stats, "last_token_ts", 0.0) or 0.0
    num_generated = getattr(stats, "num_generation_tokens", 0) or num_output_tokens
    source = "vllm"
    if ttft <= 0 or first_ts <= 0:
        submitted, first, last = client_times
        ttft, first_ts, last_ts, source = first - submitted, first, last, "client"
    return RequestFigures(
        prompt_tokens=len(output.prompt_token_ids or ()),
        cached_prompt_tokens=output.num_cached_tokens or 0,
        output_tokens=num_generated,
        ttft_s=ttft if ttft > 0 else None,
        decode_tokens_per_s=decode_rate(num_generated, first_ts, last_ts),
        source=source,
    )
