"""One engine run's headline figures, from its stored requests and series, and two runs side by side.

From the requests (vLLM's own per-request figures, as stored): output tokens per second over the
span from the first request's arrival to the last one's end, TTFT p50 and p99, the inter-token
latency (each request's mean) p50 and p99, and the prefix-cache hit rate (cached prompt tokens over
prompt tokens). From the series (vLLM's stat logger, as plotted): KV usage (mean while requests ran,
and the peak) and preemptions (their sum). Percentiles are :func:`workbench.engine.metrics.percentile`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from workbench.engine.metrics import percentile
from workbench.sessions.stored import (
    EngineRunRecord, RequestRecord, engine_run, figure_columns, open_read_only, record_columns,
)
from workbench.storage.series import load_series

# name -> (label, unit, better: "higher" or "lower")
FIGURES = {
    "num_requests": ("Requests", "", ""),
    "output_tokens": ("Output tokens", "", ""),
    "output_tokens_per_s": ("Output tokens/s", "tok/s", "higher"),
    "ttft_ms_p50": ("TTFT p50", "ms", "lower"),
    "ttft_ms_p99": ("TTFT p99", "ms", "lower"),
    "itl_ms_p50": ("Inter-token latency p50", "ms", "lower"),
    "itl_ms_p99": ("Inter-token latency p99", "ms", "lower"),
    "kv_usage_pct_mean": ("KV usage, mean while running", "%", ""),
    "kv_usage_pct_peak": ("KV usage, peak", "%", ""),
    "prefix_hit_pct": ("Prefix-cache hit rate", "%", "higher"),
    "preemptions": ("Preemptions", "", "lower"),
}


# The figures of each request that a run's figures are made of (arrays, as ``stored.figure_columns`` reads them).
REQUEST_FIGURES = ("e2e_s", "output_tokens", "ttft_s", "itl_s", "prompt_tokens", "cached_prompt_tokens")


def run_figures(requests: list[RequestRecord], series: dict[str, np.ndarray]) -> dict[str, float]:
    """The figures of one engine run (NaN where there is nothing to compute them from)."""
    return figures_of_columns(record_columns(requests, REQUEST_FIGURES), series)


def figures_of_columns(found: dict[str, np.ndarray], series: dict[str, np.ndarray]) -> dict[str, float]:
    """:func:`run_figures` of the answered requests' figures as arrays (``REQUEST_FIGURES`` and ``finished_s``)."""
    figures = {name: float("nan") for name in FIGURES}
    output_tokens = found["output_tokens"]
    figures["num_requests"] = float(len(output_tokens))
    output = float(np.sum(output_tokens))
    figures["output_tokens"] = output
    timed = np.isfinite(found["finished_s"]) & np.isfinite(found["e2e_s"])
    if timed.any():
        ends = found["finished_s"][timed]
        elapsed = float(ends.max() - (ends - found["e2e_s"][timed]).min())
        figures["output_tokens_per_s"] = output / elapsed if elapsed > 0 else float("nan")
    for name, key in (("ttft_ms", "ttft_s"), ("itl_ms", "itl_s")):
        values = found[key][np.isfinite(found[key])] * 1e3
        figures[f"{name}_p50"], figures[f"{name}_p99"] = percentile(values, 50), percentile(values, 99)
    prompt = float(np.nansum(found["prompt_tokens"]))
    if prompt:
        figures["prefix_hit_pct"] = 100.0 * float(np.nansum(found["cached_prompt_tokens"])) / prompt
    if series:
        running = series["num_running"] > 0
        kv = series["kv_usage_pct"]
        if running.any():
            figures["kv_usage_pct_mean"] = float(np.nanmean(kv[running]))
        if np.isfinite(kv).any():
            figures["kv_usage_pct_peak"] = float(np.nanmax(kv))
        figures["preemptions"] = float(np.nansum(series["preemptions"]))
    return figures


@dataclass(frozen=True)
class ComparedFigure:
    name: str
    label: str
    unit: str
    a: float
    b: float
    better: str  # "a", "b" or "" (no better side, or equal)

    @property
    def difference(self) -> float:
        return self.b - self.a

    @property
    def relative(self) -> float:
        """(b − a) / a; NaN when a is 0 or unknown."""
        return self.difference / self.a if self.a and math.isfinite(self.a) else float("nan")


def compare_figures(a: dict[str, float], b: dict[str, float]) -> list[ComparedFigure]:
    rows = []
    for name, (label, unit, better) in FIGURES.items():
        x, y = a[name], b[name]
        side = ""
        if better and math.isfinite(x) and math.isfinite(y) and x != y:
            side = "b" if (y > x) == (better == "higher") else "a"
        rows.append(ComparedFigure(name, label, unit, x, y, side))
    return rows


@dataclass(frozen=True)
class ConfigLine:
    key: str
    a: object
    b: object

    @property
    def changed(self) -> bool:
        return self.a != self.b


def config_diff(a: EngineRunRecord, b: EngineRunRecord) -> list[ConfigLine]:
    """Every engine argument of either run, with both values (missing: None), changed ones first."""
    first, second = a.resolved_config(), b.resolved_config()
    keys = list(dict.fromkeys([*first, *second]))
    lines = [ConfigLine(key, first.get(key), second.get(key)) for key in keys]
    return sorted(lines, key=lambda line: not line.changed)


def format_argument(value: object) -> str:
    """An engine argument's value as the comparison shows it: one the app left unset is vLLM's default."""
    return "vLLM default" if value is None else str(value)


def format_value(value: float, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if float(value).is_integer():
        text = f"{value:,.0f}"
    else:
        text = f"{value:,.1f}" if abs(value) >= 10 else f"{value:.2f}"
    return f"{text} {unit}".strip()


def format_difference(row: ComparedFigure) -> str:
    if not (math.isfinite(row.a) and math.isfinite(row.b)):
        return "—"
    sign = "+" if row.difference >= 0 else "−"
    text = f"{sign}{format_value(abs(row.difference), row.unit)}"
    if math.isfinite(row.relative):
        text += f" ({sign}{abs(row.relative) * 100:.0f} %)"
    return text


@dataclass(frozen=True)
class Comparison:
    figures: list[ComparedFigure]
    config_lines: list[ConfigLine]


def compare_runs(db_path: Path | str, run_a: str, run_b: str) -> Comparison:
    """Engine runs ``run_a`` and ``run_b`` of the database at ``db_path`` side by side: their figures and
    their engine arguments. Reads every request of both: off the GUI thread."""
    connection = open_read_only(db_path)
    try:
        figures = [figures_of_columns(figure_columns(connection, [key], REQUEST_FIGURES), load_series(connection, key))
                   for key in (run_a, run_b)]
        records = [engine_run(connection, key) for key in (run_a, run_b)]
    finally:
        connection.close()
    return Comparison(compare_figures(*figures), config_diff(*records))
