"""How long a batch run has left: rows finished per second, measured from the run's own completions.

No estimate until there is a rate worth the name. Requests finish in waves (a batch keeps
``max_in_flight`` of them in the engine, and those sent together end together), so one early
completion says nothing about the rate: 1 row in 4 s would promise 20 minutes for 300 rows that
take 40 s. The rate counts only once a whole wave's worth of rows (the bound) has finished and a
few seconds of running time have passed since sending (re)started; it is then taken over the
recent past (at least ``window_s`` and at least a wave's worth of rows), so a run that speeds up or
slows down is followed. Times are the run's running time: pauses left out.
"""
from __future__ import annotations

from collections import deque

MIN_INTERVAL_S = 2.0  # running time before any rate is believed
WINDOW_S = 20.0  # the recent past the rate is taken over, once the run is longer
SAMPLE_SPACING_S = 0.1  # completions closer together than this share one sample


class CompletionRate:
    """Rows finished per second of running time, and the time the rows left need at that rate."""

    def __init__(self, min_rows: int, min_interval_s: float = MIN_INTERVAL_S, window_s: float = WINDOW_S):
        self.min_rows = max(1, min_rows)
        self.min_interval_s, self.window_s = min_interval_s, window_s
        self._samples: deque[tuple[float, int]] = deque([(0.0, 0)])  # (time, rows finished by then)

    def restart(self, at_s: float, min_rows: int | None = None) -> None:
        """Measures afresh from ``at_s`` (sending starts or starts again: the engine fills up anew)."""
        if min_rows is not None:
            self.min_rows = max(1, min_rows)
        self._samples = deque([(at_s, 0)])

    def row_finished(self, at_s: float) -> None:
        samples = self._samples
        count = samples[-1][1] + 1
        if len(samples) >= 2 and samples[-1][0] - samples[-2][0] < SAMPLE_SPACING_S:
            samples[-1] = (at_s, count)
        else:
            samples.append((at_s, count))

    def rows_per_s(self, now_s: float) -> float | None:
        """The recent rate up to the last completion, or None while it is still being measured."""
        samples = self._samples
        (start_s, _), (last_s, finished) = samples[0], samples[-1]
        if finished < self.min_rows or now_s - start_s < self.min_interval_s:
            return None
        anchor_s, anchor_rows = self._anchor(now_s, finished)
        return (finished - anchor_rows) / (last_s - anchor_s) if last_s > anchor_s else None

    def _anchor(self, now_s: float, finished: int) -> tuple[float, int]:
        """The latest sample at least ``window_s`` back with at least ``min_rows`` finished since; the
        start where none is. Samples older than it are never needed again and are dropped."""
        samples = self._samples

        def usable(sample: tuple[float, int]) -> bool:
            return sample[0] <= now_s - self.window_s and finished - sample[1] >= self.min_rows

        while len(samples) >= 2 and usable(samples[1]):
            samples.popleft()
        return samples[0]

    def eta_s(self, now_s: float, rows_left: int) -> float | None:
        """Seconds of running time the ``rows_left`` need; None while measuring.

        Counts down from the last completion at the recent rate (rows finish in waves: between two,
        the time left still passes). When no row has finished for twice a wave's expected time (the
        engine busy with something else), the wait so far counts in the rate instead."""
        if rows_left <= 0:
            return 0.0
        rate = self.rows_per_s(now_s)
        if rate is None:
            return None
        last_s = self._samples[-1][0]
        since_last_s = max(0.0, now_s - last_s)
        if since_last_s <= 2 * self.min_rows / rate:
            return max(0.0, rows_left / rate - since_last_s)
        anchor_s, anchor_rows = self._samples[0]
        return rows_left * (now_s - anchor_s) / (self._samples[-1][1] - anchor_rows)
