"""The prefix-cache view over the network: vLLM's KV cache events, followed by the workbench's subscriber.

One real ``vllm serve`` (the CPU build, the demo model, KV events on, free ports on 127.0.0.1) serves the
module (``kv_events_server``: replace that fixture to share a server with other modules). The test keeps
its own subscriber, decoding with vLLM's own ``KVEventBatch``, and the workbench's state must equal what it
rebuilds. Gaps, data-parallel ranks and both wire forms are checked against vLLM's own publisher class and
msgspec structs built as each vLLM release declares them; no server is needed for those.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest
import zmq

from workbench.remote.kv_events import EventsEndpoint, KVEventsSubscriber, rank_endpoints
from workbench.remote.kv_events_state import LINK_LIVE, LINK_NO_ANSWER, block_key
from workbench.remote.kv_events_wire import AllBlocksCleared, BlockRemoved, BlockStored, decode_batch

SERVER_START_TIMEOUT_S = 240
BLOCK_SIZE = 32
NUM_BLOCKS = 48  # small enough that the distinct prompts below evict blocks: removals happen


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class EventsServer:
    base_url: str
    model: str
    events: tuple[EventsEndpoint, ...]  # one per data-parallel rank


def start_events_server(model: str, log_path: Path) -> tuple[subprocess.Popen, EventsServer]:
    port, pub_port, replay_port = free_port(), free_port(), free_port()
    # vLLM binds the PUB socket only for a wildcard address (a host name makes it connect out instead).
    config = {"enable_kv_cache_events": True, "publisher": "zmq", "endpoint": f"tcp://*:{pub_port}",
              "replay_endpoint": f"tcp://*:{replay_port}"}
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model,
               "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "1024", "--max-num-seqs", "4",
               "--enforce-eager", "--block-size", str(BLOCK_SIZE), "--num-gpu-blocks-override", str(NUM_BLOCKS),
               "--kv-cache-memory-bytes", str(64 << 20), "--enable-prefix-caching",
               "--kv-events-config", json.dumps(config)]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    server = EventsServer(f"http://127.0.0.1:{port}", model,
                          tuple(rank_endpoints("127.0.0.1", config["endpoint"], config["replay_endpoint"])))
    return process, server


def stop_process_group(process: subprocess.Popen) -> None:
    """The server and its engine processes share the group the server started: all of it goes."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # whatever is left: an engine process that outlived the server
    except ProcessLookupError:
        pass
    process.wait(10)


