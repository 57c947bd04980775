"""The methods the plugin adds to ``EngineCore``; they run in the engine-core process, between steps.

The client calls them with ``engine_core.call_utility("workbench_kv_delta", ...)`` (see
``utility_call.request_utility``); what they read is consistent because no step runs meanwhile.
"""
from __future__ import annotations

import time

import numpy as np

from workbench.engine.kv_snapshot import (
    BLOCK_STATE_CACHED,
    BLOCK_STATE_FREE,
    BLOCK_STATE_IN_USE,
    BLOCK_STATE_NULL,
    BLOCK_STATE_SHARED,
)
from workbench.engine.vllm_plugin.block_tracking import PoolMirror, uninstall_dirty_tracking


def _kv_parts(core):
    manager = core.scheduler.kv_cache_manager
    first_group = manager.coordinator.single_type_managers[0]
    return manager.block_pool, first_group, core.scheduler.requests, first_group.block_size


def kv_delta(self, client_version: int, with_full_scan: bool = False) -> dict:
    """A versioned delta of the block pool since ``client_version``; a full resync after a gap."""
    started = time.perf_counter_ns()
    cpu_started = time.thread_time_ns()
    pool, group, requests, block_size = _kv_parts(self)
    mirror = getattr(self, "_workbench_mirror", None)
    if mirror is None or mirror.pool is not pool:
        mirror = self._workbench_mirror = PoolMirror(pool)
    full = client_version != mirror.version or mirror.version == 0
    ids, states, ref_cnts, hashed = mirror.resync() if full else mirror.changes()
    append_only = type(group).__name__ == "FullAttentionManager"
    rows, table_ids, removed, unfilled = mirror.table_changes(group.req_to_blocks, requests, block_size, append_only)
    mirror.version += 1
    num_in_use = mirror.counts[BLOCK_STATE_IN_USE] + mirror.counts[BLOCK_STATE_SHARED]
    delta = {
        "version": mirror.version,
        "full": full,
        "num_blocks": mirror.num_blocks,
        "block_size": block_size,
        "ids": ids,
        "states": states,
        "ref_cnts": ref_cnts,
        "hashed": hashed,
        "tables": rows,
        "table_ids": table_ids,
        "removed": removed,
        "counts": list(mirror.counts),
        "kv_usage": float(pool.get_usage()),
        "tokens_stored": max(0, num_in_use * block_size - unfilled),
        "tracking": "descriptors" if mirror.tracking else "scan",
    }
    delta["engine_ns"] = time.perf_counter_ns() - started
    delta["engine_cpu_ns"] = time.thread_time_ns() - cpu_started
    delta["engine_done_ns"] = time.perf_counter_ns()  # CLOCK_MONOTONIC: the client's clock too (Linux)
    if with_full_scan:
        delta["scan"] = kv_scan(self)
    return delta


def kv_untrack(self) -> bool:
    """Removes the change tracking until the next delta (which resyncs); for benchmarks."""
    pool = _kv_parts(self)[0]
    uninstall_dirty_tracking(type(pool.blocks[0]))
    self._workbench_mirror = None
    return True


def kv_scan(self) -> dict:
    """An independent full scan of the pool and of every request's block table (for checks)."""
    pool, group, _, _ = _kv_parts(self)
    req_to_blocks = group.req_to_blocks
    state, ref, hashed = _scan_python(pool.blocks)
    tables = {r: np.fromiter((b.block_id for b in bl), np.int32, len(bl)).tobytes()
              for r, bl in req_to_blocks.items()}
    return {"states": state.tobytes(), "ref_cnts": ref.tobytes(), "hashed": hashed.tobytes(), "tables": tables}


def _state_of(block, ref_cnt: int, hashed: bool) -> int:
    if block.is_null:
        return BLOCK_STATE_NULL
    if ref_cnt > 1:
        return BLOCK_STATE_SHARED
    if ref_cnt == 1:
        return BLOCK_STATE_IN_USE
    return BLOCK_STATE_CACHED if hashed else BLOCK_STATE_FREE


def _scan_python(blocks) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The plain per-block reading, apart from :func:`block_tracking.read_blocks`, so that checks compare two ways."""
    refs = [block.ref_cnt for block in blocks]
    hashes = [block.block_hash is not None for block in blocks]
    states = [_state_of(block, ref, hashed) for block, ref, hashed in zip(blocks, refs, hashes)]
    return np.array(states, np.int8), np.array(refs, np.int32), np.array(hashes, np.bool_)
