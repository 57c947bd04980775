"""Block states, and the client-side mirror of vLLM's block pool built from versioned deltas.

The engine-core process sends deltas (see ``kv_plugin``); :class:`KVPoolMirror` applies them and
hands out :class:`KVSnapshot` values: immutable, with read-only arrays, safe to pass to any thread.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

import numpy as np

BLOCK_STATE_NULL = 0
BLOCK_STATE_FREE = 1
BLOCK_STATE_CACHED = 2  # ref_cnt == 0 with a hash: evictable, reusable by a prefix hit
BLOCK_STATE_IN_USE = 3  # ref_cnt == 1
BLOCK_STATE_SHARED = 4  # ref_cnt > 1: a prefix used by several requests
NUM_BLOCK_STATES = 5
BLOCK_STATE_NAMES = ("null", "free", "cached", "in use", "shared")


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


@dataclass(frozen=True)
class KVSnapshot:
    """The block pool at one moment, as the GUI and the benchmarks see it."""

    version: int
    num_blocks: int
    block_size: int
    states: np.ndarray  # int8 per block, BLOCK_STATE_*
    ref_cnts: np.ndarray  # int32 per block
    hashed: np.ndarray  # bool per block: has a prefix-cache hash
    changed_at: np.ndarray  # int32 per block: the version in which it last changed
    tables: Mapping[str, np.ndarray]  # request id (the caller's own) -> block ids
    counts: tuple[int, ...]  # blocks per state
    kv_usage: float  # vLLM's own figure: blocks in use / usable blocks
    tokens_stored: int
    engine_ms: float  # time spent inside the engine-core process (wall clock)
    engine_cpu_ms: float  # CPU time of that thread: the same less any wait for a core or the GIL
    round_trip_ms: float
    scan_problems: tuple[str, ...] | None = None  # set when checked against a full scan: () = equal
    taken_at: float = field(default_factory=time.monotonic)

    @property
    def num_in_use(self) -> int:
        return self.counts[BLOCK_STATE_IN_USE] + self.counts[BLOCK_STATE_SHARED]

    @property
    def token_occupancy(self) -> float:
        """Tokens stored / token slots of the blocks in use: the partial-block waste usage hides."""
        slots = self.num_in_use * self.block_size
        return self.tokens_stored / slots if slots else 0.0

    def owners_of(self, block_id: int) -> list[str]:
        return [req for req, ids in self.tables.items() if block_id in ids]


_NO_BLOCKS = _readonly(np.zeros(0, np.int32))


class KVPoolMirror:
    """Applies the engine's deltas; the only writer is the thread that steps the engine."""

    def __init__(self):
        self.version = 0
        self.block_size = 0
        self.states = np.zeros(0, np.int8)
        self.ref_cnts = np.zeros(0, np.int32)
        self.hashed = np.zeros(0, np.bool_)
        self.changed_at = np.zeros(0, np.int32)
        self.tables: dict[str, np.ndarray] = {}
        self.last: dict = {}

    def reset(self) -> None:
        """Forget everything: the next delta requested is a full resync (a new engine)."""
        self.__init__()

    def apply(self, delta: dict) -> None:
        if delta["full"]:
            n = delta["num_blocks"]
            self.states = np.zeros(n, np.int8)
            self.ref_cnts = np.zeros(n, np.int32)
            self.hashed = np.zeros(n, np.bool_)
            self.changed_at = np.zeros(n, np.int32)
            self.tables = {}
        ids = np.frombuffer(delta["ids"], np.int32)
        self.states[ids] = np.frombuffer(delta["states"], np.int8)
        self.ref_cnts[ids] = np.frombuffer(delta["ref_cnts"], np.int32)
        self.hashed[ids] = np.frombuffer(delta["hashed"], np.bool_)
        self.changed_at[ids] = delta["version"]
        appended = np.frombuffer(delta["table_ids"], np.int32)
        start = 0
        for req_id, offset, count in delta["tables"]:
            kept = self.tables.get(req_id, _NO_BLOCKS)[:offset]
            self.tables[req_id] = _readonly(np.concatenate([kept, appended[start:start + count]]))
            start += count
        for req_id in delta["removed"]:
            self.tables.pop(req_id, None)
        self.version = delta["version"]
        self.block_size = delta["block_size"]
        self.last = delta

    def snapshot(self, id_map: Mapping[str, str], round_trip_ms: float,
                 scan_problems: tuple[str, ...] | None = None) -> KVSnapshot:
        """An immutable copy; engine-internal request ids are translated with ``id_map``.

        Block tables are shared, not copied: :meth:`apply` replaces a table, never writes into one."""
        tables = {id_map.get(r, r): ids for r, ids in self.tables.items()}
        return KVSnapshot(
            version=self.version,
            num_blocks=len(self.states),
            block_size=self.block_size,
            states=_readonly(self.states.copy()),
            ref_cnts=_readonly(self.ref_cnts.copy()),
            hashed=_readonly(self.hashed.copy()),
            changed_at=_readonly(self.changed_at.copy()),
            tables=MappingProxyType(tables),
            counts=tuple(self.last.get("counts", [0] * NUM_BLOCK_STATES)),
            kv_usage=self.last.get("kv_usage", 0.0),
            tokens_stored=self.last.get("tokens_stored", 0),
            engine_ms=self.last.get("engine_ns", 0) / 1e6,
            engine_cpu_ms=self.last.get("engine_cpu_ns", 0) / 1e6,
            round_trip_ms=round_trip_ms,
            scan_problems=scan_problems,
        )


def scan_matches(mirror: KVPoolMirror, scan: dict) -> list[str]:
    """Differences between the delta-built mirror and an independent full scan (empty when equal)."""
    problems = []
    for name, dtype in (("states", np.int8), ("ref_cnts", np.int32), ("hashed", np.bool_)):
        expected = np.frombuffer(scan[name], dtype)
        mismatched = np.flatnonzero(expected != getattr(mirror, name))
        if mismatched.size:
            problems.append(f"{name} differ at blocks {mismatched[:10].tolist()}")
    expected_tables = {r: np.frombuffer(raw, np.int32).tolist() for r, raw in scan["tables"].items()}
    actual_tables = {r: ids.tolist() for r, ids in mirror.tables.items()}
    if expected_tables != actual_tables:
        problems.append(f"block tables differ: scan {expected_tables} mirror {actual_tables}")
    return problems
