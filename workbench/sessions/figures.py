"""A session's own output rate: output tokens over the time the engine was generating, so that idle
time (a chat read between questions, an engine left running overnight) does not count in it."""
from __future__ import annotations

from dataclasses import dataclass

from workbench.sessions.stored import RequestRecord


@dataclass(frozen=True)
class GeneratingFigures:
    num_requests: int  # those with figures (that the engine answered)
    output_tokens: int
    generating_s: float  # the time at least one of them was in the engine
    span_s: float  # from the first one's arrival to the last one's end, idle time and all

    @property
    def output_tokens_per_s(self) -> float:
        """Output tokens per second while generating; NaN when nothing was generated."""
        return self.output_tokens / self.generating_s if self.generating_s > 0 else float("nan")


def request_spans(requests: list[RequestRecord]) -> list[tuple[float, float]]:
    """Each answered request's time in the engine: (arrival, end), from its end and its end-to-end latency."""
    return sorted((r.finished_s - r.figures["e2e_s"], r.finished_s) for r in requests
                  if r.finished_s is not None and r.figures.get("e2e_s") is not None
                  and r.figures.get("output_tokens") is not None)


def generating_time_s(spans: list[tuple[float, float]]) -> float:
    """The length of the union of ``spans`` (sorted by start): time with at least one request in the engine."""
    total, end = 0.0, float("-inf")
    for start, stop in spans:
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


def generating_figures(requests: list[RequestRecord]) -> GeneratingFigures:
    """The figures of ``requests`` (a session's, or one engine run's)."""
    done = [r for r in requests if r.figures.get("output_tokens") is not None]
    spans = request_spans(done)
    span_s = spans and max(stop for _, stop in spans) - spans[0][0] or 0.0
    return GeneratingFigures(len(done), sum(r.figures["output_tokens"] for r in done), generating_time_s(spans),
                             span_s)
