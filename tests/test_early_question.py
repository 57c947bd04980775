"""A question asked before the engine can take it waits, says what it waits for, and is answered.

Through the real window and the real CPU engine, at the earliest moment Send can be pressed: right
after launch, right after Restart engine and Apply of a preset, and while the engine is stopped or
failed (then the question says so and goes out once the engine is back).
"""
from __future__ import annotations

from dataclasses import replace

import pytest
from chat_driver import ENGINE_START_TIMEOUT_MS, HANG_TIMEOUT_MS, REPLY_TIMEOUT_MS, reply_line, type_and_send, wait_finished

from workbench.engine.events import EngineState, StateChanged
from workbench.engine.start_phases import progress_for
from workbench.model.app_model import AppModel
from workbench.model.engine_commands import EngineCommands, waiting_note
from workbench.model.engine_status import EngineStatus
from workbench.engine.spec import EngineConfig
from workbench.engine.backend import SamplingSettings


def assert_answered(qtbot, window, reply) -> None:
    wait_finished(qtbot, reply, timeout=ENGINE_START_TIMEOUT_MS + REPLY_TIMEOUT_MS)
    assert reply.status == "done", (reply.status, reply.error)
    assert reply.text.strip(), "the question was answered once the engine was ready"
    assert "TTFT" in reply_line(window, reply)


@pytest.mark.slow
def test_a_question_asked_at_launch_waits_for_the_engine_and_is_answered(qtbot, shared_window, demo_model_path):
    from conftest import demo_engine_config
    from workbench.app import build_window

    window, engine = build_window(demo_engine_config(demo_model_path), keep=False)
    qtbot.addWidget(window)
    window.show()
    try:
        conversation, reply = type_and_send(window, qtbot, "What is a KV cache?")  # before the engine reports at all
        assert reply.status == "waiting" and conversation.messages[-2].text == "What is a KV cache?"
        assert reply_line(window, reply).startswith("waiting for the engine")
        assert "generating" not in reply_line(window, reply)
        seen = set()
        qtbot.waitUntil(lambda: seen.add(reply_line(window, reply)) or window.model.engine.ready,
                        timeout=ENGINE_START_TIMEOUT_MS)
        assert any(line.endswith(" %") and "waiting for the engine: " in line for line in seen), seen
        assert_answered(qtbot, window, reply)
    finally:
        window.close()  # the window goes at once; the engine stops behind it
    assert window.shutdown.wait(HANG_TIMEOUT_MS / 1000), "the engine did not stop behind the closed window"
    assert not engine.thread.isRunning()


@pytest.mark.slow
def test_a_question_asked_right_after_restart_engine_is_answered_by_the_new_engine(qtbot, window):
    start_id = window.restart_engine()  # Engine > Restart engine
    _, reply = type_and_send(window, qtbot, "Are you back?")
    assert reply.status == "waiting", "the old engine is going away: the question waits for the new one"
    qtbot.waitUntil(lambda: window.model.engine.settled(start_id), timeout=ENGINE_START_TIMEOUT_MS)
    assert window.model.engine.ready
    assert_answered(qtbot, window, reply)
    assert window.model.requests.get(reply.request_id).status == "done"


@pytest.mark.slow
def test_a_question_asked_right_after_apply_is_answered_by_the_preset_engine(qtbot, window):
    presets, before = window.presets, window.model.latest_start_id
    presets.choose("low-latency")
    with qtbot.waitSignal(presets.checked, timeout=HANG_TIMEOUT_MS) as checked:  # checked off the GUI thread
        presets.apply()
    assert checked.args == [True], presets.problem_text.text()
    qtbot.waitUntil(lambda: window.model.latest_start_id > before, timeout=ENGINE_START_TIMEOUT_MS)
    start_id = window.model.latest_start_id
    _, reply = type_and_send(window, qtbot, "Which preset is this?")
    assert reply.status == "waiting"
    qtbot.waitUntil(lambda: window.model.engine.settled(start_id), timeout=ENGINE_START_TIMEOUT_MS)
    assert window.model.engine.ready, window.model.engine.message
    assert_answered(qtbot, window, reply)


