"""Bad input and faults: each gives a message naming the cause and the fix; nothing typed is lost."""
from __future__ import annotations

import os
import re
import signal

import psutil
import pytest
from PySide6.QtCore import QObject, Qt, Slot
from PySide6.QtWidgets import QLabel, QPushButton

from chat_driver import ENGINE_START_TIMEOUT_MS, HANG_TIMEOUT_MS, reply_line, type_and_send, wait_finished
from workbench.engine.events import StateChanged
from workbench.engine.process_guard import is_running

pytestmark = pytest.mark.slow  # the real engine, started once for the session


class StateRecorder(QObject):
    """The states the engine loop reports through the worker, in order. A GUI-thread QObject, so
    they arrive queued, each after the model (and the window observing it) has applied it."""

    def __init__(self):
        super().__init__()
        self.signalled: list[tuple[str, str]] = []

    @Slot(object)
    def on_host_event_emitted(self, event) -> None:
        if isinstance(event, StateChanged):
            self.signalled.append((event.state, event.message))


def engine_message(window) -> str:
    return window.findChild(QLabel, "engineMessage").text()


def test_model_path_that_does_not_exist(window, qtbot):
    start_id = window.start_with_model("/no/such/model/folder")
    qtbot.waitUntil(lambda: window.model.engine.settled(start_id), timeout=ENGINE_START_TIMEOUT_MS)
    assert window.model.engine.state == "failed"
    assert "/no/such/model/folder" in engine_message(window)
    assert "does not exist" in engine_message(window)
    assert window.findChild(QPushButton, "restartButton").isEnabled()


def test_folder_that_holds_no_model(window, qtbot, tmp_path):
    (tmp_path / "notes.txt").write_text("not a model")
    start_id = window.start_with_model(str(tmp_path))
    qtbot.waitUntil(lambda: window.model.engine.settled(start_id), timeout=ENGINE_START_TIMEOUT_MS)
    assert window.model.engine.state == "failed"
    assert "holds no model: config.json is missing" in engine_message(window)
    _, reply = type_and_send(window, qtbot, "Is anyone there?")
    assert reply.status == "waiting", "kept for the engine, not refused"
    line = reply_line(window, reply)
    assert "not sent yet: the engine did not start" in line and "Restart engine" in line, line
    assert window.chat.current.messages[0].text == "Is anyone there?", "the user's text stays in the transcript"


def test_prompt_longer_than_max_model_len(window, qtbot):
    long_system_prompt = "The cache keeps every block it can. " * 400
    window.chat.sampling.system.setPlainText(long_system_prompt)
    conversation, reply = type_and_send(window, qtbot, "Does this fit?")
    qtbot.waitUntil(lambda: reply.status == "error", timeout=HANG_TIMEOUT_MS)
    assert "max_model_len is 2048" in reply.error and "Shorten the system prompt" in reply.error
    assert conversation.messages[0].text == "Does this fit?"
    assert window.chat.sampling.system_prompt() == long_system_prompt
    assert window.model.engine.state == "ready", "a refused prompt leaves the engine running"
    shown = [label.text() for label in window.chat.stack.currentWidget().findChildren(QLabel)]
    assert any("max_model_len is 2048" in text for text in shown)


def test_engine_that_fails_to_start_kv_cache_too_small(window, qtbot, demo_model_path):
    from dataclasses import replace

    recorder = StateRecorder()
    window.engine.host.event_emitted.connect(recorder.on_host_event_emitted)
    try:
        window.start_engine(replace(window.model.config, num_gpu_blocks_override=None,
                                    kv_cache_memory_bytes=64 * 1024))
        qtbot.waitUntil(lambda: any(state in ("failed", "ready") for state, _ in recorder.signalled),
                        timeout=ENGINE_START_TIMEOUT_MS)
    finally:
        window.engine.host.event_emitted.disconnect(recorder.on_host_event_emitted)
    signalled = recorder.signalled
    assert [state for state, _ in signalled] == ["starting", "starting", "failed"]
    assert signalled[0][1].startswith("Stopping the engine in use") and signalled[1][1].startswith("Starting")
    assert window.model.engine.state == "failed"
    message = engine_message(window)
    assert message == signalled[-1][1]
    assert "KV cache is too small for max_model_len=2048" in message
    fits = int(re.search(r"it fits about (\d+) tokens", message).group(1))
    advice = rf"max_model_len 2048( needs [\d.]+ GiB of KV cache, [\d.]+ GiB is available)?: use {fits // 32 * 32}, or fp8"
    assert re.search(advice, message), message  # the fix: whole CPU blocks of 32 tokens, or a smaller KV dtype


