"""How long a batch run had requests in the engine, from its rows' own times: what a kept run "ran" for,
read back after a restart (a pause, or the app closed between sessions, left out: no row was in flight)."""
from __future__ import annotations

import numpy as np


def busy_seconds(starts: np.ndarray, ends: np.ndarray) -> float:
    """The length of the union of the intervals [starts[i], ends[i]] (seconds); 0 for none."""
    if len(starts) == 0:
        return 0.0
    order = np.argsort(starts, kind="stable")
    begin, end = np.asarray(starts, dtype=float)[order], np.asarray(ends, dtype=float)[order]
    reach = np.maximum.accumulate(end)  # how far the intervals so far reach
    first = np.empty(len(begin), dtype=bool)
    first[0], first[1:] = True, begin[1:] > reach[:-1]  # an interval that starts after all before have ended
    heads = np.flatnonzero(first)
    return float((reach[np.r_[heads[1:] - 1, len(begin) - 1]] - begin[heads]).sum())
