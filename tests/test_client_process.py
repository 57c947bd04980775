"""vLLM's client loop in a process of its own: the window serves, streams, aborts and switches engines
through the engine-client process; a killed client is a clear engine error with a restart, and no
process of the app outlives it. The real window and the real vLLM CPU engine throughout."""
from __future__ import annotations

import os
import signal
import time
from dataclasses import replace

import psutil
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QPushButton

from chat_driver import ENGINE_START_TIMEOUT_MS, HANG_TIMEOUT_MS, reply_line, type_and_send, wait_finished
from killed_app import killed_app_leaves
from workbench.engine.process_guard import is_running

pytestmark = pytest.mark.slow  # the real engine


@pytest.fixture
def client_window(window):
    from workbench.bridge.client_bridge import ClientProcessThread

    if not isinstance(window.engine, ClientProcessThread):
        pytest.skip("the window runs the thread client (WORKBENCH_ENGINE_CLIENT=thread)")
    return window


def _descendants() -> dict[int, str]:
    found = {}
    for process in psutil.Process().children(recursive=True):
        try:
            found[process.pid] = " ".join(process.cmdline())
        except psutil.Error:
            pass
    return found


def test_chat_streams_and_stops_through_the_client_process(client_window, qtbot):
    window = client_window
    host = window.engine.host
    client = psutil.Process(host.client_pid)
    assert client.ppid() == os.getpid() and "workbench.engine.client_process" in " ".join(client.cmdline())
    engine_pids = window.model.engine.info.engine_pids
    assert engine_pids and set(engine_pids) <= {p.pid for p in client.children(recursive=True)}, \
        "the engine's processes are the client's children"
    # The memory panel reads the engine processes named by the engine's facts (the client's children now)
    # and the client process itself, which holds vLLM's client loop.
    reading = window.memory_service.sample()
    assert {p.pid for p in reading.processes} == set(engine_pids) | {host.client_pid}
    assert all(p.host_rss_bytes for p in reading.processes)
    assert [p.name for p in reading.processes if p.pid == host.client_pid] == ["engine client"]

    _, reply = type_and_send(window, qtbot, "What is a KV cache?")
    wait_finished(qtbot, reply)
    assert reply.status == "done" and len(reply.text.split()) >= 3, reply.error
    qtbot.waitUntil(lambda: host.latest_stats().totals.generation_tokens >= reply.figures.output_tokens,
                    timeout=HANG_TIMEOUT_MS)
    snapshot = host.latest_snapshot()
    assert snapshot is not None and snapshot.scan_problems == (), "the rebuilt snapshot equals vLLM's pool"

    window.chat.sampling.ignore_eos.setChecked(True)
    window.chat.sampling.max_tokens.setValue(1800)
    _, long_reply = type_and_send(window, qtbot, "Count to five.")
    qtbot.waitUntil(lambda: len(long_reply.text) > 10, timeout=60_000)
    qtbot.mouseClick(window.findChild(QPushButton, "stopButton"), Qt.LeftButton)
    qtbot.waitUntil(lambda: long_reply.status == "stopped", timeout=HANG_TIMEOUT_MS)
    text_at_stop = long_reply.text
    qtbot.waitUntil(lambda: (s := host.latest_snapshot()) is not None and s.num_in_use == 0, timeout=HANG_TIMEOUT_MS)
    assert long_reply.text == text_at_stop, "nothing streams after Stop"


def test_requests_posted_together_reach_the_engine_as_one_command(client_window, qtbot):
    """A batch's top-up (here three requests posted in one turn of the event loop) crosses to the client
    as one SubmitAll, so the engine has them all before its next step, and before the window's own
    work of that turn (a zero timer set before the posts fires after the send); any other command
    sends what waits first, so a request's Abort never overtakes it."""
    from PySide6.QtCore import QTimer

    from workbench.bench.gui.window_driver import EndedRequests, run_until
    from workbench.engine.backend import ChatRequest, SamplingSettings
    from workbench.engine.commands import Abort, Submit, SubmitAll

    host = client_window.engine.host
    sent, order = [], []
    send = host._post_now
    host._post_now = lambda command: (sent.append(command), order.append("sent"), send(command))
    sampling = SamplingSettings(temperature=0.0, max_tokens=8, ignore_eos=True)

    def post_all() -> None:
        QTimer.singleShot(0, lambda: order.append("zero timer"))  # the window's work queued in this turn
        for request in requests:
            host.post(Submit(request))

    try:
        requests = [ChatRequest(f"together-{i}", (), sampling, prompt_token_ids=(20 + i, 21, 22)) for i in range(3)]
        ended = EndedRequests(3)
        assert run_until(host, ended, 60_000, post_all)
        assert ended.failures == [] and ended.finished == 3
        assert sent == [SubmitAll(tuple(requests))]
        assert order == ["sent", "zero timer"], "the requests leave before the rest of the turn's work"

        late = ChatRequest("late", (), sampling, prompt_token_ids=(30, 31))
        host.post(Submit(late))
        host.post(Abort("late"))
        assert sent[1:] == [Submit(late), Abort("late")]
    finally:
        del host._post_now