def test_model_worker_killed_mid_stream_is_named_with_its_signal(window, qtbot):
    """The engine core's own error is then only a consequence ("RuntimeError: cancelled"); the
    message names the worker, its pid and the signal, and, the kernel not having named the
    out-of-memory killer, gives no memory advice."""
    window.chat.sampling.ignore_eos.setChecked(True)
    window.chat.sampling.max_tokens.setValue(1800)
    _, reply = type_and_send(window, qtbot, "What is a block?")
    qtbot.waitUntil(lambda: len(reply.text) > 20, timeout=60_000)
    workers = [p.pid for p in psutil.Process().children(recursive=True) if p.name().startswith("VLLM::Worker")]
    assert workers, "no model-worker process found"
    os.kill(workers[0], signal.SIGKILL)
    qtbot.waitUntil(lambda: window.model.engine.state == "died", timeout=60_000)
    message = engine_message(window)
    assert (f"its model worker VllmWorker-0 (pid {workers[0]}) was killed by signal 9 (SIGKILL): something outside "
            "vLLM ended it") in message, message
    assert_no_memory_advice(message)
    assert "Restart the engine" in message and "cancelled" not in message and "stopped answering" not in message
    assert reply.status == "error" and "SIGKILL" in reply.error and len(reply.text) > 20
    window.chat.sampling.ignore_eos.setChecked(False)


def assert_no_memory_advice(message: str) -> None:
    """A kill this test sent: the out-of-memory killer is not named as the cause, nor its advice given."""
    assert "max_num_seqs" not in message and "smaller model" not in message, message
    assert "the kernel's out-of-memory killer ended it" not in message, message


def _engine_core_pids() -> list[int]:
    pids = []
    for process in psutil.Process().children(recursive=True):
        try:
            if "EngineCore" in " ".join(process.cmdline()) + process.name():
                pids.append(process.pid)
        except psutil.Error:
            pass
    return pids


def test_engine_core_killed_mid_stream(window, qtbot):
    window.chat.sampling.ignore_eos.setChecked(True)
    window.chat.sampling.max_tokens.setValue(1800)
    engine_pids = list(window.model.engine.info.engine_pids)
    conversation, reply = type_and_send(window, qtbot, "What is a block?")
    qtbot.waitUntil(lambda: len(reply.text) > 20, timeout=60_000)
    cores = _engine_core_pids()
    assert cores, "no engine-core process found"
    os.kill(cores[0], signal.SIGKILL)
    qtbot.waitUntil(lambda: window.model.engine.state == "died", timeout=60_000)
    assert window.isVisible()
    message = engine_message(window)
    assert "engine stopped during a reply" in message
    assert (f"its engine core (VLLM::EngineCore, pid {cores[0]}) was killed by signal 9 (SIGKILL): something outside "
            "vLLM ended it") in message, message
    assert "its model worker (VLLM::Worker, pid" in message and "ended with it" in message, message
    assert "still running" not in message and "EngineDeadError" not in message, message
    assert_no_memory_advice(message)
    assert "Restart the engine" in engine_message(window)
    assert reply.status == "error" and len(reply.text) > 20, "what streamed stays in the transcript"
    assert conversation.messages[0].text == "What is a block?"
    qtbot.waitUntil(lambda: not any(is_running(p) for p in engine_pids), timeout=HANG_TIMEOUT_MS)
    died_start = window.model.engine.start_id
    qtbot.mouseClick(window.findChild(QPushButton, "restartButton"), Qt.LeftButton)
    qtbot.waitUntil(lambda: window.model.engine.settled(died_start + 1), timeout=ENGINE_START_TIMEOUT_MS)
    assert window.model.engine.state == "ready"
    window.chat.sampling.ignore_eos.setChecked(False)
    _, again = type_and_send(window, qtbot, "Hello!")
    wait_finished(qtbot, again)
    assert again.status == "done" and again.text


