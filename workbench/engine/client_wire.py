"""What crosses the pipe between the window's process and the engine-client process. No Qt.

Commands (``workbench.engine.commands``) go to the client as they are, pickled. The client sends
:class:`Batch` values back, at most every ``BATCH_INTERVAL_S``: the loop's messages in order, then the
latest KV snapshot and the latest statistics, each as what changed since the one sent before.

- A KV snapshot shares its chunks with the snapshot before (``kv_snapshot.CHUNK_BLOCKS`` blocks a
  chunk); :class:`SnapshotEncoder` sends the chunks and block tables that are new objects since the
  last snapshot it sent, and :class:`SnapshotDecoder` rebuilds the snapshot sharing the others. A
  request's image spans go once, with its first table, and are kept with the table while it lasts. The
  two stay in step because every encoded update is sent and decoded, in order.
- The statistics' series is a ring of up to 7,200 points; :class:`StatsEncoder` sends the points new
  since the last series it sent (all of them after an engine change), :class:`StatsDecoder` keeps a
  ring of its own and publishes it.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from multiprocessing.reduction import ForkingPickler
from types import MappingProxyType
from typing import Any, Callable, Mapping

import numpy as np

from workbench.engine.kv_snapshot import ARRAY_NAMES, NO_IMAGE_SPANS, KVSnapshot
from workbench.engine.ring_buffer import RingBuffer
from workbench.engine.stats import CAPACITY, COLUMNS, StatsSeries, StatsTotals

BATCH_INTERVAL_S = 0.025  # the most a message waits in the client before it is sent


def read_only(mapping: dict) -> MappingProxyType:
    return MappingProxyType(mapping)


def _reduce_mapping_proxy(mapping: MappingProxyType):
    return read_only, (dict(mapping),)


# The messages' read-only mappings (a server's metrics, a flush's texts) cross the pipe as they are:
# registered with the pickler that multiprocessing's connections use, not with pickle at large.
ForkingPickler.register(MappingProxyType, _reduce_mapping_proxy)
_SCALARS = tuple(f.name for f in dataclasses.fields(KVSnapshot) if f.name not in ("chunks", "tables", "image_spans"))


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


# ------------------------------------------------------------------ benchmark calls
@dataclass(frozen=True)
class CallInClient:
    """Benchmarks only: run ``function(loop, *args)`` on the client's loop thread, between steps, with
    the engine the client holds; its result comes back as a :class:`Reply`. ``function`` is a
    module-level function (pickled by name), so the client imports its module when it arrives."""

    call_id: int
    function: Callable
    args: tuple = ()


@dataclass(frozen=True)
class Reply:
    call_id: int
    value: Any = None
    error: str | None = None  # the call raised: its type and message


# ------------------------------------------------------------------ KV snapshots
@dataclass(frozen=True)
class SnapshotUpdate:
    scalars: dict  # KVSnapshot's plain fields
    num_chunks: int
    chunks: dict  # chunk index -> one array per ARRAY_NAMES, for the chunks that changed
    tables: dict  # request id -> block ids, for the tables that are new or changed
    table_ids: tuple  # the request ids of the snapshot, in its order
    # request id -> its images' spans, for the requests whose spans the decoder has not had yet (a
    # request's spans do not change while its table is in the snapshots: sent once, kept with the table)
    image_spans: dict = dataclasses.field(default_factory=dict)

    @property
    def num_bytes(self) -> int:
        return (sum(a.nbytes for arrays in self.chunks.values() for a in arrays)
                + sum(a.nbytes for a in self.tables.values()))


class SnapshotEncoder:
    """Client side: what changed since the snapshot sent last (chunks and tables compared by identity:
    the mirror copies a chunk only when it changed and replaces a table, never writes into one)."""

    def __init__(self):
        self._chunks: dict[str, tuple] = {name: () for name in ARRAY_NAMES}
        self._tables: dict[str, np.ndarray] = {}
        self._spans: Mapping[str, tuple] = {}

    def encode(self, snapshot: KVSnapshot) -> SnapshotUpdate:
        new = snapshot.chunks
        num_chunks = len(new["states"])
        old = self._chunks if len(self._chunks["states"]) == num_chunks else None
        changed = {i: tuple(new[name][i] for name in ARRAY_NAMES) for i in range(num_chunks)
                   if old is None or any(new[name][i] is not old[name][i] for name in ARRAY_NAMES)}
        tables = {rid: ids for rid, ids in snapshot.tables.items() if self._tables.get(rid) is not ids}
        spans = {rid: s for rid, s in snapshot.image_spans.items() if self._spans.get(rid) != s}
        self._chunks = dict(new)
        self._tables = dict(snapshot.tables)
        self._spans = snapshot.image_spans
        scalars = {name: getattr(snapshot, name) for name in _SCALARS}
        return SnapshotUpdate(scalars, num_chunks, changed, tables, tuple(snapshot.tables), spans)


class SnapshotDecoder:
    """Window side: applies updates in order and hands out snapshots that share unchanged chunks."""

    def __init__(self):
        self._chunks: dict[str, list] = {name: [] for name in ARRAY_NAMES}
        self._tables: dict[str, np.ndarray] = {}
        self._spans: dict[str, tuple] = {}

    def decode(self, update: SnapshotUpdate) -> KVSnapshot:
        if len(self._chunks["states"]) != update.num_chunks:
            self._chunks = {name: [None] * update.num_chunks for name in ARRAY_NAMES}
        for i, arrays in update.chunks.items():
            for name, array in zip(ARRAY_NAMES, arrays):
                self._chunks[name][i] = array if not array.flags.writeable else _readonly(array)
        tables = {}
        for rid in update.table_ids:
            ids = update.tables.get(rid)
            if ids is not None and ids.flags.writeable:
                ids = _readonly(ids)
            tables[rid] = ids if ids is not None else self._tables[rid]
        self._tables = tables
        self._spans = {rid: update.image_spans.get(rid) or self._spans[rid] for rid in update.table_ids
                       if rid in update.image_spans or rid in self._spans}
        chunks = {name: tuple(parts) for name, parts in self._chunks.items()}
        spans = MappingProxyType(dict(self._spans)) if self._spans else NO_IMAGE_SPANS
        return KVSnapshot(chunks=MappingProxyType(chunks), tables=MappingProxyType(dict(tables)),
                          image_spans=spans, **update.scalars)


# ------------------------------------------------------------------ statistics
@dataclass(frozen=True)
class StatsUpdate:
    version: int
    rows: np.ndarray  # (len(COLUMNS), new points), oldest first
    totals: StatsTotals
    restart: bool  # a new series (a new engine): the window's ring starts again
    start_id: int = 0  # the engine start the series belongs to


class StatsEncoder:
    def __init__(self):
        self._version = 0

    def restart(self) -> None:
        """The next series belongs to a new engine: send it whole."""
        self._version = 0

    def encode(self, stats: StatsSeries) -> StatsUpdate:
        series = stats.series
        restart = series.version <= self._version or self._version == 0
        count = len(series) if restart else min(series.version - self._version, len(series))
        rows = (np.array([series[name][len(series) - count:] for name in COLUMNS]) if count and len(series)
                else np.zeros((len(COLUMNS), 0)))
        self._version = series.version
        return StatsUpdate(series.version, rows, stats.totals, restart, stats.start_id)


class StatsDecoder:
    def __init__(self, capacity: int = CAPACITY):
        self.capacity = capacity
        self._ring = RingBuffer(COLUMNS, capacity)

    def decode(self, update: StatsUpdate) -> StatsSeries:
        if update.restart:
            self._ring = RingBuffer(COLUMNS, self.capacity)
        for row in update.rows.T:
            self._ring.append(row)
        self._ring.version = update.version
        return StatsSeries(self._ring.publish(), update.totals, update.start_id)


# ------------------------------------------------------------------ the batch
@dataclass(frozen=True)
class Batch:
    """What the client sends at most every ``BATCH_INTERVAL_S``. The window applies it in this order:
    ``snapshot_reset`` (an EngineReady came: the last engine's snapshot is void), the snapshot, the
    statistics, then ``messages`` in order (the loop's events, and :class:`Reply` values)."""

    messages: tuple
    snapshot: SnapshotUpdate | None = None
    snapshot_reset: bool = False
    stats: StatsUpdate | None = None


# ------------------------------------------------------------------ the setting
ENGINE_CLIENT_ENV = "WORKBENCH_ENGINE_CLIENT"
ENGINE_CLIENT_KINDS = ("process", "thread")


def engine_client_kind(kind: str | None = None) -> str:
    """Where vLLM's client loop runs: ``kind`` if given, else ``WORKBENCH_ENGINE_CLIENT``; "process"
    (a process of its own, the default) or "thread" (a thread of the window's process)."""
    kind = (kind or os.environ.get(ENGINE_CLIENT_ENV, "") or "process").strip().lower()
    if kind not in ENGINE_CLIENT_KINDS:
        raise ValueError(f"{ENGINE_CLIENT_ENV}={kind!r}: use process or thread")
    return kind
