"""The workbench's vLLM general plugin: the one module that reads vLLM internals.

Supported vLLM versions: 0.26 to 0.33 (checked on 0.26.0 CUDA and 0.32.0 CPU). The names read here,
``scheduler.kv_cache_manager.block_pool`` (``blocks``, ``get_num_free_blocks``, ``get_usage``),
``coordinator.single_type_managers[0].req_to_blocks``, ``KVCacheBlock.ref_cnt`` / ``_block_hash`` /
``is_null`` and ``scheduler.requests[...].num_computed_tokens``, are the same across that range.

On the client side it holds :func:`request_utility`, which sends a utility call without waiting
for it (``call_utility`` blocks the stepping thread for one to two engine steps, 20–30 ms on an
H200), and one workaround, :func:`wake_blocked_step`: vLLM's synchronous
client (0.26 to 0.33) marks the engine dead when its process exits but leaves a ``step()`` that is
already waiting for output blocked forever; the workbench's watchdog wakes it with vLLM's own
``EngineDeadError``.

vLLM calls :func:`register` in every one of its processes (entry point group
``vllm.general_plugins``). It adds methods to ``EngineCore`` that the client calls with
``engine_core.call_utility(...)``; they run inside the engine-core process, between steps, so
what they read is consistent. Block changes are tracked by data descriptors on ``KVCacheBlock``'s
``ref_cnt`` and ``_block_hash``, so a delta costs what changed, not the size of the pool.
"""
from __future__ import annotations

import multiprocessing
import os
import time
import uuid
from concurrent.futures import Future

import numpy as np

from workbench.engine.kv_snapshot import (
    BLOCK_STATE_CACHED,
    BLOCK_STATE_FREE,
    BLOCK_STATE_IN_USE,
    BLOCK_STATE_NULL,
    BLOCK_STATE_SHARED,
    NUM_BLOCK_STATES,
)

SUPPORTED_VLLM = ((0, 26), (0, 33))  # first and last supported minor release
PHASE_FILE_ENV = "WORKBENCH_PHASE_FILE"
OWNER_ENV = "WORKBENCH_OWNER"
_TRACKED_FIELDS = ("ref_cnt", "_block_hash")
_dirty_block_ids: set[int] = set()


def register() -> None:
    """Entry point: called by vLLM in each of its processes."""
    if multiprocessing.parent_process() is not None and os.environ.get(OWNER_ENV):
        _die_with_parent()
    try:
        from vllm.v1.engine.core import EngineCore
        from vllm.v1.executor.abstract import Executor
    except ImportError:  # a vLLM outside the supported range: the workbench reports it on start
        return
    EngineCore.workbench_kv_delta = _kv_delta
    EngineCore.workbench_kv_scan = _kv_scan
    if os.environ.get(PHASE_FILE_ENV) and not getattr(EngineCore, "_workbench_phases", False):
        EngineCore._workbench_phases = True
        _report_phase_on(Executor, "__init__", "weights")
        _report_phase_on(EngineCore, "_initialize_kv_caches", "profiling")
        _report_phase_on(Executor, "initialize_from_config", "kv_alloc")


def request_utility(engine, method: str, *args) -> Future:
    """``engine_core.call_utility`` without the wait: the result arrives on the returned future."""
    client = engine.engine_core
    results, send = getattr(client, "utility_results", None), getattr(client, "_send_input", None)
    if not isinstance(results, dict) or send is None:  # another client: fall back to the blocking call
        future: Future = Future()
        future.set_result(client.call_utility(method, *args))
        return future
    from vllm.v1.engine import EngineCoreRequestType

    call_id = uuid.uuid1().int >> 64
    future = Future()
    results[call_id] = future
    send(EngineCoreRequestType.UTILITY, (0, call_id, method, args))
    return future


def wake_blocked_step(engine) -> None:
    """Makes a ``step()`` blocked on a dead engine core raise ``EngineDeadError``."""
    from vllm.v1.engine.exceptions import EngineDeadError

    client = engine.engine_core
    outputs_queue = getattr(client, "outputs_queue", None)
    if outputs_queue is not None:
        outputs_queue.put_nowait(EngineDeadError())


# ---------------------------------------------------------------- engine start phases, process life

