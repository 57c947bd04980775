"""What crosses the engine-client pipe: every message pickles, and a KV snapshot or a statistics series
rebuilt from what changed equals the one the client had, sharing the chunks that did not change; the
client's batches wait out their interval, except the last message of a run."""
from __future__ import annotations

import pickle

import numpy as np

from workbench.engine.backend import ChatRequest, EngineInfo, Message, StreamEvent, WorkerMemory
from workbench.engine.client_wire import (
    Batch, SnapshotDecoder, SnapshotEncoder, StatsDecoder, StatsEncoder, engine_client_kind,
)
from workbench.engine.commands import Abort, Shutdown, StartEngine, StopEngine, Submit, SubmitAll
from workbench.engine.events import (
    EngineLogOpened, EngineReady, EngineState, RequestFailed, RequestFinished, StartProgressed, StateChanged,
    TextFlushed,
)
from workbench.engine.kv_snapshot import ARRAY_NAMES, CHUNK_BLOCKS, KVPoolMirror
from workbench.engine.metrics import RequestFigures
from workbench.engine.spec import EngineConfig
from workbench.engine.start_phases import progress_for
from workbench.engine.stats import StatsRecorder, StepStats


def _delta(version, full, n, ids, states, tables=(), removed=()):
    ids = np.asarray(ids, np.int32)
    states = np.asarray(states, np.int8)
    table_ids = np.array([b for _, _, appended in tables for b in appended], np.int32)
    return {"version": version, "full": full, "num_blocks": n, "block_size": 16, "ids": ids.tobytes(),
            "states": states.tobytes(), "ref_cnts": (states >= 3).astype(np.int32).tobytes(),
            "hashed": np.zeros(ids.size, np.bool_).tobytes(),
            "tables": [(rid, offset, len(appended)) for rid, offset, appended in tables],
            "table_ids": table_ids.tobytes(), "removed": list(removed), "counts": [1, 2, 0, 3, 0],
            "kv_usage": 0.25, "tokens_stored": 40, "engine_ns": 1000}


def _over_the_pipe(value):
    from multiprocessing.reduction import ForkingPickler  # the pickler the engine-client pipe uses

    return pickle.loads(ForkingPickler.dumps(value))


def test_every_message_and_command_pickles():
    info = EngineInfo("demo", "0.32", "cpu", 2048, "{{ x }}", (123, 456),
                      (WorkerMemory(456, "cpu", None, 1000, "parameters", 2000),), 1024, {"block_size": 16})
    figures = RequestFigures(12, None, 4, 0.05, 80.0, queue_s=0.001)
    messages = [
        StateChanged(EngineState.FAILED, "too small", 3, (("max_model_len", 1024),)),
        StartProgressed(progress_for("weights", "Loading weights", 0.5)),
        EngineReady(info), EngineLogOpened("/tmp/engine.log"), TextFlushed.of({"r1": "Hello", "r2": " wor"}),
        RequestFinished(StreamEvent("r1", "", True, "stop", figures)), RequestFailed("r2", "gone"),
        StartEngine(EngineConfig(model="demo"), 4), Submit(ChatRequest("r3", (Message("user", "Hi"),))), Abort("r1"), StopEngine(), Shutdown(),
        SubmitAll((ChatRequest("r4", (Message("user", "Hi"),)), ChatRequest("r5", (), prompt_token_ids=(1, 2)))),
    ]
    for message in messages:
        assert _over_the_pipe(message) == message
    text = _over_the_pipe(messages[4])
    assert dict(text.chunks) == {"r1": "Hello", "r2": " wor"}
    batch = _over_the_pipe(Batch(tuple(messages[:7])))
    assert batch.messages == tuple(messages[:7])


def test_snapshot_rebuilt_from_changed_chunks_equals_the_clients_and_shares_the_rest():
    num_blocks = 5 * CHUNK_BLOCKS + 100
    mirror, encoder, decoder = KVPoolMirror(), SnapshotEncoder(), SnapshotDecoder()
    mirror.apply(_delta(1, True, num_blocks, np.arange(num_blocks), np.ones(num_blocks)))
    first = mirror.snapshot({}, 1.0)
    update = _over_the_pipe(encoder.encode(first))
    assert len(update.chunks) == 6, "the first snapshot is sent whole"
    rebuilt = decoder.decode(update)
    mirror.apply(_delta(2, False, num_blocks, [CHUNK_BLOCKS + 5, CHUNK_BLOCKS + 6], [3, 3],
                        tables=[("engine-a", 0, [CHUNK_BLOCKS + 5, CHUNK_BLOCKS + 6])]))
    mirror.apply(_delta(3, False, num_blocks, [7], [4], tables=[("engine-b", 0, [7])]))
    second = mirror.snapshot({"engine-a": "a"}, 2.0)
    update = _over_the_pipe(encoder.encode(second))
    assert sorted(update.chunks) == [0, 1] and set(update.tables) == {"a", "engine-b"}
    assert update.num_bytes < 3 * CHUNK_BLOCKS * 10
    again = decoder.decode(update)
    for name in ARRAY_NAMES:
        assert np.array_equal(getattr(again, name), getattr(second, name))
        assert again.chunks[name][3] is rebuilt.chunks[name][3], "unchanged chunks are shared, not copied"
        assert not again.chunks[name][0].flags.writeable
    assert {r: ids.tolist() for r, ids in again.tables.items()} == {"a": [CHUNK_BLOCKS + 5, CHUNK_BLOCKS + 6],
                                                                     "engine-b": [7]}
    assert (again.version, again.counts, again.kv_usage, again.round_trip_ms) == (3, (1, 2, 0, 3, 0), 0.25, 2.0)
    mirror.apply(_delta(4, False, num_blocks, [8], [1], removed=["engine-b"]))
    third = decoder.decode(_over_the_pipe(encoder.encode(mirror.snapshot({"engine-a": "a"}, 3.0))))
    assert list(third.tables) == ["a"] and third.tables["a"] is again.tables["a"]
    assert third.states[8] == 1 and third.states[7] == 4


