"""A subscriber to a vLLM server's KV cache events: the prefix cache's contents, followed over ZMQ.

vLLM's publisher (``--kv-events-config``, 0.26 to 0.33) sends each engine step's events on a PUB socket
and keeps the last ``buffer_steps`` batches for a ROUTER socket, the replay endpoint: a request carrying a
sequence number (8 bytes, big-endian) is answered with every buffered batch from there on, then an end
marker (sequence -1). :class:`KVEventsSubscriber` subscribes first, then asks the replay endpoint for
everything it still holds, and applies the replayed batches and the live ones in sequence order. When the
buffer no longer reaches back to a batch it needs, it says so (a gap): the contents it shows then miss
what those batches stored or removed.

A data-parallel server runs one publisher per rank, on the configured ports plus the rank
(:func:`rank_endpoints`); the subscriber keeps each rank's state apart. It runs in a thread of its own,
imports neither Qt nor vLLM, and publishes immutable :class:`KVEventsState` snapshots at a bounded rate:
read the newest with :meth:`KVEventsSubscriber.latest`, or be called with each one (``on_state``, in the
subscriber's thread).
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable, Sequence
from urllib.parse import urlsplit

import zmq
from zmq.utils.monitor import recv_monitor_message

from workbench.remote.kv_events_state import LINK_LIVE, LINK_LOST, LINK_NO_ANSWER, LINK_WAITING, KVEventsState, RankLedger
from workbench.remote.kv_events_wire import EventBatch, KVEventsDecodeError, decode_batch, decode_seq

REPLAY_END = (-1).to_bytes(8, "big", signed=True)  # the sequence frame that ends a replay
# After a handshake, the time the subscription takes to reach the server's PUB socket: what the server
# publishes before it lands is dropped, so the subscriber asks for the server's buffer once it has.
SUBSCRIPTION_SETTLE_S = 0.2


@dataclass(frozen=True)
class EventsEndpoint:
    """Where one rank publishes: the PUB address and, optionally, its replay (ROUTER) address."""

    endpoint: str
    replay_endpoint: str | None = None
    rank: int = 0
    listen: bool = False  # bind ``endpoint`` and let the publisher connect (vLLM's connects to any non-wildcard address)


def rank_endpoints(host: str, endpoint: str = "tcp://*:5557", replay_endpoint: str | None = "tcp://*:5558",
                   data_parallel_size: int = 1) -> list[EventsEndpoint]:
    """The addresses to connect to, one per data-parallel rank, for a server started with these
    ``--kv-events-config`` endpoints: a wildcard host becomes ``host``, and rank r's ports are the
    configured ones plus r, as vLLM's ``ZmqEventPublisher.offset_endpoint_port`` binds them."""
    return [EventsEndpoint(_rank_address(endpoint, host, rank),
                           _rank_address(replay_endpoint, host, rank) if replay_endpoint else None, rank)
            for rank in range(data_parallel_size)]


def _rank_address(address: str, host: str, rank: int) -> str:
    parts = urlsplit(address)
    if parts.scheme != "tcp" or parts.port is None:
        raise ValueError(f"KV events endpoint {address!r}: expected tcp://HOST:PORT, as in tcp://*:5557")
    where = host if parts.hostname in (None, "*", "0.0.0.0", "::") else parts.hostname
    port = parts.port + rank if parts.port != 0 else 0
    return f"tcp://{where}:{port}"


class _RankLink:
    """One rank's sockets and the replay bookkeeping around its ledger."""

    def __init__(self, ctx: zmq.Context, where: EventsEndpoint, topic: bytes) -> None:
        self.ledger = RankLedger(where.rank, where.endpoint, where.replay_endpoint)
        self.sub = ctx.socket(zmq.SUB)
        self.sub.setsockopt(zmq.LINGER, 0)
        self.sub.setsockopt(zmq.SUBSCRIBE, topic)
        # Connection events tell a reconnection (a restarted server, a network hiccup) from silence.
        self.monitor = self.sub.get_monitor_socket(zmq.EVENT_DISCONNECTED | zmq.EVENT_HANDSHAKE_SUCCEEDED)
        if where.listen:
            self.sub.bind(where.endpoint)
        else:
            self.sub.connect(where.endpoint)
        self.disconnected = False
        self.rejoining = False  # the replay in flight follows a reconnection: the server may have restarted
        self.catch_up_at: float | None = None  # after a handshake: ask for the server's buffer then
        self.catch_up_rejoins = False  # that handshake was a reconnection
        self.replay: zmq.Socket | None = None
        if where.replay_endpoint:
            self.replay = ctx.socket(zmq.DEALER)
            self.replay.setsockopt(zmq.LINGER, 0)
            self.replay.connect(where.replay_endpoint)
        self.replay_asked_at: float | None = None  # a replay is in flight since then
        self.replay_from = 0
        self.replayed: list[EventBatch] = []
        self.pending: list[EventBatch] = []  # live batches held while a replay is in flight
        self.started_at = time.monotonic()

    def close(self) -> None:
        self.sub.disable_monitor()
        self.monitor.close(linger=0)
        self.sub.close(linger=0)
        if self.replay is not None:
            self.replay.close(linger=0)


