"""How well a server backend's scrapes of ``/metrics`` kept their interval (the remote benchmarks)."""
from __future__ import annotations

import math


def scrape_interval_held(times: list[float], interval_s: float, latencies: list[float] = ()) -> dict:
    """How well scrapes kept their interval: gaps' median and p99, the share more than 50 % late, and
    how long the server took to answer (a scrape waits for the one before it)."""
    ordered = sorted(latencies)
    answer = {"answer_s_p50": ordered[len(ordered) // 2] if ordered else math.nan,
              "answer_s_max": ordered[-1] if ordered else math.nan}
    return {**_gaps(times, interval_s), **answer}


def _gaps(times: list[float], interval_s: float) -> dict:
    gaps = sorted(b - a for a, b in zip(times, times[1:]))
    if not gaps:
        return {"num_scrapes": len(times), "gap_s_p50": math.nan, "gap_s_p99": math.nan, "late_fraction": math.nan}
    late = sum(1 for g in gaps if g > 1.5 * interval_s)
    return {"num_scrapes": len(times), "gap_s_p50": gaps[len(gaps) // 2],
            "gap_s_p99": gaps[min(len(gaps) - 1, int(round(0.99 * (len(gaps) - 1))))],
            "late_fraction": late / len(gaps)}
