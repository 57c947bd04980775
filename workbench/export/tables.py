"""requests.csv and timeseries.csv: every request and every plotted point of a session."""
from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Iterator

import numpy as np

from workbench.batch.csv_rows import WRITE_ENCODING
from workbench.sessions.stored import FIGURE_COLUMNS, EngineRunRecord, RequestRecord

REQUEST_COLUMNS = ("kind", "source", "source_id", "item", "request_id", "engine_run", "run_key", "status",
                   "finish_reason", "finished_s", *FIGURE_COLUMNS, "prompt", "output")
CHUNK = 1000
MEMORY_PREFIX = "memory_"  # timeseries.csv's names for the memory panel's columns


def _cell(value) -> object:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return value


def write_requests_csv(path: Path, requests: list[RequestRecord], runs: list[EngineRunRecord]) -> Iterator[int]:
    """Writes one row per request; yields the rows written so far every :data:`CHUNK` rows and at the end.
    ``engine_run`` is the run's number in the session (1, 2, ...), ``run_key`` its stored key."""
    number = {run.run_key: index + 1 for index, run in enumerate(runs)}
    with open(path, "w", newline="", encoding=WRITE_ENCODING) as handle:
        writer = csv.writer(handle)
        writer.writerow(REQUEST_COLUMNS)
        for index, r in enumerate(requests, 1):
            writer.writerow([r.kind, r.source, r.source_id, r.item, r.request_id, number.get(r.run_key, ""),
                             r.run_key, r.status, r.finish_reason, _cell(r.finished_s),
                             *(_cell(r.figures.get(name)) for name in FIGURE_COLUMNS), r.prompt, r.output])
            if index % CHUNK == 0:
                yield index
    yield len(requests)


def write_timeseries_csv(path: Path, series: dict[str, np.ndarray], runs: list[EngineRunRecord],
                         session_start_s: float, memory: dict[str, np.ndarray] | None = None) -> int:
    """One row per plotted point: its time (``t``: time.time(); ``seconds``: since the session started),
    its engine run and every series; the memory panel's points (``memory``, its columns named
    ``memory_<column>``, in bytes) are rows of their own among them, in time order. The gaps between runs
    are left out. Returns the rows written."""
    parts = [(part, prefix) for part, prefix in ((series, ""), (memory or {}, MEMORY_PREFIX)) if part]
    names = [(prefix + name, name, part) for part, prefix in parts for name in part if name not in ("t", "run")]
    rows = 0
    with open(path, "w", newline="", encoding=WRITE_ENCODING) as handle:
        writer = csv.writer(handle)
        writer.writerow(["t", "seconds", "engine_run", "run_key", *(name for name, _, _ in names)])
        if not parts:
            return 0
        keeps = [np.isfinite(part["t"]) for part, _ in parts]
        columns = [np.concatenate([part[name][keep] for (part, _), keep in zip(parts, keeps)]) for name in ("t", "run")]
        for _, name, source in names:
            columns.append(np.concatenate([part[name][keep] if part is source else np.full(int(keep.sum()), np.nan)
                                           for (part, _), keep in zip(parts, keeps)]))
        order = np.argsort(columns[0], kind="stable")
        for values in zip(*(column[order] for column in columns)):
            t, run = values[0], int(values[1])
            writer.writerow([f"{t:.3f}", f"{t - session_start_s:.3f}", run + 1, runs[run].run_key,
                             *(_cell(float(v)) for v in values[2:])])
            rows += 1
    return rows
