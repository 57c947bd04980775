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

import array
import itertools
import multiprocessing
import operator
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
_ABSENT = object()


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
    EngineCore.workbench_kv_untrack = _kv_untrack
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
    block_cls._workbench_originals = {f: block_cls.__dict__.get(f, _ABSENT) for f in _TRACKED_FIELDS}
    for field in _TRACKED_FIELDS:
        setattr(block_cls, field, _slot_field(block_cls, field) if slotted else _dict_field(field))
    block_cls._workbench_tracked = True
    return True


def _uninstall_dirty_tracking(block_cls) -> None:
    """Puts vLLM's own attributes back (benchmarks compare against an untouched engine)."""
    if not getattr(block_cls, "_workbench_tracked", False):
        return
    for field, original in block_cls._workbench_originals.items():
        if original is _ABSENT:
            delattr(block_cls, field)
        else:
            setattr(block_cls, field, original)
    block_cls._workbench_tracked = False
    _dirty_block_ids.clear()


def _slot_field(block_cls, name: str) -> property:
    slot = block_cls._workbench_originals[name]
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


_get_ref_cnt = operator.attrgetter("ref_cnt")
_get_hash = operator.attrgetter("_block_hash")
_get_null = operator.attrgetter("is_null")
_get_block_id = operator.attrgetter("block_id")


# Block state by min(ref_cnt, 2) * 2 + hashed (the null block apart): one rule for both reading paths.
_STATE_BY_REF_AND_HASH = bytes([BLOCK_STATE_FREE, BLOCK_STATE_CACHED, BLOCK_STATE_IN_USE, BLOCK_STATE_IN_USE,
                                BLOCK_STATE_SHARED, BLOCK_STATE_SHARED])
_STATE_TABLE = np.frombuffer(_STATE_BY_REF_AND_HASH, np.int8)


