"""A session's own output rate: output tokens over the time the engine was generating, so that idle
time (a chat read between questions, an engine left running overnight) does not count in it."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.engine.metrics import generating_time_s
from workbench.sessions.stored import RequestRecord, record_columns


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


def figures_of(finished_s: np.ndarray, e2e_s: np.ndarray, output_tokens: np.ndarray) -> GeneratingFigures:
    """The figures of the answered requests whose end, end-to-end latency and output tokens are given (NaN:
    not known); each one's time in the engine runs from its end less its end-to-end latency to its end."""
    timed = np.isfinite(finished_s) & np.isfinite(e2e_s)
    stops = finished_s[timed]
    starts = stops - e2e_s[timed]
    span_s = float(stops.max() - starts.min()) if len(stops) else 0.0
    return GeneratingFigures(len(output_tokens), int(np.nansum(output_tokens)), generating_time_s(starts, stops),
                             span_s)


def generating_figures(requests: list[RequestRecord]) -> GeneratingFigures:
    """The figures of ``requests`` (a session's, or one engine run's)."""
    found = record_columns(requests, ("e2e_s", "output_tokens"))
    return figures_of(found["finished_s"], found["e2e_s"], found["output_tokens"])
