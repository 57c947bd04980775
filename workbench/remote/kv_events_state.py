"""What the KV events say about a server's prefix cache, per data-parallel rank.

:class:`RankLedger` applies decoded batches in sequence order (the subscriber's thread owns it);
:class:`KVEventsState` is the immutable snapshot handed to any other thread. The events describe
blocks entering and leaving the prefix cache by hash; they carry no block ids, so no physical layout
of the pool can be drawn from them.
"""
from __future__ import annotations

import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from workbench.remote.kv_events_wire import AllBlocksCleared, BlockHash, BlockRemoved, BlockStored, EventBatch

# A block is one hash in one medium (GPU, CPU, storage tier) and one KV cache group.
BlockKey = tuple  # (medium, group_idx, block_hash)

LINK_WAITING = "waiting"  # connected, nothing heard yet
LINK_LIVE = "live"  # the replay endpoint answered or a batch arrived
LINK_NO_ANSWER = "no answer"  # nothing within the timeout: events are likely off on the server
LINK_LOST = "reconnecting"  # the connection dropped; ZMQ reconnects by itself

RECENT_REMOVALS = 64
REMEMBERED_BATCHES = 20_000  # timestamps of the batches applied last, to recognise a restarted server

ENABLE_EVENTS_COMMAND = ("vllm serve MODEL --kv-events-config '{\"enable_kv_cache_events\": true, "
                         "\"publisher\": \"zmq\", \"endpoint\": \"tcp://*:5557\", "
                         "\"replay_endpoint\": \"tcp://*:5558\"}'")


def enable_events_advice(endpoint: str) -> str:
    """What to say when nothing answers at ``endpoint``: how to start a server with events on."""
    return (f"No KV cache events arrive from {endpoint}. A server publishes them only when started with "
            f"KV events on (vLLM 0.26 to 0.33):\n{ENABLE_EVENTS_COMMAND}\n"
            "A data-parallel server publishes rank r on each port + r. Check the address, and that these "
            "ports are reachable from here.")


def block_key(medium: str | None, group_idx: int | None, block_hash: BlockHash) -> BlockKey:
    return (medium, group_idx, block_hash)


@dataclass(frozen=True)
class StoredBlock:
    """One block in the prefix cache, as its BlockStored event described it."""

    block_hash: BlockHash
    parent_hash: BlockHash | None
    token_ids: tuple[int, ...]
    medium: str | None
    group_idx: int | None
    seq: int  # the batch that stored it


@dataclass(frozen=True)
class RemovedBlock:
    block_hash: BlockHash
    medium: str | None
    seq: int
    ts: float


@dataclass(frozen=True)
class RankEventsState:
    """One rank's prefix-cache contents and how complete the view of them is."""

    rank: int
    endpoint: str
    replay_endpoint: str | None
    link: str = LINK_WAITING
    stored: Mapping[BlockKey, StoredBlock] = field(default_factory=lambda: MappingProxyType({}))
    num_blocks_stored: int = 0  # BlockStored hashes received (a block reused and reported again counts again)
    num_blocks_removed: int = 0
    num_clears: int = 0
    num_batches: int = 0
    first_seq: int | None = None  # the oldest batch applied
    last_seq: int | None = None
    data_parallel_rank: int | None = None  # as the batches name it
    caught_up: bool | None = None  # None until the replay answered (or without a replay endpoint)
    gaps: tuple[str, ...] = ()  # what could not be caught up, in words
    recent_removals: tuple[RemovedBlock, ...] = ()  # newest first
    last_event_ts: float | None = None
    num_restarts: int = 0  # times the publisher counted from 0 again (the server restarted): contents reset

    @property
    def num_stored_now(self) -> int:
        return len(self.stored)


@dataclass(frozen=True)
class KVEventsState:
    """All ranks at one moment; ``version`` grows with each snapshot that differs."""

    ranks: tuple[RankEventsState, ...]
    version: int = 0
    taken_at: float = field(default_factory=time.monotonic)
    problem: str | None = None  # set when the subscriber itself stopped on an error

    @property
    def num_stored_now(self) -> int:
        return sum(rank.num_stored_now for rank in self.ranks)

    @property
    def num_blocks_stored(self) -> int:
        return sum(rank.num_blocks_stored for rank in self.ranks)

    @property
    def num_blocks_removed(self) -> int:
        return sum(rank.num_blocks_removed for rank in self.ranks)

    @property
    def complete(self) -> bool:
        """True when every rank caught up with no gap left."""
        return all(rank.caught_up and not rank.gaps for rank in self.ranks)

    def notices(self) -> tuple[str, ...]:
        """What a reader must know before trusting the contents: events off, or gaps."""
        out: list[str] = [self.problem] if self.problem else []
        for rank in self.ranks:
            if rank.link == LINK_NO_ANSWER:
                out.append(f"Rank {rank.rank}: " + enable_events_advice(rank.replay_endpoint or rank.endpoint))
            out.extend(f"Rank {rank.rank}: {gap}" for gap in rank.gaps)
        return tuple(out)