def test_engine_core_killed_while_idle_is_said_at_once_not_at_the_next_question(window, qtbot):
    """`pkill -9 -f VLLM` (the engine core and its worker) with no reply running: the window stops saying the
    engine is ready as soon as the processes are gone (it said so until the next question was sent)."""
    qtbot.waitUntil(lambda: window.model.engine.ready and not window.model.num_in_flight(), timeout=HANG_TIMEOUT_MS)
    _, reply = type_and_send(window, qtbot, "Hello!")
    wait_finished(qtbot, reply)  # and killed at once: its figures may not be on the plots yet
    vllm = [p.pid for p in psutil.Process().children(recursive=True) if p.name().startswith("VLLM::")]
    cores = _engine_core_pids()
    assert cores and vllm, "no vLLM process found"
    for pid in vllm:
        os.kill(pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: window.model.engine.state == "died", timeout=60_000)
    message = engine_message(window)
    assert message.startswith("The engine stopped while idle: its engine core (VLLM::EngineCore, pid "
                              f"{cores[0]}) was killed by signal 9 (SIGKILL)"), message
    assert "What was streamed" not in message and "Restart the engine" in message, message
    assert window.status.restart_button.text() == "Restart engine"
    totals = window.plots.totals.text()  # the dead engine's last figures stay, its end named before them
    generated = re.search(r"engine died: SIGKILL — since start: ([\d,]+) generated", totals)
    assert generated and int(generated[1].replace(",", "")) >= reply.figures.output_tokens > 0, totals
    died_start = window.model.engine.start_id
    qtbot.mouseClick(window.findChild(QPushButton, "restartButton"), Qt.LeftButton)
    qtbot.waitUntil(lambda: window.model.engine.settled(died_start + 1), timeout=ENGINE_START_TIMEOUT_MS)
    assert window.model.engine.state == "ready", window.model.engine.message


def test_every_engine_process_killed_at_once_is_named_with_its_signal(window, qtbot):
    """`pkill -9` of vLLM's processes and the engine-client process together: the message names the
    process whose end the window saw (the engine-client process, where there is one) and the signal,
    never "still running", and gives no memory advice; a restart brings the engine back."""
    window.chat.sampling.ignore_eos.setChecked(True)
    window.chat.sampling.max_tokens.setValue(1800)
    _, reply = type_and_send(window, qtbot, "What is a block?")
    qtbot.waitUntil(lambda: len(reply.text) > 20, timeout=60_000)
    client = getattr(window.engine.host, "client_pid", None)
    vllm = [p.pid for p in psutil.Process().children(recursive=True) if p.name().startswith("VLLM::")]
    cores = _engine_core_pids()
    for pid in ([client] if client else []) + vllm:
        os.kill(pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: window.model.engine.state == "died", timeout=60_000)
    message = engine_message(window)
    named = (f"the engine client process (pid {client})" if client
             else f"its engine core (VLLM::EngineCore, pid {cores[0]})")
    assert f"{named} was killed by signal 9 (SIGKILL): something outside vLLM ended it" in message, message
    assert "still running" not in message and "stopped answering" not in message, message
    assert_no_memory_advice(message)
    assert reply.status == "error" and "SIGKILL" in reply.error and len(reply.text) > 20
    died_start = window.model.engine.start_id
    qtbot.mouseClick(window.findChild(QPushButton, "restartButton"), Qt.LeftButton)
    qtbot.waitUntil(lambda: window.model.engine.settled(died_start + 1), timeout=ENGINE_START_TIMEOUT_MS)
    assert window.model.engine.state == "ready", window.model.engine.message
    window.chat.sampling.ignore_eos.setChecked(False)
