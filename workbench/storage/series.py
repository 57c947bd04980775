"""The plots' series kept per engine run: what the live plots drew, so a past session's plots can be
drawn again. No Qt.

:class:`SeriesRecorder` takes the engine's published :class:`~workbench.engine.stats.StatsSeries`
(the window hands it the latest it read, a few times a second), keeps the points it has not seen,
and every :data:`CHUNK_S` seconds puts them on the writer's queue as one record: a chunk of float64
rows, 112 bytes a point (14 columns, 4 points a second: about 1.6 MB an hour of engine time), one
insert per chunk. Times are stored as ``time.time()`` seconds.

A second recorder keeps the memory panel's series (:data:`MEMORY_COLUMNS`, 64 bytes a point) in the
same table: a chunk's column names say which series it holds (:func:`series_kind`), and
:func:`load_series` reads one kind at a time.
"""
from __future__ import annotations

import json
import sqlite3
import time
from typing import Callable

import numpy as np

from workbench.engine.stats import COLUMNS, StatsSeries
from workbench.storage.records import SeriesPointsSaved
from workbench.telemetry.memory_service import MEMORY_COLUMNS

CHUNK_S = 5.0
STATS, MEMORY = "stats", "memory"
_MEMORY_NAMES = frozenset(MEMORY_COLUMNS[1:])


def series_kind(names: list[str]) -> str:
    """Which series a chunk of these columns holds: :data:`MEMORY` when every column but "t" is one of the
    memory panel's, :data:`STATS` (the plots') otherwise."""
    return MEMORY if len(names) > 1 and _MEMORY_NAMES.issuperset(names[1:]) else STATS


class SeriesRecorder:
    """Called on one thread (the GUI's); puts :class:`SeriesPointsSaved` records through ``put``.
    ``columns``: the series' columns, "t" first (:data:`COLUMNS`, or :data:`MEMORY_COLUMNS` for memory)."""

    def __init__(self, put: Callable[[object], None], chunk_s: float = CHUNK_S, columns: tuple[str, ...] = COLUMNS):
        self.put, self.chunk_s, self.columns = put, chunk_s, tuple(columns)
        self._wall_offset = time.time() - time.monotonic()  # the series' t is monotonic
        self._run_key = ""
        self._last_t = -np.inf  # the newest point taken (monotonic)
        self._pending: list[np.ndarray] = []
        self._pending_since = time.monotonic()
        self._seen_version = -1  # the series version last looked at: the window's timer hands the same one again
        self.num_points = 0

    def record(self, run_key: str, stats: StatsSeries) -> None:
        """Takes the points of ``stats`` newer than any taken before, for engine run ``run_key``; ``stats``:
        anything with a ``series`` of this recorder's columns (a ``StatsSeries``, a ``MemoryState``)."""
        if run_key != self._run_key:
            self.flush()
            self._run_key = run_key
        series = stats.series
        if not len(series) or (series.version == self._seen_version and time.monotonic() - self._pending_since
                               < self.chunk_s):
            return
        self._seen_version = series.version
        t = series["t"]
        if not run_key:  # between engine runs: points seen now belong to none, and are not taken later
            self._last_t = max(self._last_t, float(t[-1]))
            return
        start = int(np.searchsorted(t, self._last_t, side="right"))
        if start < len(t):
            rows = np.column_stack([series[name][start:] for name in self.columns])
            rows[:, 0] += self._wall_offset
            self._pending.append(rows)
            self._last_t = float(t[-1])
        if time.monotonic() - self._pending_since >= self.chunk_s:
            self.flush()

    @property
    def newest_s(self) -> float | None:
        """The time (``time.time()`` seconds) of the newest point seen, None before the first: taken for
        the engine run open then (on the writer's queue once :meth:`flush` ran), or passed over between runs."""
        return self._last_t + self._wall_offset if np.isfinite(self._last_t) else None

    def flush(self) -> None:
        """Puts the points taken so far as one record (nothing when there are none)."""
        self._pending_since = time.monotonic()
        if not self._pending or not self._run_key:
            self._pending = []
            return
        rows = np.ascontiguousarray(np.concatenate(self._pending), dtype=np.float64)
        self._pending = []
        self.num_points += len(rows)
        self.put(SeriesPointsSaved(self._run_key, self.columns, rows.tobytes(), len(rows), float(rows[0, 0])))


def load_series(connection: sqlite3.Connection, run_key: str, kind: str = STATS) -> dict[str, np.ndarray]:
    """Every stored point of one engine run's series of ``kind`` (:data:`STATS`: the plots', :data:`MEMORY`:
    the memory panel's) as columns ("t": time.time() seconds), oldest first; an empty dict when none was stored."""
    parts: list[dict[str, np.ndarray]] = []
    for columns, num_points, points in connection.execute(
            "SELECT columns, num_points, points FROM series_chunks WHERE run_key = ? ORDER BY first_s", (run_key,)):
        names = json.loads(columns)
        if series_kind(names) != kind:
            continue
        block = np.frombuffer(points, dtype=np.float64).reshape(num_points, len(names))
        parts.append({name: block[:, index] for index, name in enumerate(names)})
    if not parts:
        return {}
    names = list(dict.fromkeys(name for part in parts for name in part))
    return {name: np.concatenate([part.get(name, np.full(len(part["t"]), np.nan)) for part in parts])
            for name in names}