class KVEventsSubscriber:
    """Follows the KV cache events of one server (one endpoint per data-parallel rank).

    ``replay_timeout_s``: how long the replay endpoint may take to answer before the view says events
    look off. ``quiet_timeout_s``: without a replay endpoint, how long nothing may arrive before it says
    so. ``min_interval_s``: snapshots are published at most this often.
    """

    def __init__(self, endpoints: Sequence[EventsEndpoint], *, topic: str = "", replay_timeout_s: float = 3.0,
                 quiet_timeout_s: float = 10.0, min_interval_s: float = 0.25,
                 on_state: Callable[[KVEventsState], None] | None = None) -> None:
        if not endpoints:
            raise ValueError("KV events: give at least one endpoint (one per data-parallel rank)")
        self._endpoints = tuple(endpoints)
        self._topic = topic.encode()
        self._replay_timeout_s, self._quiet_timeout_s = replay_timeout_s, quiet_timeout_s
        self._min_interval_s = min_interval_s
        self._on_state = on_state
        self._stop = threading.Event()
        self._cond = threading.Condition()
        self._latest = KVEventsState(ranks=tuple(RankLedger(e.rank, e.endpoint, e.replay_endpoint).snapshot()
                                                 for e in self._endpoints))
        self._thread = threading.Thread(target=self._run, name="kv-events-subscriber", daemon=True)

    # -- the caller's side ---------------------------------------------------------------------------
    def start(self) -> "KVEventsSubscriber":
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stops the thread and closes its sockets; the last snapshot stays readable."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def __enter__(self) -> "KVEventsSubscriber":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def latest(self) -> KVEventsState:
        with self._cond:
            return self._latest

    def wait_for(self, predicate: Callable[[KVEventsState], bool], timeout_s: float) -> KVEventsState | None:
        """Blocks until a published snapshot satisfies ``predicate``; None on timeout."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while not predicate(self._latest):
                left = deadline - time.monotonic()
                if left <= 0 or not self._thread.is_alive():
                    return None
                self._cond.wait(min(left, 0.1))
            return self._latest

    # -- the subscriber's thread ---------------------------------------------------------------------
    def _run(self) -> None:
        ctx = zmq.Context()
        links = [_RankLink(ctx, where, self._topic) for where in self._endpoints]
        poller = zmq.Poller()
        for link in links:
            poller.register(link.sub, zmq.POLLIN)
            poller.register(link.monitor, zmq.POLLIN)
            if link.replay is not None:
                poller.register(link.replay, zmq.POLLIN)
                self._ask_replay(link, 0)
        last_published = 0.0
        try:
            while not self._stop.is_set():
                ready = dict(poller.poll(timeout=50))
                for link in links:
                    self._serve(link, ready)
                now = time.monotonic()
                if any(link.ledger.changed for link in links) and now - last_published >= self._min_interval_s:
                    self._publish(links)
                    last_published = now
            self._publish(links)
        except Exception as error:  # the view must say it stopped following, not freeze on old contents
            self._publish(links, problem=f"The KV events subscriber stopped: {error!r}")
            raise
        finally:
            for link in links:
                link.close()
            ctx.term()

    def _serve(self, link: _RankLink, ready: dict) -> None:
        if link.monitor in ready:
            while link.monitor.poll(0):
                self._on_connection_event(link, recv_monitor_message(link.monitor)["event"])
        if link.replay is not None and link.replay in ready:
            while link.replay.poll(0):
                self._on_replay_frames(link, link.replay.recv_multipart())
        if link.sub in ready:
            while link.sub.poll(0):
                batch = self._decode(link, link.sub.recv_multipart())
                if batch is not None:
                    self._on_live(link, batch)
        self._catch_up(link)
        self._check_timeouts(link)

    def _decode(self, link: _RankLink, frames: list[bytes]) -> EventBatch | None:
        """A message's last two frames: (seq, payload); before them the topic, if any."""
        try:
            if len(frames) < 2:
                raise KVEventsDecodeError(f"a message of {len(frames)} frame(s), not (topic, seq, payload)")
            return decode_batch(decode_seq(frames[-2]), frames[-1])
        except KVEventsDecodeError as error:
            link.ledger.note_gap(f"a batch could not be read and was skipped ({error})")
            return None

    def _on_connection_event(self, link: _RankLink, event: int) -> None:
        if event == zmq.EVENT_DISCONNECTED:
            link.disconnected = True
            link.ledger.link = LINK_LOST
            link.ledger.changed = True
        elif event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
            link.catch_up_rejoins = link.disconnected
            if link.disconnected:
                link.disconnected = False
                link.ledger.link = LINK_LIVE
                link.ledger.changed = True
            if link.replay is not None:
                link.catch_up_at = time.monotonic() + SUBSCRIPTION_SETTLE_S

    def _catch_up(self, link: _RankLink) -> None:
        """Once a handshake's subscription has landed: everything the server still holds, so that what it
        published before then is not lost; after a reconnection it also tells a restart from a hiccup.
        After the first connection it waits for the replay in flight to be answered."""
        if link.catch_up_at is None or time.monotonic() < link.catch_up_at:
            return
        if link.replay_asked_at is not None and not link.catch_up_rejoins:
            return
        link.catch_up_at = None
        link.rejoining = link.catch_up_rejoins
        self._ask_replay(link, 0)

    def _ask_replay(self, link: _RankLink, from_seq: int) -> None:
        assert link.replay is not None
        link.replay.send_multipart((b"", from_seq.to_bytes(8, "big")))
        link.replay_asked_at, link.replay_from, link.replayed = time.monotonic(), from_seq, []

    def _on_replay_frames(self, link: _RankLink, frames: list[bytes]) -> None:
        body = frames[1:] if frames and frames[0] == b"" else frames  # the DEALER's empty delimiter
        # 0.26 and later: (topic, seq, payload); earlier: (seq, payload); the end: seq -1, empty payload
        if len(body) >= 2 and body[-2] == REPLAY_END and not body[-1]:
            self._finish_replay(link)
            return
        batch = self._decode(link, body)
        if batch is not None:
            link.replayed.append(batch)

    def _finish_replay(self, link: _RankLink) -> None:
        ledger = link.ledger
        link.replay_asked_at = None
        ledger.link = LINK_LIVE
        held = sorted(link.replayed + link.pending, key=lambda batch: batch.seq)
        link.replayed, link.pending = [], []
        if link.rejoining:
            link.rejoining = False
            if ledger.restarted(held):
                ledger.reset_for_restart()
        complete = True
        for batch in held:
            if batch.seq < ledger.expects():
                continue  # replayed and live both
            if batch.seq > ledger.expects():
                complete = False
                ledger.note_gap(self._gap_text(ledger.expects(), batch.seq, "no longer in the server's replay buffer"))
            ledger.apply(batch)
        if ledger.caught_up is None or not complete:
            ledger.caught_up = complete and not ledger.gaps
        ledger.changed = True

    def _on_live(self, link: _RankLink, batch: EventBatch) -> None:
        ledger = link.ledger
        if link.replay_asked_at is not None:
            link.pending.append(batch)
            return
        if batch.seq < ledger.expects():
            if ledger.already_applied(batch):  # the replay after a reconnection overtook the live stream
                return
            ledger.reset_for_restart()  # a restarted server counts from 0 again
            if batch.seq == 0:
                ledger.caught_up = True
        if batch.seq > ledger.expects():
            if link.replay is not None:
                link.pending.append(batch)
                self._ask_replay(link, ledger.expects())
                return
            ledger.note_gap(self._gap_text(ledger.expects(), batch.seq, "not received or not readable "
                                           "(no replay endpoint to ask for them again)"))
            ledger.caught_up = False
        elif ledger.caught_up is None and link.replay is None:
            ledger.caught_up = True
        ledger.apply(batch)

    def _check_timeouts(self, link: _RankLink) -> None:
        ledger, now = link.ledger, time.monotonic()
        if link.replay_asked_at is not None and now - link.replay_asked_at > self._replay_timeout_s:
            if link.pending:  # live batches come, the replay endpoint does not answer: go on without it
                ledger.note_gap(f"the replay endpoint {ledger.replay_endpoint} did not answer within "
                                f"{self._replay_timeout_s:g} s")
                ledger.caught_up = False
                held, link.pending, link.replay_asked_at = link.pending, [], None
                for batch in held:
                    ledger.apply(batch)
            elif ledger.link == LINK_WAITING:  # the request stays queued: a server started later answers it
                ledger.link = LINK_NO_ANSWER
                ledger.changed = True
        elif ledger.link == LINK_WAITING and link.replay is None and now - link.started_at > self._quiet_timeout_s:
            ledger.link = LINK_NO_ANSWER
            ledger.changed = True

    @staticmethod
    def _gap_text(first_missing: int, first_seen: int, why: str) -> str:
        span = f"batch {first_missing}" if first_seen - first_missing == 1 else \
            f"batches {first_missing} to {first_seen - 1}"
        return (f"could not catch up fully: {span} {why}; the blocks they stored or removed are missing "
                "from this view")

    def _publish(self, links: list[_RankLink], problem: str | None = None) -> None:
        with self._cond:
            previous = self._latest.ranks
            ranks = tuple(link.ledger.snapshot() if link.ledger.changed else previous[index]
                          for index, link in enumerate(links))
            self._latest = KVEventsState(ranks=ranks, version=self._latest.version + 1, problem=problem)
            self._cond.notify_all()
            state = self._latest
        if self._on_state is not None:
            self._on_state(state)
