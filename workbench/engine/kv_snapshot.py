"""Block states, and the client-side mirror of vLLM's block pool built from versioned deltas.

The engine-core process sends deltas (see ``vllm_plugin.kv_methods``); :class:`KVPoolMirror` applies them and
hands out :class:`KVSnapshot` values: immutable, with read-only arrays, safe to pass to any thread.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Mapping

import numpy as np

from workbench.engine.images import ImageSpan

BLOCK_STATE_NULL = 0
BLOCK_STATE_FREE = 1
BLOCK_STATE_CACHED = 2  # ref_cnt == 0 with a hash: evictable, reusable by a prefix hit
BLOCK_STATE_IN_USE = 3  # ref_cnt == 1
BLOCK_STATE_SHARED = 4  # ref_cnt > 1: a prefix used by several requests
NUM_BLOCK_STATES = 5
BLOCK_STATE_NAMES = ("null", "free", "cached", "in use", "shared")


# Snapshots share the pool's arrays in chunks of this many blocks: each snapshot copies only the
# chunks that changed since the one before. Changes cluster (vLLM hands out free blocks in queue
# order): at 300,000 blocks and 256 running requests a 10 Hz delta touched 1-2 of 37 chunks.
CHUNK_BLOCKS = 8192
ARRAY_NAMES = ("states", "ref_cnts", "hashed", "changed_at")
_DTYPES = {"states": np.int8, "ref_cnts": np.int32, "hashed": np.bool_, "changed_at": np.int32}


def _readonly(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


NO_IMAGE_SPANS: Mapping[str, tuple[ImageSpan, ...]] = MappingProxyType({})


@dataclass(frozen=True)
class KVSnapshot:
    """The block pool at one moment, as the GUI and the benchmarks see it."""

    version: int
    num_blocks: int
    block_size: int
    chunks: Mapping[str, tuple[np.ndarray, ...]]  # ARRAY_NAMES -> read-only chunks, shared between snapshots
    tables: Mapping[str, np.ndarray]  # request id (the caller's own) -> block ids
    counts: tuple[int, ...]  # blocks per state
    kv_usage: float  # vLLM's own figure: blocks in use / usable blocks
    tokens_stored: int
    engine_ms: float  # time spent inside the engine-core process (wall clock)
    engine_cpu_ms: float  # CPU time of that thread: the same less any wait for a core or the GIL
    round_trip_ms: float
    scan_problems: tuple[str, ...] | None = None  # set when checked against a full scan: () = equal
    client_ms: float = 0.0  # the stepping thread's time to apply the delta and publish this snapshot
    transport_ms: float = 0.0  # the engine core's answer ready -> decoded in the client (see kv_probe)
    taken_at: float = field(default_factory=time.monotonic)
    # Request id (a key of ``tables``) -> where each of its images' tokens sit in its prompt; only the
    # requests that sent images. Their blocks are ``tables[request_id][span.blocks(block_size)]``.
    image_spans: Mapping[str, tuple[ImageSpan, ...]] = field(default_factory=lambda: NO_IMAGE_SPANS)

    # Whole read-only arrays, one value per block, joined from the chunks on first use by the
    # thread that reads them (the GUI's), not by the one that steps the engine.
    @cached_property
    def states(self) -> np.ndarray:  # int8, BLOCK_STATE_*
        return self._joined("states")

    @cached_property
    def ref_cnts(self) -> np.ndarray:  # int32
        return self._joined("ref_cnts")

    @cached_property
    def hashed(self) -> np.ndarray:  # bool: has a prefix-cache hash
        return self._joined("hashed")

    @cached_property
    def changed_at(self) -> np.ndarray:  # int32: the version in which the block last changed
        return self._joined("changed_at")

    def _joined(self, name: str) -> np.ndarray:
        parts = self.chunks[name]
        if len(parts) == 1:
            return parts[0]
        return _readonly(np.concatenate(parts) if parts else np.zeros(0, _DTYPES[name]))

    @property
    def num_in_use(self) -> int:
        return self.counts[BLOCK_STATE_IN_USE] + self.counts[BLOCK_STATE_SHARED]

    @property
    def token_occupancy(self) -> float:
        """Tokens stored / token slots of the blocks in use: the partial-block waste usage hides."""
        slots = self.num_in_use * self.block_size
        return self.tokens_stored / slots if slots else 0.0

    @property
    def pool_token_occupancy(self) -> float:
        """Tokens stored / token slots of the whole pool (the null block left out): on the same
        scale as vLLM's block-based ``kv_usage``, which counts a block holding one token as full."""
        slots = (self.num_blocks - 1) * self.block_size
        return self.tokens_stored / slots if slots > 0 else 0.0

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
        self._chunks: dict[str, list[np.ndarray]] = {name: [] for name in ARRAY_NAMES}  # as last published
        self._dirty_chunks: set[int] = set()

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
            self._chunks = {name: [] for name in ARRAY_NAMES}
        ids = np.frombuffer(delta["ids"], np.int32)
        if ids.size and not delta["full"]:  # after a resync every chunk is published anyway
            self._dirty_chunks.update((ids // CHUNK_BLOCKS).tolist())
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
                 scan_problems: tuple[str, ...] | None = None, client_since: float | None = None,
                 transport_ms: float = 0.0,
                 image_spans: Mapping[str, tuple[ImageSpan, ...]] = NO_IMAGE_SPANS) -> KVSnapshot:
        """An immutable copy; engine-internal request ids are translated with ``id_map``; ``image_spans``
        (by the caller's request id) are kept for the requests whose tables the snapshot holds.

        Only the chunks changed since the last snapshot are copied; the others, and the block tables
        (:meth:`apply` replaces a table, never writes into one), are shared with earlier snapshots."""
        tables = {id_map.get(r, r): ids for r, ids in self.tables.items()}
        spans = {r: image_spans[r] for r in tables if r in image_spans} if image_spans else {}
        chunks = self._publish_chunks()
        return KVSnapshot(
            version=self.version,
            num_blocks=len(self.states),
            block_size=self.block_size,
            chunks=MappingProxyType(chunks),
            tables=MappingProxyType(tables),
            counts=tuple(self.last.get("counts", [0] * NUM_BLOCK_STATES)),
            kv_usage=self.last.get("kv_usage", 0.0),
            tokens_stored=self.last.get("tokens_stored", 0),
            engine_ms=self.last.get("engine_ns", 0) / 1e6,
            engine_cpu_ms=self.last.get("engine_cpu_ns", 0) / 1e6,
            round_trip_ms=round_trip_ms,
            scan_problems=scan_problems,
            client_ms=(time.perf_counter() - client_since) * 1e3 if client_since is not None else 0.0,
            transport_ms=transport_ms,
            image_spans=MappingProxyType(spans) if spans else NO_IMAGE_SPANS,
        )

    def _publish_chunks(self) -> dict[str, tuple[np.ndarray, ...]]:
        count = -(-len(self.states) // CHUNK_BLOCKS)
        if len(self._chunks["states"]) != count:  # first snapshot after a resync: every chunk
            self._chunks = {name: [None] * count for name in ARRAY_NAMES}
            self._dirty_chunks = set(range(count))
        for i in self._dirty_chunks:
            part = slice(i * CHUNK_BLOCKS, (i + 1) * CHUNK_BLOCKS)
            for name in ARRAY_NAMES:
                self._chunks[name][i] = _readonly(getattr(self, name)[part].copy())
        self._dirty_chunks = set()
        return {name: tuple(chunks) for name, chunks in self._chunks.items()}


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