class RankLedger:
    """One rank's contents, updated batch by batch in the subscriber's thread."""

    def __init__(self, rank: int, endpoint: str, replay_endpoint: str | None) -> None:
        self.rank, self.endpoint, self.replay_endpoint = rank, endpoint, replay_endpoint
        self.link = LINK_WAITING
        self.stored: dict[BlockKey, StoredBlock] = {}
        self.num_blocks_stored = self.num_blocks_removed = self.num_clears = self.num_batches = 0
        self.first_seq: int | None = None
        self.last_seq: int | None = None
        self.data_parallel_rank: int | None = None
        self.caught_up: bool | None = None
        self.gaps: list[str] = []
        self.recent_removals: deque[RemovedBlock] = deque(maxlen=RECENT_REMOVALS)
        self.last_event_ts: float | None = None
        self.num_restarts = 0
        self._applied_ts: OrderedDict[int, float] = OrderedDict()  # seq -> ts of the batches applied last
        self.changed = True
        self._stored_view: Mapping[BlockKey, StoredBlock] | None = None  # the last snapshot's copy, while valid

    def expects(self) -> int:
        """The next sequence number that follows without a gap."""
        return 0 if self.last_seq is None else self.last_seq + 1

    def note_gap(self, text: str) -> None:
        self.gaps.append(text)
        self.changed = True

    def reset_for_restart(self) -> None:
        """The publisher counts from 0 again: a restarted server, whose cache started empty."""
        self.stored.clear()
        self._stored_view = None
        self._applied_ts.clear()
        self.num_restarts += 1
        self.first_seq = self.last_seq = None
        self.gaps.clear()
        self.caught_up = None
        self.changed = True

    def restarted(self, replayed: list[EventBatch]) -> bool:
        """Whether a replay after a reconnection comes from a new publisher: a batch number already
        applied with another timestamp, or fewer batches than were seen."""
        if replayed and self.last_seq is not None and replayed[-1].seq < self.last_seq:
            return True
        return any(batch.seq in self._applied_ts and not self.already_applied(batch) for batch in replayed)

    def already_applied(self, batch: EventBatch) -> bool:
        """Whether this very batch (its number and its timestamp) was applied already: a live copy of a
        batch that a replay delivered first. A restarted publisher's batch has the number, not the time."""
        return self._applied_ts.get(batch.seq) == batch.ts

    def apply(self, batch: EventBatch) -> None:
        if batch.events:
            self._stored_view = None
        for event in batch.events:
            if isinstance(event, BlockStored):
                self._store(event, batch.seq)
            elif isinstance(event, BlockRemoved):
                self._remove(event, batch)
            elif isinstance(event, AllBlocksCleared):
                self.stored.clear()
                self.num_clears += 1
        self._applied_ts[batch.seq] = batch.ts
        if len(self._applied_ts) > REMEMBERED_BATCHES:
            self._applied_ts.popitem(last=False)
        if self.first_seq is None:
            self.first_seq = batch.seq
        self.last_seq = batch.seq
        self.num_batches += 1
        self.data_parallel_rank = batch.data_parallel_rank
        self.last_event_ts = batch.ts
        self.link = LINK_LIVE
        self.changed = True

    def _store(self, event: BlockStored, seq: int) -> None:
        parent = event.parent_hash
        size = event.block_size
        for index, block_hash in enumerate(event.block_hashes):
            tokens = event.token_ids[index * size:(index + 1) * size]
            self.stored[block_key(event.medium, event.group_idx, block_hash)] = StoredBlock(
                block_hash, parent, tokens, event.medium, event.group_idx, seq)
            parent = block_hash
        self.num_blocks_stored += len(event.block_hashes)

    def _remove(self, event: BlockRemoved, batch: EventBatch) -> None:
        for block_hash in event.block_hashes:
            self.stored.pop(block_key(event.medium, event.group_idx, block_hash), None)
            self.recent_removals.appendleft(RemovedBlock(block_hash, event.medium, batch.seq, batch.ts))
        self.num_blocks_removed += len(event.block_hashes)

    def snapshot(self) -> RankEventsState:
        self.changed = False
        if self._stored_view is None:  # copied only when the contents changed since the last snapshot
            self._stored_view = MappingProxyType(dict(self.stored))
        return RankEventsState(
            rank=self.rank, endpoint=self.endpoint, replay_endpoint=self.replay_endpoint, link=self.link,
            stored=self._stored_view, num_blocks_stored=self.num_blocks_stored,
            num_blocks_removed=self.num_blocks_removed, num_clears=self.num_clears, num_batches=self.num_batches,
            first_seq=self.first_seq, last_seq=self.last_seq, data_parallel_rank=self.data_parallel_rank,
            caught_up=self.caught_up, gaps=tuple(self.gaps), recent_removals=tuple(self.recent_removals),
            last_event_ts=self.last_event_ts, num_restarts=self.num_restarts)
