"""A vLLM server's Prometheus ``/metrics``, read with prometheus_client's own text parser.

:func:`parse_metrics` turns one scrape into :class:`ServerMetrics` (per engine, by the ``engine``
label a data-parallel server sets; one engine "0" where there is none); :func:`step_between` turns two
scrapes into the :class:`~workbench.engine.stats.StepStats` that the plots' recorder sums, so a server
and the local engine draw the same series. Counters are read as vLLM names them in 0.26 to 0.33, and
under the names older servers used where the new one is missing.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from prometheus_client.parser import text_string_to_metric_families

from workbench.engine.stats import StepStats

# Figure -> the metric family names that hold it, newest first (the parser drops a counter's "_total").
COUNTERS = {
    "generation_tokens": ("vllm:generation_tokens",),
    "prompt_tokens": ("vllm:prompt_tokens",),
    "preemptions": ("vllm:num_preemptions",),
    "prefix_queries": ("vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries"),
    "prefix_hits": ("vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits"),
    "mm_queries": ("vllm:mm_cache_queries",),  # images looked up in the multimodal processor cache
    "mm_hits": ("vllm:mm_cache_hits",),
}
GAUGES = {
    "num_running": ("vllm:num_requests_running",),
    "num_waiting": ("vllm:num_requests_waiting",),
    "kv_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),  # a fraction, 1 = full
}
HISTOGRAMS = {
    "ttft": ("vllm:time_to_first_token_seconds",),
    "itl": ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),
}
Buckets = tuple[tuple[float, float], ...]  # (upper bound "le", cumulative count), ascending


@dataclass(frozen=True)
class EngineMetrics:
    """One engine's figures in one scrape (absolute counter values, as the server holds them)."""

    engine: str
    counters: Mapping[str, float]
    gauges: Mapping[str, float]  # a gauge the server does not report is absent, never 0
    histograms: Mapping[str, Buckets]

    def counter(self, name: str) -> float:
        return self.counters.get(name, 0.0)


@dataclass(frozen=True)
class ServerMetrics:
    """One scrape: each engine, and the time it was read (monotonic)."""

    engines: tuple[EngineMetrics, ...]
    read_at: float = field(default_factory=time.monotonic)
    model_names: tuple[str, ...] = ()

    def total(self) -> EngineMetrics:
        """All engines together: counters, running and waiting summed; KV usage their mean."""
        return sum_engines(self.engines)


class MetricsFormatError(ValueError):
    """The text is not Prometheus' exposition format, or holds none of vLLM's metrics."""


_WANTED = tuple(name for names in (*COUNTERS.values(), *GAUGES.values(), *HISTOGRAMS.values()) for name in names)
_WANTED_LINES = tuple(prefix + name for name in _WANTED for prefix in ("", "# HELP ", "# TYPE "))


def wanted_lines(text: str) -> str:
    """Only the lines of the families read here (and of families whose names begin the same way).
    A server's page has hundreds of other samples (process, Python, other histograms); the parser,
    pure Python, would spend most of a scrape on them."""
    return "\n".join(line for line in text.splitlines() if line.startswith(_WANTED_LINES)) + "\n"


def parse_metrics(text: str) -> ServerMetrics:
    """One scrape's text as :class:`ServerMetrics`; MetricsFormatError when it cannot be read."""
    families: dict[str, list] = {}  # a family's samples, merged where the text splits it
    try:
        for family in text_string_to_metric_families(wanted_lines(text)):
            families.setdefault(family.name, []).extend(family.samples)
    except Exception as exc:  # the parser raises ValueError, IndexError, ... on broken lines
        raise MetricsFormatError(f"{type(exc).__name__}: {exc}") from exc
    if not any(name.startswith("vllm:") for name in families):
        raise MetricsFormatError("none of vLLM's metrics (vllm:num_requests_running, ...) in it")
    per_engine: dict[str, dict] = {}
    models: set[str] = set()

    def slot(labels: dict) -> dict:
        models.add(labels.get("model_name", ""))
        return per_engine.setdefault(labels.get("engine", "0"), {"c": {}, "g": {}, "h": {}})

    for figure, names in COUNTERS.items():
        for sample in _samples(families, names, ("_total",)):
            counters = slot(sample.labels)["c"]
            counters[figure] = counters.get(figure, 0.0) + sample.value
    for figure, names in GAUGES.items():
        for sample in _samples(families, names, ("",)):
            gauges = slot(sample.labels)["g"]
            gauges[figure] = gauges.get(figure, 0.0) + sample.value
    for figure, names in HISTOGRAMS.items():
        for sample in _samples(families, names, ("_bucket",)):
            buckets = slot(sample.labels)["h"].setdefault(figure, {})
            le = float(sample.labels["le"])
            buckets[le] = buckets.get(le, 0.0) + sample.value
    engines = tuple(
        EngineMetrics(name, MappingProxyType(parts["c"]), MappingProxyType(parts["g"]),
                      MappingProxyType({k: tuple(sorted(v.items())) for k, v in parts["h"].items()}))
        for name, parts in sorted(per_engine.items(), key=lambda item: _engine_order(item[0])))
    return ServerMetrics(engines, time.monotonic(), tuple(sorted(m for m in models if m)))


