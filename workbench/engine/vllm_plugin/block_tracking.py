"""Which KV blocks changed, without scanning the pool: descriptors on vLLM's ``KVCacheBlock``.

Every write to ``ref_cnt`` or ``_block_hash`` of any block records the block id; :class:`PoolMirror`
keeps what the client was last sent and turns the recorded ids into a delta.
"""
from __future__ import annotations

import array
import itertools
import operator

import numpy as np

from workbench.engine.kv_snapshot import (
    BLOCK_STATE_CACHED,
    BLOCK_STATE_FREE,
    BLOCK_STATE_IN_USE,
    BLOCK_STATE_NULL,
    BLOCK_STATE_SHARED,
    NUM_BLOCK_STATES,
)

_TRACKED_FIELDS = ("ref_cnt", "_block_hash")
dirty_block_ids: set[int] = set()
_ABSENT = object()


def install_dirty_tracking(block_cls) -> bool:
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


def uninstall_dirty_tracking(block_cls) -> None:
    """Puts vLLM's own attributes back (benchmarks compare against an untouched engine)."""
    if not getattr(block_cls, "_workbench_tracked", False):
        return
    for field, original in block_cls._workbench_originals.items():
        if original is _ABSENT:
            delattr(block_cls, field)
        else:
            setattr(block_cls, field, original)
    block_cls._workbench_tracked = False
    dirty_block_ids.clear()


def _slot_field(block_cls, name: str) -> property:
    slot = block_cls._workbench_originals[name]
    get_block_id = block_cls.__dict__["block_id"].__get__

    def set_(block, value, _set=slot.__set__, _add=dirty_block_ids.add):
        _set(block, value)
        _add(get_block_id(block))

    return property(slot.__get__, set_)


def _dict_field(name: str) -> property:
    def get(block):
        return block.__dict__[name]

    def set_(block, value):
        block.__dict__[name] = value
        dirty_block_ids.add(block.__dict__["block_id"])

    return property(get, set_)


_get_ref_cnt = operator.attrgetter("ref_cnt")
_get_hash = operator.attrgetter("_block_hash")
_get_null = operator.attrgetter("is_null")
_get_block_id = operator.attrgetter("block_id")


# Block state by min(ref_cnt, 2) * 2 + hashed (the null block apart): one rule for both reading paths.
STATE_BY_REF_AND_HASH = bytes([BLOCK_STATE_FREE, BLOCK_STATE_CACHED, BLOCK_STATE_IN_USE, BLOCK_STATE_IN_USE,
                                BLOCK_STATE_SHARED, BLOCK_STATE_SHARED])
_STATE_TABLE = np.frombuffer(STATE_BY_REF_AND_HASH, np.int8)


def read_blocks(blocks: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


class PoolMirror:
    """What the client was last sent; lives on the EngineCore instance.

    Kept in ``bytearray`` / ``array`` rather than numpy arrays: a delta usually touches tens of
    blocks, and between engine steps each numpy call costs 10–30 µs (cold caches after a forward
    pass) while a plain item access costs well under one. Numpy views serve the large cases."""

    def __init__(self, pool):
        self.pool = pool
        self.version = 0
        self.tracking = install_dirty_tracking(type(pool.blocks[0]))
        self.state = bytearray()
        self.ref = array.array("i")
        self.hashed = bytearray()
        self.counts = [0] * NUM_BLOCK_STATES
        self.sent_tables: dict[str, tuple[int, int]] = {}

    @property
    def num_blocks(self) -> int:
        return len(self.state)

    def resync(self) -> _Changes:
        dirty_block_ids.clear()
        state_array, ref_array, hashed_array = read_blocks(self.pool.blocks)
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
            return self._store(np.arange(self.num_blocks, dtype=np.int32), *read_blocks(self.pool.blocks))
        dirty = list(dirty_block_ids)
        dirty_block_ids.clear()
        blocks = self.pool.blocks
        if len(dirty) >= _VECTOR_FROM:
            return self._store(np.array(dirty, np.int32), *read_blocks([blocks[i] for i in dirty]))
        mirror_state, mirror_ref, mirror_hashed, counts = self.state, self.ref, self.hashed, self.counts
        ids, states, refs, hashes = array.array("i"), bytearray(), array.array("i"), bytearray()
        for block_id in dirty:
            block = blocks[block_id]
            ref_cnt = block.ref_cnt
            hashed = block._block_hash is not None
            if ref_cnt != mirror_ref[block_id] or hashed != mirror_hashed[block_id]:  # the state follows them
                state = BLOCK_STATE_NULL if block.is_null else STATE_BY_REF_AND_HASH[min(ref_cnt, 2) * 2 + hashed]
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