def write_phase(phase: str, detail: str = "") -> None:
    path = os.environ.get(PHASE_FILE_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{phase}\t{time.time():.3f}\t{detail.replace(chr(10), ' ')}\n")


def _report_phase_on(cls, name: str, phase: str) -> None:
    original = getattr(cls, name)

    def wrapper(self, *args, **kwargs):
        write_phase(phase)
        try:
            return original(self, *args, **kwargs)
        except BaseException as exc:
            write_phase("error", f"{type(exc).__name__}: {exc}")
            raise

    wrapper.__wrapped__ = original
    setattr(cls, name, wrapper)


def _die_with_parent() -> None:
    """An engine process is killed with its parent, even when the parent is SIGKILLed (Linux)."""
    try:
        import ctypes
        import signal

        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the reaper at the next start removes leftovers


# ---------------------------------------------------------------- block tracking

def _install_dirty_tracking(block_cls) -> bool:
    """Makes every write to a tracked field of any KVCacheBlock record the block id.

    ``KVCacheBlock`` is a slotted dataclass in recent vLLM and a plain one in older releases; the
    getter stays the C-level slot getter where there is one, so reads cost what they did.
    """
    if getattr(block_cls, "_workbench_tracked", False):
        return True
    fields = getattr(block_cls, "__dataclass_fields__", {})
    if not all(f in fields for f in _TRACKED_FIELDS + ("block_id",)):
        return False
    slotted = "__slots__" in block_cls.__dict__
    for field in _TRACKED_FIELDS:
        setattr(block_cls, field, _slot_field(block_cls, field) if slotted else _dict_field(field))
    block_cls._workbench_tracked = True
    return True


def _slot_field(block_cls, name: str) -> property:
    slot = block_cls.__dict__[name]
    get_block_id = block_cls.__dict__["block_id"].__get__

    def set_(block, value, _set=slot.__set__, _add=_dirty_block_ids.add):
        _set(block, value)
        _add(get_block_id(block))

    return property(slot.__get__, set_)


def _dict_field(name: str) -> property:
    def get(block):
        return block.__dict__[name]

    def set_(block, value):
        block.__dict__[name] = value
        _dirty_block_ids.add(block.__dict__["block_id"])

    return property(get, set_)


def _block_state(block) -> tuple[int, int, bool]:
    ref_cnt = block.ref_cnt
    hashed = block.block_hash is not None
    if block.is_null:
        state = BLOCK_STATE_NULL
    elif ref_cnt > 1:
        state = BLOCK_STATE_SHARED
    elif ref_cnt == 1:
        state = BLOCK_STATE_IN_USE
    else:
        state = BLOCK_STATE_CACHED if hashed else BLOCK_STATE_FREE
    return state, ref_cnt, hashed


def _scan_arrays(blocks) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    triples = [_block_state(b) for b in blocks]
    state = np.fromiter((t[0] for t in triples), np.int8, len(triples))
    ref = np.fromiter((t[1] for t in triples), np.int32, len(triples))
    hashed = np.fromiter((t[2] for t in triples), np.bool_, len(triples))
    return state, ref, hashed


class _PoolMirror:
    """What the client was last sent; lives on the EngineCore instance."""

    def __init__(self, pool):
        self.pool = pool
        self.version = 0
        self.tracking = _install_dirty_tracking(type(pool.blocks[0]))
        self.state = np.zeros(0, np.int8)
        self.ref = np.zeros(0, np.int32)
        self.hashed = np.zeros(0, np.bool_)
        self.counts = np.zeros(NUM_BLOCK_STATES, np.int64)
        self.sent_tables: dict[str, tuple[int, int]] = {}

    def resync(self) -> np.ndarray:
        _dirty_block_ids.clear()
        self.state, self.ref, self.hashed = _scan_arrays(self.pool.blocks)
        self.counts = np.bincount(self.state, minlength=NUM_BLOCK_STATES).astype(np.int64)
        self.sent_tables.clear()
        return np.arange(len(self.state), dtype=np.int32)

    def changed_ids(self) -> np.ndarray:
        if not self.tracking:
            return self._changed_by_scan()
        ids = np.fromiter(_dirty_block_ids, np.int32, len(_dirty_block_ids))
        _dirty_block_ids.clear()
        if ids.size == 0:
            return ids
        blocks = self.pool.blocks
        triples = [_block_state(blocks[i]) for i in ids.tolist()]
        state = np.fromiter((t[0] for t in triples), np.int8, len(triples))
        ref = np.fromiter((t[1] for t in triples), np.int32, len(triples))
        hashed = np.fromiter((t[2] for t in triples), np.bool_, len(triples))
        differs = (state != self.state[ids]) | (ref != self.ref[ids]) | (hashed != self.hashed[ids])
        ids, state, ref, hashed = ids[differs], state[differs], ref[differs], hashed[differs]
        np.subtract.at(self.counts, self.state[ids], 1)
        np.add.at(self.counts, state, 1)
        self.state[ids], self.ref[ids], self.hashed[ids] = state, ref, hashed
        return ids

    def _changed_by_scan(self) -> np.ndarray:
        state, ref, hashed = _scan_arrays(self.pool.blocks)
        ids = np.flatnonzero((state != self.state) | (ref != self.ref) | (hashed != self.hashed))
        self.state, self.ref, self.hashed = state, ref, hashed
        self.counts = np.bincount(state, minlength=NUM_BLOCK_STATES).astype(np.int64)
        return ids.astype(np.int32)

    def table_changes(self, req_to_blocks) -> tuple[dict, list]:
        """Appended block ids per request since the last call, and the requests that left."""
        changes = {}
        for req_id, blocks in req_to_blocks.items():
            key, num = id(blocks), len(blocks)
            prev_key, prev_num = self.sent_tables.get(req_id, (None, 0))
            offset = prev_num if prev_key == key and prev_num <= num else 0
            if prev_key == key and prev_num == num:
                continue
            ids = np.fromiter((b.block_id for b in blocks[offset:]), np.int32, num - offset)
            changes[req_id] = (offset, ids.tobytes())
            self.sent_tables[req_id] = (key, num)
        removed = [r for r in self.sent_tables if r not in req_to_blocks]
        for req_id in removed:
            del self.sent_tables[req_id]
        return changes, removed


# ---------------------------------------------------------------- the utility methods

def _kv_parts(core):
    manager = core.scheduler.kv_cache_manager
    first_group = manager.coordinator.single_type_managers[0]
    return manager.block_pool, first_group.req_to_blocks, core.scheduler.requests, first_group.block_size


def _tokens_stored(req_to_blocks, requests, block_size: int, num_in_use: int) -> int:
    """Tokens held by the blocks in use: slots in use less the unfilled tail of each request."""
    unfilled = 0
    for req_id, blocks in req_to_blocks.items():
        request = requests.get(req_id)
        computed = request.num_computed_tokens if request is not None else 0
        unfilled += max(0, len(blocks) * block_size - computed)
    return max(0, num_in_use * block_size - unfilled)


def _kv_delta(self, client_version: int, with_full_scan: bool = False) -> dict:
    """A versioned delta of the block pool since ``client_version``; a full resync after a gap."""
    started = time.perf_counter_ns()
    pool, req_to_blocks, requests, block_size = _kv_parts(self)
    mirror = getattr(self, "_workbench_mirror", None)
    if mirror is None or mirror.pool is not pool:
        mirror = self._workbench_mirror = _PoolMirror(pool)
    full = client_version != mirror.version or mirror.version == 0
    ids = mirror.resync() if full else mirror.changed_ids()
    tables, removed = mirror.table_changes(req_to_blocks)
    mirror.version += 1
    num_in_use = int(mirror.counts[BLOCK_STATE_IN_USE] + mirror.counts[BLOCK_STATE_SHARED])
    delta = {
        "version": mirror.version,
        "full": full,
        "num_blocks": len(mirror.state),
        "block_size": block_size,
        "ids": ids.tobytes(),
        "states": mirror.state[ids].tobytes(),
        "ref_cnts": mirror.ref[ids].tobytes(),
        "hashed": mirror.hashed[ids].tobytes(),
        "tables": tables,
        "removed": removed,
        "counts": mirror.counts.tolist(),
        "kv_usage": float(pool.get_usage()),
        "tokens_stored": _tokens_stored(req_to_blocks, requests, block_size, num_in_use),
        "tracking": "descriptors" if mirror.tracking else "scan",
    }
    delta["engine_ns"] = time.perf_counter_ns() - started
    if with_full_scan:
        delta["scan"] = _kv_scan(self)
    return delta


def _kv_scan(self) -> dict:
    """An independent full scan of the pool and of every request's block table (for checks)."""
    pool, req_to_blocks, _, _ = _kv_parts(self)
    state, ref, hashed = _scan_arrays(pool.blocks)
    tables = {r: np.fromiter((b.block_id for b in bl), np.int32, len(bl)).tobytes()
              for r, bl in req_to_blocks.items()}
    return {"states": state.tobytes(), "ref_cnts": ref.tobytes(), "hashed": hashed.tobytes(), "tables": tables}
