"""The engine's own statistics as live series: what the plots show. No Qt, no vLLM.

A backend pushes one :class:`StepStats` per engine step (the local engine's come from the stat
logger that vLLM itself feeds, ``vllm_plugin.stat_logger``); :class:`StatsRecorder` sums them into
bins of ``bin_s`` seconds kept in a ring buffer, and publishes them as an immutable
:class:`StatsSeries` with totals since the engine started (the figures vLLM's own counters hold).
"""
from __future__ import annotations

from dataclasses import dataclass, fields
import numpy as np

from workbench.engine.ring_buffer import EMPTY_SERIES, RingBuffer, Series

BIN_S = 0.25  # one point per quarter second
CAPACITY = 7200  # 30 minutes of points
LATENCY_WINDOW_S = 10.0  # TTFT and inter-token percentiles over the last ten seconds
# Latencies go into log-spaced buckets from 0.1 ms to 1000 s, 7 % wide: percentiles over the sliding
# window are read from the summed buckets (as Prometheus' histogram_quantile does, finer).
LATENCY_EDGES_S = np.geomspace(1e-4, 1e3, 241)

COLUMNS = ("t", "generation_tokens_per_s", "prompt_tokens_per_s", "num_running", "num_waiting",
           "kv_usage_pct", "token_occupancy_pct", "prefix_hit_pct", "preemptions",
           "ttft_ms_p50", "ttft_ms_p99", "itl_ms_p50", "itl_ms_p99", "mm_cache_hit_pct")


@dataclass(frozen=True, slots=True)
class StepStats:
    """What one engine step reported, in plain numbers (no vLLM object)."""

    num_running: int
    num_waiting: int
    kv_usage: float  # vLLM's block-based fraction
    prefix_queries: int  # prompt tokens looked up in the prefix cache
    prefix_hits: int  # of those, found
    prompt_tokens: int
    generation_tokens: int
    preemptions: int
    ttfts_s: tuple[float, ...] = ()
    itls_s: tuple[float, ...] = ()
    # A server's histograms give counts, not values: each value above then stands for this many
    # observations (its bucket's upper bound and the observations in it); empty means one each.
    ttft_counts: tuple[int, ...] = ()
    itl_counts: tuple[int, ...] = ()
    # vLLM's multimodal processor cache (images looked up by their hash, and found), where the engine
    # reports it: an engine without images' cache (a text-only model, an older vLLM) leaves it False.
    mm_cache_reported: bool = False
    mm_queries: int = 0
    mm_hits: int = 0


@dataclass(frozen=True)
class StatsTotals:
    """Sums since the engine started: the same figures as vLLM's own Prometheus counters."""

    prompt_tokens: int = 0
    generation_tokens: int = 0
    preemptions: int = 0
    prefix_queries: int = 0
    prefix_hits: int = 0
    num_ttft: int = 0
    num_itl: int = 0
    steps: int = 0
    mm_queries: int = 0
    mm_hits: int = 0
    mm_cache_reports: int = 0  # steps that reported the multimodal cache: none, and no plot of it is shown


@dataclass(frozen=True)
class StatsSeries:
    """The plots' data: binned series (:data:`COLUMNS`) and the running totals, of the engine that
    ``start_id`` started (0: none named)."""

    series: Series
    totals: StatsTotals
    start_id: int = 0

    @property
    def version(self) -> int:
        return self.series.version


EMPTY_STATS = StatsSeries(EMPTY_SERIES, StatsTotals())
_IDLE = StepStats(0, 0, 0.0, 0, 0, 0, 0, 0)


class _LatencyWindow:
    """Bucket counts of the last ``num_bins`` bins and their sum; percentiles from the sum."""

    def __init__(self, num_bins: int):
        self.bins: list[np.ndarray] = []
        self.num_bins = num_bins
        self.total = np.zeros(len(LATENCY_EDGES_S) + 1, np.int64)

    def push(self, values_s: list[float], weighted: list[tuple[tuple[float, ...], tuple[int, ...]]] = ()) -> None:
        counts = np.bincount(np.searchsorted(LATENCY_EDGES_S, values_s), minlength=len(self.total)) \
            if values_s else np.zeros_like(self.total)
        for values, weights in weighted:
            counts += np.bincount(np.searchsorted(LATENCY_EDGES_S, values), weights=weights,
                                  minlength=len(self.total)).astype(np.int64)
        self.bins.append(counts)
        self.total += counts
        if len(self.bins) > self.num_bins:
            self.total -= self.bins.pop(0)

    def percentile_ms(self, q: float) -> float:
        """The upper edge of the bucket that holds the q-th percentile; NaN with no values."""
        count = int(self.total.sum())
        if not count:
            return float("nan")
        index = int(np.searchsorted(np.cumsum(self.total), q / 100 * count))
        return float(LATENCY_EDGES_S[min(index, len(LATENCY_EDGES_S) - 1)] * 1e3)