@pytest.mark.slow
def test_a_question_asked_while_the_engine_is_stopped_says_so_and_goes_once_it_is_back(qtbot, window):
    window.stop_engine()
    qtbot.waitUntil(lambda: window.model.engine.state is EngineState.STOPPED, timeout=REPLY_TIMEOUT_MS)
    _, reply = type_and_send(window, qtbot, "Is anyone there?")
    assert reply.status == "waiting"
    assert "not sent yet: the engine is stopped" in reply_line(window, reply)
    assert window.chat.stop_button.isEnabled() and not window.chat.send_button.isEnabled()
    window.restart_engine()  # the offer taken: the question goes once the engine is back
    assert_answered(qtbot, window, reply)


@pytest.mark.slow
def test_a_question_asked_after_a_failed_start_waits_and_stop_takes_it_back(qtbot, window, tmp_path):
    start_id = window.start_engine(replace(window.model.config, model=str(tmp_path / "no-such-model")))
    qtbot.waitUntil(lambda: window.model.engine.settled(start_id), timeout=ENGINE_START_TIMEOUT_MS)
    assert window.model.engine.state is EngineState.FAILED
    conversation, reply = type_and_send(window, qtbot, "Will this be lost?")
    assert "not sent yet: the engine did not start" in reply_line(window, reply)
    window.chat.stop()
    assert reply.status == "stopped" and "not sent" in reply.error
    assert conversation.messages[-2].text == "Will this be lost?", "what the user typed is kept"
    assert window.model.num_in_flight() == 0


def test_what_a_waiting_question_says_follows_the_engine():
    training = replace(EngineStatus(state=EngineState.STARTING, start_id=1),
                       progress=progress_for("model", "Training the demo model (loss 2.31)", 0.31))
    assert waiting_note(training, False) == "waiting for the engine: training the demo model (loss 2.31), 31 %"
    assert waiting_note(EngineStatus(state=EngineState.READY, start_id=1), True) == "waiting for the engine to start"
    assert waiting_note(EngineStatus(state=EngineState.DIED), False).startswith(
        "not sent yet: the engine stopped unexpectedly")


def test_a_waiting_reply_says_it_in_words_every_font_draws():
    from workbench.model.conversations import ChatMessage
    from workbench.ui.chat_pane import figures_text

    turn = ChatMessage("assistant", "", status="waiting")
    assert figures_text(turn, "waiting for the engine: loading vLLM, 81 %") == "waiting for the engine: loading vLLM, 81 %"


def test_the_one_owner_sends_waiting_questions_in_order_once_the_engine_asked_for_is_ready():
    model = AppModel(EngineConfig(model="demo"))
    posted = []
    commands = EngineCommands(model, posted.append)
    first, second = model.new_conversation(), model.new_conversation()
    start_id = commands.start()
    asked = [commands.ask(first.conversation_id, "one", SamplingSettings()),
             commands.ask(second.conversation_id, "two", SamplingSettings())]
    assert [type(c).__name__ for c in posted] == ["StartEngine"]
    model.apply(StateChanged(EngineState.STARTING, "starting", start_id))
    model.apply(StateChanged(EngineState.READY, "an older engine's ready", start_id - 1))
    assert len(posted) == 1, "ready, but not the engine the model asked for"
    model.apply(StateChanged(EngineState.READY, "ready", start_id))
    assert posted[-1].requests == tuple(asked)
    assert [c.messages[-1].status for c in (first, second)] == ["streaming", "streaming"]
    model.apply(StateChanged(EngineState.STOPPED, "stopped", start_id))
    assert first.messages[-1].status == "stopped", "the engine that held it is gone"