def _read_blocks(blocks: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """State, ref_cnt and hashed of ``blocks``: three C-level passes, the states from one table."""
    n = len(blocks)
    ref = np.fromiter(map(_get_ref_cnt, blocks), np.int32, n)
    hashed = np.fromiter(map(operator.is_not, map(_get_hash, blocks), itertools.repeat(None, n)), np.bool_, n)
    null = np.fromiter(map(_get_null, blocks), np.bool_, n)
    state = _STATE_TABLE[np.minimum(ref, 2) * 2 + hashed]
    state[null] = BLOCK_STATE_NULL
    return state, ref, hashed


_Changes = tuple[bytes, bytes, bytes, bytes]  # block ids (int32), states (int8), ref_cnts (int32), hashed (bool)
assert array.array("i").itemsize == 4
_VECTOR_FROM = 2048  # dirty blocks from which numpy beats a plain loop (an engine step leaves caches cold)


class _PoolMirror:
    """What the client was last sent; lives on the EngineCore instance.

    Kept in ``bytearray`` / ``array`` rather than numpy arrays: a delta usually touches tens of
    blocks, and between engine steps each numpy call costs 10–30 µs (cold caches after a forward
    pass) while a plain item access costs well under one. Numpy views serve the large cases."""

    def __init__(self, pool):
        self.pool = pool
        self.version = 0
        self.tracking = _install_dirty_tracking(type(pool.blocks[0]))
        self.state = bytearray()
        self.ref = array.array("i")
        self.hashed = bytearray()
        self.counts = [0] * NUM_BLOCK_STATES
        self.sent_tables: dict[str, tuple[int, int]] = {}

    @property
    def num_blocks(self) -> int:
        return len(self.state)

    def resync(self) -> _Changes:
        _dirty_block_ids.clear()
        state_array, ref_array, hashed_array = _read_blocks(self.pool.blocks)
        state, ref, hashed = state_array.tobytes(), ref_array.tobytes(), hashed_array.tobytes()
        self.state, self.hashed = bytearray(state), bytearray(hashed)
        self.ref = array.array("i")
        self.ref.frombytes(ref)
        self.counts = np.bincount(state_array, minlength=NUM_BLOCK_STATES).tolist()
        self.sent_tables.clear()
        return np.arange(len(state), dtype=np.int32).tobytes(), state, ref, hashed

    def changes(self) -> _Changes:
        """The blocks whose state, ref_cnt or hash changed since the last call."""
        if not self.tracking:
            return self._store(np.arange(self.num_blocks, dtype=np.int32), *_read_blocks(self.pool.blocks))
        dirty = list(_dirty_block_ids)
        _dirty_block_ids.clear()
        blocks = self.pool.blocks
        if len(dirty) >= _VECTOR_FROM:
            return self._store(np.array(dirty, np.int32), *_read_blocks([blocks[i] for i in dirty]))
        mirror_state, mirror_ref, mirror_hashed, counts = self.state, self.ref, self.hashed, self.counts
        ids, states, refs, hashes = array.array("i"), bytearray(), array.array("i"), bytearray()
        for block_id in dirty:
            block = blocks[block_id]
            ref_cnt = block.ref_cnt
            hashed = block._block_hash is not None
            if ref_cnt != mirror_ref[block_id] or hashed != mirror_hashed[block_id]:  # the state follows them
                state = BLOCK_STATE_NULL if block.is_null else _STATE_BY_REF_AND_HASH[min(ref_cnt, 2) * 2 + hashed]
                counts[mirror_state[block_id]] -= 1
                counts[state] += 1
                mirror_state[block_id], mirror_ref[block_id], mirror_hashed[block_id] = state, ref_cnt, hashed
                ids.append(block_id)
                states.append(state)
                refs.append(ref_cnt)
                hashes.append(hashed)
        return ids.tobytes(), bytes(states), refs.tobytes(), bytes(hashes)

    def _store(self, ids: np.ndarray, state: np.ndarray, ref: np.ndarray, hashed: np.ndarray) -> _Changes:
        """The vectorised path: freshly read values of ``ids`` against the mirror, through numpy views."""
        mirror_state = np.frombuffer(self.state, np.int8)
        mirror_ref = np.frombuffer(self.ref, np.int32)
        mirror_hashed = np.frombuffer(self.hashed, np.bool_)
        differs = (state != mirror_state[ids]) | (ref != mirror_ref[ids]) | (hashed != mirror_hashed[ids])
        ids, state, ref, hashed = ids[differs], state[differs], ref[differs], hashed[differs]
        change = (np.bincount(state, minlength=NUM_BLOCK_STATES)
                  - np.bincount(mirror_state[ids], minlength=NUM_BLOCK_STATES))
        self.counts = [c + int(d) for c, d in zip(self.counts, change)]
        mirror_state[ids], mirror_ref[ids], mirror_hashed[ids] = state, ref, hashed
        del mirror_state, mirror_ref, mirror_hashed  # release the buffers: resync replaces them
        return ids.tobytes(), state.tobytes(), ref.tobytes(), hashed.tobytes()

    def table_changes(self, req_to_blocks, requests, block_size: int,
                      append_only: bool = True) -> tuple[list, bytes, list, int]:
        """One pass over the running requests: the block ids appended to each since the last call
        (``(request id, offset, count)`` rows over one id array), the requests that left, and the
        unfilled token slots at the tails of their tables.

        Full attention only appends to a table; sliding-window managers also replace blocks that
        left the window by the null block, so for them (``append_only=False``) whole tables go."""
        sent = self.sent_tables
        rows, appended = [], []
        unfilled = 0
        for req_id, blocks in req_to_blocks.items():
            num = len(blocks)
            request = requests.get(req_id)
            slack = num * block_size - (request.num_computed_tokens if request is not None else 0)
            if slack > 0:
                unfilled += slack
            key = id(blocks)
            prev = sent.get(req_id)
            if append_only and prev is not None and prev[0] == key:
                if prev[1] == num:
                    continue
                offset = prev[1] if prev[1] < num else 0
            else:
                offset = 0
            rows.append((req_id, offset, num - offset))
            appended.append(blocks[offset:] if offset else blocks)
            sent[req_id] = (key, num)
        ids = array.array("i", map(_get_block_id, itertools.chain.from_iterable(appended)))
        removed = [] if len(sent) == len(req_to_blocks) else [r for r in sent if r not in req_to_blocks]
        for req_id in removed:
            del sent[req_id]
        return rows, ids.tobytes(), removed, unfilled


# ---------------------------------------------------------------- the utility methods

def _kv_parts(core):
    manager = core.scheduler.kv_cache_manager
    first_group = manager.coordinator.single_type_managers[0]
    return manager.block_pool, first_group, core.scheduler.requests, first_group.block_size


def _kv_delta(self, client_version: int, with_full_scan: bool = False) -> dict:
    """A versioned delta of the block pool since ``client_version``; a full resync after a gap."""
    started = time.perf_counter_ns()
    cpu_started = time.thread_time_ns()
    pool, group, requests, block_size = _kv_parts(self)
    mirror = getattr(self, "_workbench_mirror", None)
    if mirror is None or mirror.pool is not pool:
        mirror = self._workbench_mirror = _PoolMirror(pool)
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
    if with_full_scan:
        delta["scan"] = _kv_scan(self)
    return delta


def _kv_untrack(self) -> bool:
    """Removes the change tracking until the next delta (which resyncs); for benchmarks."""
    pool = _kv_parts(self)[0]
    _uninstall_dirty_tracking(type(pool.blocks[0]))
    self._workbench_mirror = None
    return True


def _kv_scan(self) -> dict:
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
    """The plain per-block reading, apart from :func:`_read_blocks`, so that checks compare two ways."""
    refs = [block.ref_cnt for block in blocks]
    hashes = [block.block_hash is not None for block in blocks]
    states = [_state_of(block, ref, hashed) for block, ref, hashed in zip(blocks, refs, hashes)]
    return np.array(states, np.int8), np.array(refs, np.int32), np.array(hashes, np.bool_)