def test_a_new_engine_in_the_same_client(client_window, qtbot):
    """A new engine in the same client, the one before gone from its memory. Once an engine is ready, what the
    client holds is left out of Python's collections: a full one went over 630,000 objects, 321 ms between two
    steps."""
    from workbench.bench.client_bench import left_out_of_collections, watch_engine, watched_engine_alive

    window = client_window
    host = window.engine.host
    client_pid = host.client_pid
    old_engine = window.model.engine.info.engine_pids
    left_out = host.call(watch_engine)
    assert left_out > 100_000, "the objects made before the engine was ready are left out"
    start_id = window.start_engine(replace(window.model.config, max_num_seqs=16))
    qtbot.waitUntil(lambda: window.model.engine.settled(start_id), timeout=ENGINE_START_TIMEOUT_MS)
    assert window.model.engine.ready, window.model.engine.message
    assert host.client_pid == client_pid, "a new engine runs in the same client process"
    assert set(window.model.engine.info.engine_pids).isdisjoint(old_engine)
    qtbot.waitUntil(lambda: not any(is_running(p) for p in old_engine), timeout=HANG_TIMEOUT_MS)
    assert not host.call(watched_engine_alive), "the engine before is collected"
    assert host.call(left_out_of_collections) < left_out * 1.05, "the client's heap left out stays as it was"
    _, reply = type_and_send(window, qtbot, "Hello!")
    wait_finished(qtbot, reply)
    assert reply.status == "done" and reply.text
    assert window.model.engine.info.resolved.get("max_num_seqs", 16) == 16


def test_killed_client_process_is_an_engine_error_with_restart(client_window, qtbot):
    window = client_window
    window.chat.sampling.ignore_eos.setChecked(True)
    window.chat.sampling.max_tokens.setValue(1800)
    client_pid = window.engine.host.client_pid
    engine_pids = list(window.model.engine.info.engine_pids)
    conversation, reply = type_and_send(window, qtbot, "What is a block?")
    qtbot.waitUntil(lambda: len(reply.text) > 20, timeout=60_000)
    os.kill(client_pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: window.model.engine.state == "died", timeout=60_000)
    message = window.findChild(QLabel, "engineMessage").text()
    assert f"the engine client process (pid {client_pid}) was killed by signal 9 (SIGKILL)" in message
    assert "Restart the engine" in message
    assert reply.status == "error" and len(reply.text) > 20, "what streamed stays in the transcript"
    assert conversation.messages[0].text == "What is a block?"
    qtbot.waitUntil(lambda: not any(is_running(p) for p in engine_pids), timeout=HANG_TIMEOUT_MS)
    assert not set(_descendants()) & {client_pid, *engine_pids}, "no process of the dead client is left"
    assert window.engine.host.latest_snapshot() is None
    window.chat.sampling.ignore_eos.setChecked(False)
    window.chat.sampling.max_tokens.setValue(64)
    _, unsent = type_and_send(window, qtbot, "Still there?")  # no client now: it waits, saying why
    assert unsent.status == "waiting" and window.engine.host.client_pid == client_pid
    assert "not sent yet: the engine stopped unexpectedly" in reply_line(window, unsent)
    died_start = window.model.engine.start_id
    qtbot.mouseClick(window.findChild(QPushButton, "restartButton"), Qt.LeftButton)
    qtbot.waitUntil(lambda: window.model.engine.settled(died_start + 1), timeout=ENGINE_START_TIMEOUT_MS)
    assert window.model.engine.state == "ready", window.model.engine.message
    assert window.engine.host.client_pid != client_pid, "a fresh client process"
    wait_finished(qtbot, unsent)  # the question that waited is answered by the fresh client
    assert unsent.status == "done" and unsent.text
    _, again = type_and_send(window, qtbot, "Hello!")
    wait_finished(qtbot, again)
    assert again.status == "done" and again.text


HEADLESS_APP = '''
import os, sys, time
if __name__ == "__main__":
    from PySide6.QtCore import QCoreApplication, Qt
    from workbench.bridge.client_bridge import ClientProcessThread
    from workbench.engine.commands import StartEngine
    from workbench.engine.events import EngineReady
    from workbench.engine.process_guard import mark_owner
    from workbench.engine.spec import EngineConfig
    app = QCoreApplication([])
    mark_owner()
    engine = ClientProcessThread()
    def on_event(event):
        if isinstance(event, EngineReady):
            print("READY", engine.host.client_pid, *event.info.engine_pids, flush=True)
    engine.host.event_emitted.connect(on_event, Qt.DirectConnection)
    engine.start()
    engine.host.post(StartEngine(EngineConfig(model=sys.argv[1], num_gpu_blocks_override=256), 1))
    time.sleep(600)
'''


def test_client_and_engine_die_with_a_killed_app(tmp_path, demo_model_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    assert killed_app_leaves(HEADLESS_APP, tmp_path, demo_model_path, env, at_least=2) == [], \
        "the client or its engine outlived the killed app"


def test_stop_kills_a_client_that_hangs(qapp):
    """``stop``'s contract, as the thread's: shut down, wait, and kill a client that does not answer."""
    from workbench.bench.client_bench import backend_capabilities
    from workbench.bridge.client_bridge import ClientProcessThread

    engine = ClientProcessThread()
    engine.start()
    assert engine.host.call(backend_capabilities, timeout_s=120) is None, "a client with no engine yet"
    client_pid = engine.host.client_pid
    os.kill(client_pid, signal.SIGSTOP)  # hung: it reads no command any more
    started = time.monotonic()
    assert engine.stop(timeout_ms=2_000)
    assert time.monotonic() - started < 30
    assert not is_running(client_pid) and not engine.thread.isRunning()
    assert client_pid not in _descendants()