def _engine_order(name: str):
    return (0, int(name), "") if name.isdigit() else (1, 0, name)


def _samples(families: dict, names: tuple[str, ...], suffixes: tuple[str, ...]):
    """The samples of the first of ``names`` the scrape has (newest name first)."""
    for name in names:
        samples = families.get(name)
        if samples is not None:
            return [s for s in samples if any(s.name == name + suffix for suffix in suffixes)]
    return []


def sum_engines(engines: tuple[EngineMetrics, ...]) -> EngineMetrics:
    counters: dict[str, float] = {}
    gauges: dict[str, float] = {}
    histograms: dict[str, dict[float, float]] = {}
    for engine in engines:
        for name, value in engine.counters.items():
            counters[name] = counters.get(name, 0.0) + value
        for name, value in engine.gauges.items():
            gauges[name] = gauges.get(name, 0.0) + value
        for name, buckets in engine.histograms.items():
            merged = histograms.setdefault(name, {})
            for le, count in buckets:
                merged[le] = merged.get(le, 0.0) + count
    with_kv = [e.gauges["kv_usage"] for e in engines if "kv_usage" in e.gauges]
    if with_kv:
        gauges["kv_usage"] = sum(with_kv) / len(with_kv)
    return EngineMetrics("all", MappingProxyType(counters), MappingProxyType(gauges),
                         MappingProxyType({k: tuple(sorted(v.items())) for k, v in histograms.items()}))


def _increase(before: float, after: float) -> float:
    """A counter's increase; a counter that went down was reset (the server restarted): all of it is new."""
    return after - before if after >= before else after


def _bucket_increase(before: Buckets, after: Buckets) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """The observations between two scrapes, as (bucket upper bound, count) pairs; the +Inf bucket's
    are counted at the highest finite bound (they are at least that)."""
    earlier = dict(before)
    reset = any(count < earlier.get(le, 0.0) for le, count in after)
    values, counts, below = [], [], 0.0
    finite = [le for le, _ in after if not math.isinf(le)]
    for le, cumulative in after:
        new_cumulative = cumulative if reset else cumulative - earlier.get(le, 0.0)
        in_bucket = int(round(new_cumulative - below))
        below = new_cumulative
        if in_bucket > 0 and finite:
            values.append(le if not math.isinf(le) else finite[-1])
            counts.append(in_bucket)
    return tuple(values), tuple(counts)


def step_between(before: ServerMetrics, after: ServerMetrics) -> StepStats:
    """What happened on the server between two scrapes, in the plots' terms (all engines together)."""
    old, new = before.total(), after.total()
    inc = {name: int(round(_increase(old.counter(name), new.counter(name)))) for name in COUNTERS}
    ttfts, ttft_counts = _bucket_increase(old.histograms.get("ttft", ()), new.histograms.get("ttft", ()))
    itls, itl_counts = _bucket_increase(old.histograms.get("itl", ()), new.histograms.get("itl", ()))
    gauges = new.gauges
    return StepStats(num_running=int(gauges.get("num_running", 0)), num_waiting=int(gauges.get("num_waiting", 0)),
                     kv_usage=gauges.get("kv_usage", math.nan), prefix_queries=inc["prefix_queries"],
                     prefix_hits=inc["prefix_hits"], prompt_tokens=inc["prompt_tokens"],
                     generation_tokens=inc["generation_tokens"], preemptions=inc["preemptions"],
                     ttfts_s=ttfts, itls_s=itls, ttft_counts=ttft_counts, itl_counts=itl_counts,
                     # every server exports the counters; one that has looked up no image has no cache to show
                     mm_cache_reported=new.counter("mm_queries") > 0, mm_queries=inc["mm_queries"],
                     mm_hits=inc["mm_hits"])