def _percent(hits: int, queries: int) -> float:
    """A bin's hit rate in percent; NaN where nothing was looked up (no point drawn, not a 0 %)."""
    return hits / queries * 100 if queries else float("nan")


class StatsRecorder:
    """Lives on the thread that steps the engine: :meth:`add` per step, :meth:`tick` in the loop."""

    def __init__(self, started: float, bin_s: float = BIN_S, capacity: int = CAPACITY, start_id: int = 0):
        """``start_id``: the engine start whose figures these are (the series it publishes say so)."""
        self.bin_s, self.start_id = bin_s, start_id
        self.ring = RingBuffer(COLUMNS, capacity)
        self.totals = dict.fromkeys((f.name for f in fields(StatsTotals)), 0)
        self._bin_start = started
        self._ttft = _LatencyWindow(int(LATENCY_WINDOW_S / bin_s))
        self._itl = _LatencyWindow(int(LATENCY_WINDOW_S / bin_s))
        self._new_bin()
        self._last = _IDLE
        self._occupancy = 0.0

    def _new_bin(self) -> None:
        self._bin = dict.fromkeys(("prompt_tokens", "generation_tokens", "preemptions", "prefix_queries",
                                   "prefix_hits", "mm_queries", "mm_hits"), 0)
        self._ttfts: list[float] = []
        self._itls: list[float] = []
        self._ttfts_weighted: list = []  # (values, counts) of a server's histograms
        self._itls_weighted: list = []
        # The highest running, waiting and KV usage any step of the bin reported: a request that
        # starts and ends within one bin still shows (the last step of a finished request frees its blocks).
        self._peak: tuple[int, int, float] | None = None

    def add(self, step: StepStats) -> None:
        """One step's figures; cheap, since it runs on every engine step."""
        bin_sums, totals = self._bin, self.totals
        for name in bin_sums:
            value = getattr(step, name)
            bin_sums[name] += value
            totals[name] += value
        totals["steps"] += 1
        totals["mm_cache_reports"] += step.mm_cache_reported
        if step.ttft_counts or step.itl_counts:
            self._add_weighted(step)
        else:
            totals["num_ttft"] += len(step.ttfts_s)
            totals["num_itl"] += len(step.itls_s)
            self._ttfts.extend(step.ttfts_s)
            self._itls.extend(step.itls_s)
        self._last = step
        peak = self._peak
        self._peak = (step.num_running, step.num_waiting, step.kv_usage) if peak is None else \
            (max(peak[0], step.num_running), max(peak[1], step.num_waiting), max(peak[2], step.kv_usage))

    def _add_weighted(self, step: StepStats) -> None:
        self.totals["num_ttft"] += sum(step.ttft_counts)
        self.totals["num_itl"] += sum(step.itl_counts)
        if step.ttfts_s:
            self._ttfts_weighted.append((step.ttfts_s, step.ttft_counts))
        if step.itls_s:
            self._itls_weighted.append((step.itls_s, step.itl_counts))

    def note_token_occupancy(self, fraction: float) -> None:
        """Tokens stored / token slots of the pool, from the latest KV snapshot."""
        self._occupancy = fraction

    def tick(self, now: float, idle: bool = False, early: bool = False) -> bool:
        """Closes the bin if it has ended by ``now`` (``early``: if anything of it has passed, as the engine
        stops); True if a point was added. ``idle``: the engine has no requests, so nothing runs, waits or holds
        blocks (no step says so)."""
        elapsed = now - self._bin_start
        if elapsed < self.bin_s and not (early and elapsed > 0):
            return False
        if idle:
            self._last = _IDLE
        self._bin_start = now
        self._ttft.push(self._ttfts, self._ttfts_weighted)
        self._itl.push(self._itls, self._itls_weighted)
        self.ring.append(self._row(now, elapsed))
        self._new_bin()
        return True

    def _row(self, now: float, elapsed: float) -> tuple[float, ...]:
        sums, last = self._bin, self._last
        running, waiting, usage = self._peak or (last.num_running, last.num_waiting, last.kv_usage)
        return (now, sums["generation_tokens"] / elapsed, sums["prompt_tokens"] / elapsed,
                running, waiting, usage * 100, self._occupancy * 100,
                _percent(sums["prefix_hits"], sums["prefix_queries"]), sums["preemptions"],
                self._ttft.percentile_ms(50), self._ttft.percentile_ms(99),
                self._itl.percentile_ms(50), self._itl.percentile_ms(99),
                _percent(sums["mm_hits"], sums["mm_queries"]))

    def publish(self) -> StatsSeries:
        return StatsSeries(self.ring.publish(), StatsTotals(**self.totals), self.start_id)