def test_stats_series_sent_as_new_points_equals_the_clients():
    recorder, encoder, decoder = StatsRecorder(0.0, capacity=50, start_id=4), StatsEncoder(), StatsDecoder(capacity=50)
    now = 0.0
    for step in range(200):  # about 66 points: the ring of 50 wraps
        now += 0.1
        recorder.add(StepStats(2, 1, 0.5, 10, 5, 3, 7, 0, ttfts_s=(0.01,), itls_s=(0.002, 0.003)))
        if recorder.tick(now):
            series = recorder.publish()
            update = _over_the_pipe(encoder.encode(series))
            got = decoder.decode(update)
            assert update.rows.shape[1] <= 1 or update.restart
            assert got.version == series.version and got.totals == series.totals and got.start_id == 4
            for name in series.series.columns:
                assert np.array_equal(got.series[name], series.series[name], equal_nan=True)
    assert len(got.series) == 50, "the window's ring is as long as the client's"
    encoder.restart()  # a new engine: its series is sent whole and replaces the old one
    fresh = StatsRecorder(now, start_id=5)
    fresh.tick(now + 0.3)
    got = decoder.decode(_over_the_pipe(encoder.encode(fresh.publish())))
    assert len(got.series) == 1 and got.version == 1 and got.start_id == 5, "named by the start it belongs to"


def test_engine_client_setting(monkeypatch):
    monkeypatch.delenv("WORKBENCH_ENGINE_CLIENT", raising=False)
    assert engine_client_kind() == "process"
    monkeypatch.setenv("WORKBENCH_ENGINE_CLIENT", "thread")
    assert engine_client_kind() == "thread" and engine_client_kind("process") == "process"
    monkeypatch.setenv("WORKBENCH_ENGINE_CLIENT", "fork")
    try:
        engine_client_kind()
    except ValueError as exc:
        assert "use process or thread" in str(exc)
    else:
        raise AssertionError("a wrong setting must be refused")


def test_a_servers_messages_cross_the_pipe():
    """A server's backend runs in the client too: its metrics, read-only mappings, cross as they are."""
    from multiprocessing.reduction import ForkingPickler
    from types import MappingProxyType

    from workbench.remote.events import ServerMetricsRead, ServerStateChanged
    from workbench.remote.prometheus import EngineMetrics, ServerMetrics

    engine = EngineMetrics("0", MappingProxyType({"generation_tokens": 12.0}), MappingProxyType({"num_running": 1.0}),
                           MappingProxyType({"ttft": ((0.1, 1.0), (float("inf"), 2.0))}))
    for message in (ServerMetricsRead(ServerMetrics((engine,), 5.0, ("demo",))),
                    ServerStateChanged("connected", "http://127.0.0.1:8000")):
        received = pickle.loads(ForkingPickler.dumps(Batch((message,))))
        assert received.messages == (message,)
    assert received.messages[0].base_url == "http://127.0.0.1:8000"
    got = pickle.loads(ForkingPickler.dumps(ServerMetricsRead(ServerMetrics((engine,), 5.0))))
    assert got.metrics.total().counter("generation_tokens") == 12.0
    assert isinstance(got.metrics.engines[0].counters, MappingProxyType)


def test_the_batch_that_ends_a_run_is_sent_without_waiting_out_the_interval():
    import socket
    from multiprocessing.connection import Connection

    from workbench.engine.client_process import BatchingListener

    ours, theirs = socket.socketpair()
    window_end = Connection(ours.detach())
    listener = BatchingListener(Connection(theirs.detach()), interval_s=30.0)
    try:
        listener.publish(TextFlushed.of({"r1": "Hello"}))  # the first batch goes at once
        assert window_end.poll(10) and window_end.recv().messages == (TextFlushed.of({"r1": "Hello"}),)
        finished = RequestFinished(StreamEvent("r1", "", True, "stop", None))
        listener.publish(finished)
        assert not window_end.poll(0.5), "a batch waits out the interval for more to join it"
        listener.send_now()
        assert window_end.poll(10), "the run's last message did not wait the interval's 30 s"
        assert window_end.recv().messages == (finished,)
    finally:
        listener.close()
        window_end.close()


def test_images_and_what_a_vision_engine_takes_cross_the_pipe():
    from workbench.engine.backend import VisionInfo
    from workbench.engine.images import ImageInput, ImageRef
    from workbench.engine.spec import DEMO_VL_MODEL

    vision = VisionInfo("Idefics3ForConditionalGeneration", 5, 112 * 112, "resized to a longest edge of 112 px")
    info = EngineInfo("demo-vl", "0.32", "cpu", 2048, "{{ x }}", (1,), (), 1024, {}, vision=vision)
    image = ImageInput(ImageRef("ab" * 32, "cat.png", "image/png", 48, 32, 5), b"\x89PNG.")
    request = ChatRequest("r1", (Message("user", "What is it?", images=(image,)),))
    figures = RequestFigures(86, 64, 8, 0.05, 80.0, num_image_tokens=68)
    config = EngineConfig(model="demo").with_model(DEMO_VL_MODEL)
    for message in (EngineReady(info), Submit(request), RequestFinished(StreamEvent("r1", "", True, "stop", figures)),
                    StartEngine(config, 1)):
        assert _over_the_pipe(message) == message
    assert _over_the_pipe(EngineReady(info)).info.vision.max_images_per_prompt == 5
    assert _over_the_pipe(Submit(request)).request.messages[0].images[0].data == b"\x89PNG."
