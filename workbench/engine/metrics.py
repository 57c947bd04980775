"""Figures defined once: TTFT, inter-token gaps, tokens/s, percentiles; the figures of one request.

The chat pane's per-request figures come from vLLM's own request metrics (``RequestOutput.metrics``,
filled when stats logging is on); where a field is missing the client's own clock stands in, and the
figure says so. The benchmarks' figures come from the client's clock as outputs arrive.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Iterable

import numpy as np


@dataclass(frozen=True)
class RequestFigures:
    """What the chat pane shows under a reply and what the benchmarks aggregate."""

    prompt_tokens: int
    cached_prompt_tokens: int | None  # None: the backend cannot tell (a server that does not report it)
    output_tokens: int
    ttft_s: float | None  # arrival to first token, vLLM's first_token_latency
    decode_tokens_per_s: float | None  # tokens after the first / time from first to last token
    source: str = "vllm"  # "vllm", or "client" when vLLM gave no timestamps
    queue_s: float | None = None  # waiting in the scheduler's queue: scheduled less queued (vLLM's clock)
    e2e_s: float | None = None  # arrival to the final output, as vLLM's e2e_latency
    num_image_tokens: int = 0  # prompt tokens of the request's images (their placeholder ranges)

    @property
    def itl_s(self) -> float | None:
        """Mean inter-token latency: the inverse of the decode speed; None for fewer than two tokens."""
        return 1.0 / self.decode_tokens_per_s if self.decode_tokens_per_s else None

    @property
    def cache_hit_fraction(self) -> float | None:
        if self.cached_prompt_tokens is None:
            return None
        return self.cached_prompt_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


def decode_tokens_per_s(num_tokens: int, first_s: float, last_s: float) -> float | None:
    """One request's decode speed from its token count and first and last token times: the tokens
    after the first, divided by the time between the first token and the last. None for fewer than
    two tokens (no decode to time)."""
    if num_tokens < 2 or last_s <= first_s:
        return None
    return (num_tokens - 1) / (last_s - first_s)


def tokens_per_s(num_tokens: int, elapsed_s: float) -> float:
    """Throughput: tokens over the wall-clock seconds they took; 0.0 when no time was measured."""
    return num_tokens / elapsed_s if elapsed_s else 0.0


def gap_tokens_per_s(gaps_s: Iterable[float]) -> float:
    """The speed implied by inter-token gaps: 1 / their mean, in tokens per second; 0.0 for no gaps.

    Over one request's gaps (as :func:`timings_from_arrivals` gives them) this is its decode speed on
    the client's clock: the tokens after its first arrival, divided by the time from that arrival to
    the last. Unlike :func:`decode_tokens_per_s` it counts from the first *arrival*, which may hold
    more than one token; over several requests' gaps pooled, it weighs each request by its tokens."""
    gaps = list(gaps_s)
    return 1.0 / statistics.fmean(gaps) if gaps else 0.0


def timings_from_arrivals(submitted: float, arrivals: list[tuple[float, int]]) -> tuple[float | None, list[float]]:
    """TTFT and inter-token gaps of one request from its (arrival time, new tokens) pairs, in seconds.

    TTFT is the first arrival less ``submitted``. Each later arrival of ``count`` tokens adds
    ``count`` equal gaps that share the time since the arrival before it. (None, []) for no arrivals."""
    if not arrivals:
        return None, []
    gaps = []
    for (prev, _), (now, count) in zip(arrivals, arrivals[1:]):
        gaps.extend([(now - prev) / count] * count)
    return arrivals[0][0] - submitted, gaps


def percentile(values: Iterable[float], q: float) -> float:
    """The ``q``-th percentile (0 to 100) of ``values``, as one of the values (no interpolation).

    Nearest rank on a rounded index: the sorted values' element at ``round(q / 100 * (n - 1))``,
    rounded by Python's ``round`` (halves to even: p50 of four values is the third, of six the
    third too). p0 is the minimum, p100 the maximum; NaN for no values."""
    ordered = np.sort(values) if isinstance(values, np.ndarray) else sorted(values)
    if not len(ordered):
        return float("nan")
    value = ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]
    return float(value) if isinstance(ordered, np.ndarray) else value


def figures_from_output(output, num_output_tokens: int, client_times: tuple[float, float, float]) -> RequestFigures:
    """``output`` is the final ``RequestOutput``; ``client_times`` = (submitted, first, last) on
    the client's monotonic clock, used only when vLLM recorded no timestamps."""
    stats = getattr(output, "metrics", None)
    ttft = getattr(stats, "first_token_latency", 0.0) or 0.0
    first_ts = getattr(stats, "first_token_ts", 0.0) or 0.0
    last_ts = getattr(stats, "last_token_ts", 0.0) or 0.0
    num_generated = getattr(stats, "num_generation_tokens", 0) or num_output_tokens
    queued_ts, scheduled_ts = getattr(stats, "queued_ts", 0.0) or 0.0, getattr(stats, "scheduled_ts", 0.0) or 0.0
    arrival = getattr(stats, "arrival_time", 0.0) or 0.0  # wall clock, as vLLM's e2e_latency counts it
    source = "vllm"
    e2e = time.time() - arrival if arrival > 0 else None
    if ttft <= 0 or first_ts <= 0:
        submitted, first, last = client_times
        ttft, first_ts, last_ts, source = first - submitted, first, last, "client"
        e2e = time.monotonic() - submitted
    return RequestFigures(
        prompt_tokens=len(output.prompt_token_ids or ()),
        cached_prompt_tokens=output.num_cached_tokens or 0,
        output_tokens=num_generated,
        ttft_s=ttft if ttft > 0 else None,
        decode_tokens_per_s=decode_tokens_per_s(num_generated, first_ts, last_ts),
        source=source,
        queue_s=scheduled_ts - queued_ts if scheduled_ts >= queued_ts > 0 else None,
        e2e_s=e2e,
    )


def generating_time_s(starts: np.ndarray, stops: np.ndarray) -> float:
    """The length of the union of the spans (``starts[i]``, ``stops[i]``): time with at least one request in
    the engine."""
    if not len(starts):
        return 0.0
    order = np.argsort(starts, kind="stable")
    starts, stops = starts[order], stops[order]
    reached = np.concatenate(([-np.inf], np.maximum.accumulate(stops)[:-1]))  # the furthest end before each span
    return float(np.sum(np.clip(stops - np.maximum(starts, reached), 0.0, None)))