def wait_until_serving(process: subprocess.Popen, server: EventsServer, log_path: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"vllm serve exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(server.base_url + "/v1/models", timeout=2):
                return
        except OSError:
            threading.Event().wait(0.5)
    pytest.fail(f"vllm serve did not answer in {SERVER_START_TIMEOUT_S} s:\n{log_path.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def kv_events_server(demo_model_path, tmp_path_factory):
    log_path = tmp_path_factory.mktemp("kv-events-server") / "serve.log"
    process, server = start_events_server(demo_model_path, log_path)
    try:
        wait_until_serving(process, server, log_path)
        yield server
    finally:
        stop_process_group(process)


def complete(server: EventsServer, prompt: str) -> dict:
    body = json.dumps({"model": server.model, "prompt": prompt, "max_tokens": 8, "temperature": 0}).encode()
    request = urllib.request.Request(server.base_url + "/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as answer:
        return json.load(answer)


class VllmEventsRecorder:
    """The test's own subscriber: a SUB socket, batches decoded with vLLM's own KVEventBatch, the set of
    stored blocks rebuilt from them. It subscribes before any request is sent."""

    def __init__(self, endpoint: str) -> None:
        from vllm.distributed.kv_events import KVEventBatch

        self._decoder = msgspec.msgpack.Decoder(type=KVEventBatch)
        self._ctx = zmq.Context()
        self._sub = self._ctx.socket(zmq.SUB)
        monitor = self._sub.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
        self._sub.setsockopt(zmq.SUBSCRIBE, b"")
        self._sub.connect(endpoint)
        assert monitor.poll(10_000), f"the test's subscriber could not connect to {endpoint}"
        self._sub.disable_monitor()
        monitor.close(linger=0)
        self.seqs: list[int] = []
        self.batches: list = []

    def drain(self, quiet_s: float = 1.5) -> None:
        """Takes every batch that arrives until none has for ``quiet_s``."""
        while self._sub.poll(int(quiet_s * 1000)):
            _topic, seq, payload = self._sub.recv_multipart()
            self.seqs.append(int.from_bytes(seq, "big"))
            self.batches.append(self._decoder.decode(payload))

    def stored_blocks(self) -> set:
        from vllm.distributed.kv_events import AllBlocksCleared as VllmCleared
        from vllm.distributed.kv_events import BlockRemoved as VllmRemoved
        from vllm.distributed.kv_events import BlockStored as VllmStored

        stored: set = set()
        for batch in self.batches:
            for event in batch.events:
                if isinstance(event, VllmStored):
                    stored |= {(event.medium, event.group_idx, h) for h in event.block_hashes}
                elif isinstance(event, VllmRemoved):
                    stored -= {(event.medium, event.group_idx, h) for h in event.block_hashes}
                elif isinstance(event, VllmCleared):
                    stored.clear()
        return stored

    def num_removed(self) -> int:
        from vllm.distributed.kv_events import BlockRemoved as VllmRemoved

        return sum(len(e.block_hashes) for b in self.batches for e in b.events if isinstance(e, VllmRemoved))

    def close(self) -> None:
        self._sub.close(linger=0)
        self._ctx.term()


def prompts() -> list[str]:
    shared = "The workbench attaches to a vLLM server and follows its prefix cache. " * 6
    words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november".split()
    distinct = [" ".join(words[(i * 5 + j * 3) % len(words)] + str(j % 7) for j in range(160)) for i in range(4)]
    return [shared + f"Question {i}: what comes next?" for i in range(3)] + distinct


@pytest.fixture(scope="module")
def traffic(kv_events_server):
    """Completions with shared prefixes, then distinct long ones that evict: seen by the test's own
    subscriber and by a workbench subscriber that both connected before the first request."""
    recorder = VllmEventsRecorder(kv_events_server.events[0].endpoint)
    early = KVEventsSubscriber(kv_events_server.events, replay_timeout_s=10, min_interval_s=0.05).start()
    try:
        assert early.wait_for(lambda s: s.ranks[0].link == LINK_LIVE, 15) is not None, \
            "the replay endpoint of a server with events on did not answer"
        usages = [complete(kv_events_server, prompt)["usage"] for prompt in prompts()]
        recorder.drain()
        yield recorder, early, usages
    finally:
        early.stop()
        recorder.close()


def settled(subscriber: KVEventsSubscriber, last_seq: int):
    state = subscriber.wait_for(lambda s: s.ranks[0].last_seq == last_seq, 15)
    assert state is not None, f"the workbench's subscriber did not reach batch {last_seq}: {subscriber.latest()}"
    return state


@pytest.mark.slow
def test_state_equals_the_events_as_vllm_decodes_them(traffic):
    recorder, early, usages = traffic
    assert recorder.seqs == list(range(len(recorder.seqs))), "the test's own subscriber missed a batch"
    expected = recorder.stored_blocks()
    assert expected and recorder.num_removed() > 0, f"the traffic should store and evict blocks: {usages}"
    rank = settled(early, recorder.seqs[-1]).ranks[0]
    assert set(rank.stored) == expected
    assert rank.num_blocks_removed == recorder.num_removed()
    assert rank.caught_up is True and rank.gaps == ()
    assert rank.data_parallel_rank == 0
    # Blocks the shared prefix stored have parents that are stored too: chains can be drawn.
    parents = {block.parent_hash for block in rank.stored.values()} - {None}
    assert parents & {key[2] for key in rank.stored}


@pytest.mark.slow
def test_a_late_subscriber_catches_up_through_the_replay_endpoint(traffic, kv_events_server):
    recorder, _early, _usages = traffic
    with KVEventsSubscriber(kv_events_server.events, replay_timeout_s=10) as late:
        rank = settled(late, recorder.seqs[-1]).ranks[0]
        assert rank.first_seq == 0 and rank.caught_up is True and rank.gaps == ()
        assert set(rank.stored) == recorder.stored_blocks()
        complete(kv_events_server, prompts()[0] + " And one more question.")
        recorder.drain()
        rank = settled(late, recorder.seqs[-1]).ranks[0]
        assert set(rank.stored) == recorder.stored_blocks()


@pytest.mark.slow
def test_the_view_shows_what_the_events_describe(traffic, qtbot, tmp_path):
    from workbench.bench.gui.screenshot import save_small
    from workbench.ui.prefix_cache_view import TITLE, PrefixCacheView

    recorder, early, _usages = traffic
    state = settled(early, recorder.seqs[-1])
    view = PrefixCacheView()
    qtbot.addWidget(view)
    view.resize(900, 560)
    view.follow(early.latest, interval_ms=50)
    qtbot.waitUntil(lambda: view.counts.item(0, 7) is not None and view.counts.item(0, 7).text() == str(state.ranks[0].last_seq))
    view.follow(None)
    assert view.title.text() == TITLE and "no physical block layout" in TITLE
    assert view.counts.item(0, 2).text() == f"{len(recorder.stored_blocks()):,}"
    assert view.counts.item(0, 4).text() == f"{recorder.num_removed():,}"
    num_blocks_in_chains = sum(view.chains.topLevelItem(i).childCount() for i in range(view.chains.topLevelItemCount()))
    assert num_blocks_in_chains == len(recorder.stored_blocks())
    assert view.removals.count() == min(64, recorder.num_removed())
    assert view.notice.isHidden()
    with qtbot.waitExposed(view):
        view.show()
    view.chains.expandItem(view.chains.topLevelItem(0))
    assert save_small(view, str(tmp_path / "prefix-cache-view.png")) > 0
    if os.environ.get("WORKBENCH_SCREENSHOT_DIR"):  # docs/prefix-cache-view.png is made this way
        Path(os.environ["WORKBENCH_SCREENSHOT_DIR"]).mkdir(parents=True, exist_ok=True)
        save_small(view, os.path.join(os.environ["WORKBENCH_SCREENSHOT_DIR"], "prefix-cache-view.png"))


# -- no server needed ---------------------------------------------------------------------------------
def test_a_server_without_events_gets_advice_on_turning_them_on(qtbot):
    from workbench.ui.prefix_cache_view import PrefixCacheView

    endpoints = rank_endpoints("127.0.0.1", f"tcp://*:{free_port()}", f"tcp://*:{free_port()}")
    with KVEventsSubscriber(endpoints, replay_timeout_s=0.3, min_interval_s=0.05) as subscriber:
        state = subscriber.wait_for(lambda s: s.ranks[0].link == LINK_NO_ANSWER, 10)
    assert state is not None, f"no notice after the replay endpoint stayed silent: {subscriber.latest()}"
    assert not subscriber.running  # stopped, sockets closed
    (advice,) = state.notices()
    assert "--kv-events-config" in advice and '"enable_kv_cache_events": true' in advice
    assert endpoints[0].replay_endpoint in advice
    view = PrefixCacheView()
    qtbot.addWidget(view)
    view.show_events_state(state)
    assert not view.notice.isHidden() and "--kv-events-config" in view.notice.text()


def publishers(buffer_steps: int, data_parallel_size: int = 1):
    """vLLM's own publisher class, one per rank, bound as a server binds them (the ports plus the rank)."""
    from vllm.distributed.kv_events import ZmqEventPublisher

    pub_port, replay_port = free_port_run(data_parallel_size), free_port_run(data_parallel_size)
    config = (f"tcp://*:{pub_port}", f"tcp://*:{replay_port}")
    made = [ZmqEventPublisher(rank, endpoint=config[0], replay_endpoint=config[1], buffer_steps=buffer_steps)
            for rank in range(data_parallel_size)]
    return made, rank_endpoints("127.0.0.1", *config, data_parallel_size=data_parallel_size)


def free_port_run(length: int) -> int:
    """A port p with p + 1, ..., p + length - 1 free too."""
    while True:
        first = free_port()
        sockets = [socket.socket() for _ in range(length)]
        try:
            for offset, sock in enumerate(sockets):
                sock.bind(("", first + offset))
            return first
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()


def wait_until_free(*ports: int) -> None:
    deadline = time.monotonic() + 10
    for port in ports:
        while True:
            with socket.socket() as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as ZMQ binds
                try:
                    sock.bind(("", port))
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
            threading.Event().wait(0.05)


def stored_batch(hashes: list[int], parent: int | None = None, rank: int | None = None):
    from vllm.distributed.kv_events import BlockStored as VllmStored
    from vllm.distributed.kv_events import KVEventBatch

    event = VllmStored(block_hashes=hashes, parent_block_hash=parent, token_ids=list(range(4 * len(hashes))),
                       block_size=4, lora_id=None, medium="GPU", lora_name=None, group_idx=0)
    return KVEventBatch(ts=time.time(), events=[event], data_parallel_rank=rank)


def wait_replayable(publisher, num_batches: int) -> None:
    """Until the publisher's thread has sent the batches (its replay buffer keeps the last ones)."""
    wanted = min(num_batches, publisher._buffer.maxlen)
    deadline = time.monotonic() + 10
    while (len(publisher._buffer) < wanted or publisher._buffer[-1][0] < num_batches - 1) \
            and time.monotonic() < deadline:
        threading.Event().wait(0.02)


def test_a_bounded_replay_that_cannot_reach_back_is_reported_as_a_gap():
    (publisher,), endpoints = publishers(buffer_steps=3)
    try:
        for block in range(6):
            publisher.publish(stored_batch([block]))
        wait_replayable(publisher, 6)
        with KVEventsSubscriber(endpoints, replay_timeout_s=5, min_interval_s=0.05) as subscriber:
            state = subscriber.wait_for(lambda s: s.ranks[0].caught_up is not None, 10)
        rank = state.ranks[0]
        assert rank.caught_up is False and not state.complete
        assert rank.first_seq == 3 and rank.last_seq == 5
        assert {key[2] for key in rank.stored} == {3, 4, 5}
        assert "batches 0 to 2" in rank.gaps[0] and "replay buffer" in rank.gaps[0]
        assert state.notices() == (f"Rank 0: {rank.gaps[0]}",)
    finally:
        publisher.shutdown()


def test_each_data_parallel_rank_is_kept_apart():
    made, endpoints = publishers(buffer_steps=100, data_parallel_size=2)
    try:
        made[0].publish(stored_batch([10, 11]))
        made[1].publish(stored_batch([20]))
        made[1].publish(stored_batch([21], parent=20))
        for publisher, count in zip(made, (1, 2)):
            wait_replayable(publisher, count)
        ports = [int(e.endpoint.rsplit(":", 1)[1]) for e in endpoints]
        assert ports[1] == ports[0] + 1
        with KVEventsSubscriber(endpoints, replay_timeout_s=5, min_interval_s=0.05) as subscriber:
            state = subscriber.wait_for(lambda s: all(r.caught_up for r in s.ranks), 10)
        assert state is not None, subscriber.latest()
        assert [r.data_parallel_rank for r in state.ranks] == [0, 1]
        assert [{k[2] for k in r.stored} for r in state.ranks] == [{10, 11}, {20, 21}]
        assert state.num_stored_now == 4 and state.complete
        assert state.ranks[1].stored[block_key("GPU", 0, 21)].parent_hash == 20
        with pytest.raises(TypeError):  # snapshots are read-only, whichever thread holds them
            state.ranks[0].stored[block_key("GPU", 0, 99)] = None
    finally:
        for publisher in made:
            publisher.shutdown()


# -- the wire forms -----------------------------------------------------------------------------------
# vLLM 0.26.0's definitions (vllm/distributed/kv_events.py), copied: the batch an array, each event a map
# tagged with its class name.
class Batch026(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    ts: float
    events: list[Any]
    data_parallel_rank: int | None = None


class Event026(msgspec.Struct, omit_defaults=True, gc=False, tag=True):
    pass


class BlockStored026(Event026, tag="BlockStored"):
    block_hashes: list[bytes | int]
    parent_block_hash: bytes | int | None
    token_ids: list[int]
    block_size: int
    lora_id: int | None
    medium: str | None
    lora_name: str | None
    extra_keys: list[tuple[Any, ...] | None] | None = None
    group_idx: int | None = None
    kv_cache_spec_kind: str | None = None
    kv_cache_spec_sliding_window: int | None = None
    locality: str | None = None


class BlockRemoved026(Event026, tag="BlockRemoved"):
    block_hashes: list[bytes | int]
    medium: str | None
    group_idx: int | None = None
    locality: str | None = None


class AllBlocksCleared026(Event026, tag="AllBlocksCleared"):
    pass


# Events declared array_like (tag first, then the fields in order), in a batch sent as a map: the other
# shapes the same structs take on the wire.
class ArrayEvent(msgspec.Struct, array_like=True, omit_defaults=True, gc=False, tag=True):
    pass


class ArrayBlockStored(ArrayEvent, tag="BlockStored"):
    block_hashes: list[bytes | int]
    parent_block_hash: bytes | int | None
    token_ids: list[int]
    block_size: int
    lora_id: int | None
    medium: str | None


class ArrayBlockRemoved(ArrayEvent, tag="BlockRemoved"):
    block_hashes: list[bytes | int]
    medium: str | None


class ArrayAllBlocksCleared(ArrayEvent, tag="AllBlocksCleared"):
    pass


class MapBatch(msgspec.Struct, omit_defaults=True, gc=False):
    ts: float
    events: list[Any]
    data_parallel_rank: int | None = None


EXPECTED_EVENTS = (
    BlockStored(block_hashes=(b"\x01" * 32, 7), parent_hash=None, token_ids=(1, 2, 3, 4), block_size=2,
                medium="GPU", group_idx=0),
    BlockRemoved(block_hashes=(7,), medium="GPU", group_idx=0),
    AllBlocksCleared(),
)


def encoded_032() -> bytes:
    from vllm.distributed.kv_events import AllBlocksCleared as Cleared
    from vllm.distributed.kv_events import BlockRemoved as Removed
    from vllm.distributed.kv_events import BlockStored as Stored
    from vllm.distributed.kv_events import KVEventBatch

    events = [Stored(block_hashes=[b"\x01" * 32, 7], parent_block_hash=None, token_ids=[1, 2, 3, 4], block_size=2,
                     lora_id=None, medium="GPU", lora_name=None, group_idx=0),
              Removed(block_hashes=[7], medium="GPU", group_idx=0), Cleared()]
    return msgspec.msgpack.encode(KVEventBatch(ts=12.5, events=events, data_parallel_rank=1))


def test_the_installed_vllm_sends_the_batch_as_an_array_and_events_as_maps():
    raw = msgspec.msgpack.decode(encoded_032())
    assert isinstance(raw, list) and raw[0] == 12.5 and raw[2] == 1
    assert [event["type"] for event in raw[1]] == ["BlockStored", "BlockRemoved", "AllBlocksCleared"]
    batch = decode_batch(41, encoded_032())
    assert (batch.seq, batch.ts, batch.data_parallel_rank, batch.events) == (41, 12.5, 1, EXPECTED_EVENTS)


def test_the_0_26_form_decodes_to_the_same_values():
    events = [BlockStored026(block_hashes=[b"\x01" * 32, 7], parent_block_hash=None, token_ids=[1, 2, 3, 4],
                             block_size=2, lora_id=None, medium="GPU", lora_name=None, group_idx=0),
              BlockRemoved026(block_hashes=[7], medium="GPU", group_idx=0), AllBlocksCleared026()]
    payload = msgspec.msgpack.encode(Batch026(ts=12.5, events=events, data_parallel_rank=1))
    assert payload == encoded_032()  # 0.26.0 and 0.32.0 put the same bytes on the wire for these events
    assert decode_batch(41, payload).events == EXPECTED_EVENTS


def test_events_sent_as_arrays_in_a_batch_sent_as_a_map_decode_to_the_same_values():
    events = [ArrayBlockStored(block_hashes=[b"\x01" * 32, 7], parent_block_hash=None, token_ids=[1, 2, 3, 4],
                               block_size=2, lora_id=None, medium="GPU"),
              ArrayBlockRemoved(block_hashes=[7], medium="GPU"), ArrayAllBlocksCleared()]
    payload = msgspec.msgpack.encode(MapBatch(ts=12.5, events=events, data_parallel_rank=None))
    raw = msgspec.msgpack.decode(payload)
    assert isinstance(raw, dict) and raw["events"][1] == ["BlockRemoved", [7], "GPU"]
    batch = decode_batch(3, payload)
    without_groups = tuple(type(e)(**{**e.__dict__, "group_idx": None}) if not isinstance(e, AllBlocksCleared)
                           else e for e in EXPECTED_EVENTS)
    assert batch.events == without_groups and batch.data_parallel_rank is None


def test_a_payload_that_is_not_a_batch_is_named_not_guessed():
    from workbench.remote.kv_events_wire import KVEventsDecodeError

    with pytest.raises(KVEventsDecodeError, match="batch 5 is not msgpack"):
        decode_batch(5, b"\xc1")
    with pytest.raises(KVEventsDecodeError, match="unknown KV cache event type 'BlockMoved'"):
        decode_batch(6, msgspec.msgpack.encode([1.0, [{"type": "BlockMoved"}]]))


def test_the_subscriber_runs_with_qt_and_vllm_absent():
    """As on a machine with neither: the subscriber's modules import and a subscriber starts and stops."""
    script = """
import sys
for name in ("PySide6", "shiboken6", "pyqtgraph", "superqt", "vllm", "torch"):
    sys.modules[name] = None
from workbench.remote.kv_events import KVEventsSubscriber, rank_endpoints
subscriber = KVEventsSubscriber(rank_endpoints("127.0.0.1", "tcp://*:1", None), quiet_timeout_s=0.1).start()
assert subscriber.wait_for(lambda s: s.ranks[0].link == "no answer", 10) is not None
subscriber.stop()
print("ran", subscriber.running)
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parent.parent)
    assert run.returncode == 0 and run.stdout.strip() == "ran False", run.stderr[-3000:]


def test_a_restarted_server_starts_the_contents_again():
    """The new publisher counts from 0 again; its first batches may go out before the subscriber has
    reconnected, and the third one has the number the old server's next batch would have had."""
    from vllm.distributed.kv_events import ZmqEventPublisher

    (first,), endpoints = publishers(buffer_steps=100)
    with KVEventsSubscriber(endpoints, replay_timeout_s=5, min_interval_s=0.05) as subscriber:
        first.publish(stored_batch([1, 2]))
        first.publish(stored_batch([3]))
        assert subscriber.wait_for(lambda s: s.ranks[0].last_seq == 1, 10) is not None
        first.shutdown()
        pub_port, replay_port = (int(address.rsplit(":", 1)[1]) for address in
                                 (endpoints[0].endpoint, endpoints[0].replay_endpoint))
        wait_until_free(pub_port, replay_port)  # the old sockets close in ZMQ's own thread
        second = ZmqEventPublisher(0, endpoint=f"tcp://*:{pub_port}", replay_endpoint=f"tcp://*:{replay_port}")
        try:
            for block in (7, 8, 9):
                second.publish(stored_batch([block]))
            state = subscriber.wait_for(lambda s: {k[2] for k in s.ranks[0].stored} == {7, 8, 9}, 15)
        finally:
            second.shutdown()
    assert state is not None, subscriber.latest()
    rank = state.ranks[0]
    assert rank.num_restarts == 1 and rank.last_seq == 2 and rank.caught_up and rank.gaps == ()


def test_a_live_copy_of_a_replayed_batch_is_not_a_restart():
    """After a (re)connection the replay may deliver a batch before its live copy arrives: the copy is
    the same batch (number and timestamp) and is dropped. A batch with an applied number and another
    timestamp is a restarted server's, and starts the contents again."""
    ctx = zmq.Context()
    pub, router = ctx.socket(zmq.XPUB), ctx.socket(zmq.ROUTER)  # XPUB: the test sees the subscription land
    for sock in (pub, router):
        sock.setsockopt(zmq.LINGER, 0)
    pub_port, replay_port = pub.bind_to_random_port("tcp://127.0.0.1"), router.bind_to_random_port("tcp://127.0.0.1")
    batches = [msgspec.msgpack.encode(stored_batch([1])), msgspec.msgpack.encode(stored_batch([2], parent=1))]

    def frame(seq: int) -> bytes:
        return seq.to_bytes(8, "big")

    try:
        endpoint = EventsEndpoint(f"tcp://127.0.0.1:{pub_port}", replay_endpoint=f"tcp://127.0.0.1:{replay_port}")
        with KVEventsSubscriber([endpoint], replay_timeout_s=10, min_interval_s=0.02) as subscriber:
            assert pub.poll(10_000) and pub.recv() == b"\x01", "the subscription did not reach the publisher"
            assert router.poll(10_000), "the subscriber asked for no replay"
            client, _empty, from_seq = router.recv_multipart()
            assert int.from_bytes(from_seq, "big") == 0
            for seq, payload in enumerate(batches):
                router.send_multipart((client, b"", b"", frame(seq), payload))
            router.send_multipart((client, b"", b"", (-1).to_bytes(8, "big", signed=True), b""))
            assert subscriber.wait_for(lambda s: s.ranks[0].last_seq == 1, 10) is not None, subscriber.latest()
            assert router.poll(10_000), "no catch-up once the subscription had landed"
            client, _empty, _from = router.recv_multipart()
            router.send_multipart((client, b"", b"", (-1).to_bytes(8, "big", signed=True), b""))

            pub.send_multipart((b"", frame(1), batches[1]))  # the live copy, after the replay
            pub.send_multipart((b"", frame(2), msgspec.msgpack.encode(stored_batch([3], parent=2))))
            state = subscriber.wait_for(lambda s: s.ranks[0].last_seq == 2, 10)
            assert state is not None, subscriber.latest()
            rank = state.ranks[0]
            assert rank.num_restarts == 0 and {key[2] for key in rank.stored} == {1, 2, 3}
            assert rank.caught_up and rank.gaps == ()

            pub.send_multipart((b"", frame(0), msgspec.msgpack.encode(stored_batch([9]))))  # a new publisher
            state = subscriber.wait_for(lambda s: s.ranks[0].num_restarts == 1 and s.ranks[0].last_seq == 0, 10)
            assert state is not None, subscriber.latest()
            assert {key[2] for key in state.ranks[0].stored} == {9} and state.ranks[0].caught_up
    finally:
        pub.close()
        router.close()
        ctx.term()


def test_what_a_server_published_before_the_subscription_landed_is_asked_for_again():
    """The first replay can be answered (empty) before the server publishes, and what it publishes before
    the subscription reaches its PUB socket is dropped: once the subscription has landed, the subscriber
    asks for the server's buffer again and gets it."""
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    replay_port = router.bind_to_random_port("tcp://127.0.0.1")
    with socket.socket() as probe:  # a free port for the PUB socket, bound only after the first replay
        probe.bind(("127.0.0.1", 0))
        pub_port = probe.getsockname()[1]
    pub = ctx.socket(zmq.XPUB)
    pub.setsockopt(zmq.LINGER, 0)
    batch = msgspec.msgpack.encode(stored_batch([1]))
    end = (-1).to_bytes(8, "big", signed=True)
    try:
        endpoint = EventsEndpoint(f"tcp://127.0.0.1:{pub_port}", replay_endpoint=f"tcp://127.0.0.1:{replay_port}")
        with KVEventsSubscriber([endpoint], replay_timeout_s=10, min_interval_s=0.02) as subscriber:
            assert router.poll(10_000), "the subscriber asked for no replay"
            client, _empty, _from = router.recv_multipart()
            router.send_multipart((client, b"", b"", end, b""))  # nothing published yet
            assert subscriber.wait_for(lambda s: s.ranks[0].link == LINK_LIVE, 10) is not None
            pub.bind(f"tcp://127.0.0.1:{pub_port}")
            pub.send_multipart((b"", (0).to_bytes(8, "big"), batch))  # no subscriber yet: dropped
            assert pub.poll(10_000) and pub.recv() == b"\x01", "the subscription did not reach the publisher"
            assert router.poll(10_000), "the subscriber did not ask again once subscribed"
            client, _empty, from_seq = router.recv_multipart()
            assert int.from_bytes(from_seq, "big") == 0
            router.send_multipart((client, b"", b"", (0).to_bytes(8, "big"), batch))
            router.send_multipart((client, b"", b"", end, b""))
            state = subscriber.wait_for(lambda s: s.ranks[0].last_seq == 0, 10)
            assert state is not None, subscriber.latest()
            assert {key[2] for key in state.ranks[0].stored} == {1} and state.ranks[0].num_restarts == 0
    finally:
        pub.close()
        router.close()
        ctx.term()


def test_a_message_that_is_not_a_batch_is_named_and_the_rest_still_followed():
    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    try:
        with KVEventsSubscriber([EventsEndpoint(f"tcp://127.0.0.1:{port}")], min_interval_s=0.02) as subscriber:
            first = msgspec.msgpack.encode(stored_batch([5]))
            seen = None
            for _attempt in range(100):  # until the subscription has reached the PUB socket
                pub.send_multipart((b"", (0).to_bytes(8, "big"), first))
                seen = subscriber.wait_for(lambda s: s.ranks[0].num_stored_now == 1, 0.1)
                if seen is not None:
                    break
            assert seen is not None, subscriber.latest()
            pub.send_multipart((b"", (1).to_bytes(8, "big"), b"\xc1"))
            pub.send_multipart((b"", (2).to_bytes(8, "big"), msgspec.msgpack.encode(stored_batch([6], parent=5))))
            state = subscriber.wait_for(lambda s: s.ranks[0].last_seq == 2, 10)
            assert subscriber.running
    finally:
        pub.close(linger=0)
        ctx.term()
    assert state is not None, subscriber.latest()
    rank = state.ranks[0]
    assert {key[2] for key in rank.stored} == {5, 6}
    assert any("batch 1 is not msgpack" in gap for gap in rank.gaps) and rank.caught_up is False
