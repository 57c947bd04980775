"""The comparison's results as rows: the one schema ``bench compare`` writes to ``benchmark.csv`` and
the Benchmark view reads back. No Qt. It sits below both (the benchmarks and the widgets), in the exports:
a results file is one the user saves and hands on.

A results file holds the columns :data:`COLUMNS`, one row per path, then one row per ratio:
``ratio <name>``, its value and, for per-repeat ratios, the range. Files written before the app's
path (d) have the columns :data:`COLUMNS_BEFORE_APP` (no client CPU); they read, and write back, as
they are.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

COLUMNS_BEFORE_APP = ("path", "output_tok_s", "spread", "ttft_ms_p50", "ttft_ms_p99", "itl_ms_p50", "itl_ms_p99",
                      "peak_memory_mib", "single_stream_tok_s")
COLUMNS = COLUMNS_BEFORE_APP + ("client_cpu_us_per_token",)
RATIO_PREFIX = "ratio "
# A bar's colour by the start of its path's name; the last is HF at its best batch size.
BAR_COLOURS = {"(a)": "#2563eb", "(b)": "#f59e0b", "(d)": "#16a34a", "(c) HF generate, batch 1": "#9ca3af",
               "(c)": "#6b7280"}


def bar_colour(path: str) -> str:
    return next((colour for start, colour in BAR_COLOURS.items() if path.startswith(start)), "#6b7280")


@dataclass(frozen=True)
class ResultRow:
    """One path of the comparison: (a), (b), (d) or a (c) batch size."""

    path: str
    tokens_per_s: float
    spread: str
    ttft_ms: tuple[float, float] | None  # p50, p99
    itl_ms: tuple[float, float] | None
    memory_mib: float | None
    single_stream_tok_s: float | None
    client_cpu_us_per_token: float | None = None  # the benchmark's own process, all its threads

    def cells(self) -> list[str]:
        def pair(values) -> list[str]:
            return [f"{v:.3f}" for v in values] if values else ["", ""]

        return [self.path, f"{self.tokens_per_s:.1f}", self.spread, *pair(self.ttft_ms), *pair(self.itl_ms),
                f"{self.memory_mib:.0f}" if self.memory_mib else "",
                f"{self.single_stream_tok_s:.1f}" if self.single_stream_tok_s else "",
                f"{self.client_cpu_us_per_token:.2f}" if self.client_cpu_us_per_token else ""]

    @classmethod
    def from_cells(cls, cells: list[str]) -> ResultRow:
        cells = cells + [""] * (len(COLUMNS) - len(cells))
        numbers = [float(c) if c else None for c in cells[3:]]
        ttft, itl = numbers[0:2], numbers[2:4]
        return cls(cells[0], float(cells[1]), cells[2], tuple(ttft) if None not in ttft else None,
                   tuple(itl) if None not in itl else None, numbers[4], numbers[5], numbers[6])


@dataclass(frozen=True)
class RatioRow:
    """A ratio between paths (``b/a throughput``), with its range where it is a median of pairs."""

    name: str
    value: float
    low_high: tuple[float, float] | None = None

    def cells(self) -> list[str]:
        spread = [f"{self.low_high[0]:.4f}–{self.low_high[1]:.4f}"] if self.low_high else []
        return [RATIO_PREFIX + self.name, f"{self.value:.4f}", *spread]

    @classmethod
    def from_cells(cls, cells: list[str]) -> RatioRow:
        low_high = tuple(float(v) for v in cells[2].split("–")) if len(cells) > 2 and cells[2] else None
        return cls(cells[0][len(RATIO_PREFIX):], float(cells[1]), low_high)


@dataclass(frozen=True)
class BenchmarkResults:
    rows: tuple[ResultRow, ...]
    ratios: tuple[RatioRow, ...]
    columns: tuple[str, ...] = COLUMNS  # COLUMNS_BEFORE_APP for a file written before (d)

    def table(self) -> list[list[str]]:
        """Every row as the file writes it: the paths, then the ratios."""
        return [r.cells()[:len(self.columns)] for r in self.rows] + [r.cells() for r in self.ratios]


def results_csv(results: BenchmarkResults) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(results.columns)
    writer.writerows(results.table())
    return buffer.getvalue()


def read_results(path: Path) -> BenchmarkResults:
    """A ``benchmark.csv`` as written by ``bench compare`` (any version so far); ValueError if it is not one."""
    with Path(path).open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    columns = tuple(rows[0]) if rows else ()
    if columns not in (COLUMNS, COLUMNS_BEFORE_APP):
        raise ValueError(f"{path} is not a benchmark results file (its columns are not {', '.join(COLUMNS)})")
    body = [r for r in rows[1:] if r]
    return BenchmarkResults(tuple(ResultRow.from_cells(r) for r in body if not r[0].startswith(RATIO_PREFIX)),
                            tuple(RatioRow.from_cells(r) for r in body if r[0].startswith(RATIO_PREFIX)), columns)
