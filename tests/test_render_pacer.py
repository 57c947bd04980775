"""A streaming reply's draws are paced by what they cost; the text shown is never behind for good.
A question's views are built once the engine holds its request, or soon after at the latest."""
from __future__ import annotations

from PySide6.QtCore import Qt

from workbench.engine.events import EngineState, RequestFailed, RequestsTaken, StateChanged
from workbench.engine.sampling import SamplingSettings
from workbench.engine.spec import EngineConfig
from workbench.model.app_model import AppModel
from workbench.model.conversations import ChatMessage, Conversation
from workbench.model.engine_commands import EngineCommands
from workbench.ui.chat_pane import SYNC_AFTER_MS, ChatPane, TranscriptView
from workbench.ui.render_pacer import RenderPacer


def test_the_pacer_keeps_draws_to_their_share_of_the_gui_thread():
    pacer = RenderPacer(min_interval_s=0.05, share=0.1)
    assert pacer.delay_s(100.0) == 0.0  # the first draw at once
    pacer.drawn(100.0, 0.002)  # a short reply: every 50 ms
    assert abs(pacer.delay_s(100.01) - 0.04) < 1e-9
    assert pacer.delay_s(100.05) == 0.0
    pacer.drawn(101.0, 0.035)  # a long one: 35 ms a draw -> one draw every 350 ms
    assert abs(pacer.delay_s(101.05) - 0.3) < 1e-9
    assert pacer.delay_s(101.35) == 0.0
    pacer.drawn(102.0, 0.001)  # short again (a new reply): back to 50 ms
    assert pacer.interval_s == 0.05


def test_streaming_text_is_drawn_and_the_end_at_once(qtbot):
    conversation = Conversation("t")
    reply = ChatMessage("assistant", "", status="streaming")
    conversation.messages += [ChatMessage("user", "hi"), reply]
    view = TranscriptView(conversation)
    qtbot.addWidget(view)
    view.resize(450, 700)
    view.show()
    view.sync()
    body = view.views[reply.message_id].body
    words = ("lorem ipsum dolor sit amet " * 400).split()
    for n in range(100, 2001, 100):  # text arriving faster than a long reply may be drawn
        reply.text = " ".join(words[:n])
        view.render_message(reply.message_id, text_only=True)
    qtbot.waitUntil(lambda: body.text() == reply.text, timeout=5_000)  # the latest text, drawn by the pacer
    assert 1 <= view.num_text_draws < 20
    reply.text += " **done**"
    reply.status = "done"
    view.render_message(reply.message_id)  # the end: drawn at once, whatever the pace
    assert body.text() == reply.text


def asked(qtbot, text: str):
    model = AppModel(EngineConfig(model="demo"))
    model.apply(StateChanged(EngineState.READY, "Engine ready: demo", 0))  # a question goes out at once
    sent = []
    pane = ChatPane(model, EngineCommands(model, lambda command: sent.extend(command.requests)))
    qtbot.addWidget(pane)
    pane.show()
    pane.sampling.form.set_settings(SamplingSettings())
    pane.input.setPlainText(text)
    pane.send()
    conversation = pane.current
    return model, pane, pane.transcripts[conversation.conversation_id], conversation, sent[0]


def test_a_questions_views_are_built_once_the_engine_holds_its_request(qtbot):
    model, pane, transcript, conversation, request = asked(qtbot, "What is a block?")
    question, reply = conversation.messages
    assert pane.input.toPlainText() == "" and question.text == "What is a block?"
    assert reply.message_id not in transcript.views, "drawn after the engine has the request, not before"
    model.apply(RequestsTaken((request.request_id,)))
    assert {question.message_id, reply.message_id} <= set(transcript.views)
    assert transcript.views[question.message_id].body.text() == "What is a block?"


def test_a_questions_views_come_soon_without_word_from_the_engine_and_at_once_with_its_reply(qtbot):
    _, quiet_pane, transcript, _, _ = asked(qtbot, "Anyone there?")  # the pane kept: its views live in it
    qtbot.waitUntil(lambda: len(transcript.views) == 2, timeout=SYNC_AFTER_MS + 1_000)

    model, pane, transcript, conversation, request = asked(qtbot, "Is the engine running?")
    model.apply(RequestFailed(request.request_id, "The engine is not running: start it first."))
    view = transcript.views[conversation.messages[-1].message_id]  # the failure draws it, no waiting
    assert "not running" in view.stats.text()


def long_conversation(num_turns: int) -> tuple[Conversation, ChatMessage]:
    conversation = Conversation("long")
    for i in range(num_turns):
        conversation.messages += [ChatMessage("user", f"question {i}"), ChatMessage("assistant", "an answer " * 60)]
    reply = ChatMessage("assistant", "", status="streaming")
    conversation.messages += [ChatMessage("user", "and a long one?"), reply]
    return conversation, reply


def at_end(view: TranscriptView) -> bool:
    bar = view.verticalScrollBar()
    return bar.maximum() > 0 and bar.value() == bar.maximum()


def grow(qtbot, view: TranscriptView, reply: ChatMessage, words: int) -> None:
    before = view.verticalScrollBar().maximum()
    reply.text += " more text" * words
    view.render_message(reply.message_id, text_only=True)
    qtbot.waitUntil(lambda: view.verticalScrollBar().maximum() > before, timeout=5_000)


def test_the_transcript_follows_a_growing_reply_until_the_user_scrolls_up(qtbot):
    conversation, reply = long_conversation(6)
    view = TranscriptView(conversation)
    qtbot.addWidget(view)
    view.resize(450, 400)
    view.show()
    view.sync()
    qtbot.waitUntil(lambda: at_end(view), timeout=5_000)  # a conversation opens at its end (a restored one too)
    grow(qtbot, view, reply, 200)
    qtbot.waitUntil(lambda: at_end(view), timeout=5_000)
    assert not view.new_text_button.isVisible()
    view.verticalScrollBar().setValue(0)  # the user scrolls up to read
    grow(qtbot, view, reply, 200)
    assert view.verticalScrollBar().value() == 0, "the text the user reads stays where it is"
    assert view.new_text_button.isVisible() and view.new_text_button.text().startswith("New text below")
    qtbot.mouseClick(view.new_text_button, Qt.LeftButton)
    assert at_end(view) and not view.new_text_button.isVisible()
    grow(qtbot, view, reply, 200)
    qtbot.waitUntil(lambda: at_end(view), timeout=5_000)


def test_a_restored_conversation_opens_at_its_end_where_a_cut_off_note_is(qtbot):
    conversation, reply = long_conversation(12)
    reply.status, reply.error, reply.text = "stopped", "The app ended while this reply streamed", "half a reply"
    view = TranscriptView(conversation)  # built before it is shown, as at a start
    qtbot.addWidget(view)
    view.resize(450, 400)
    view.sync()
    view.show()
    qtbot.waitUntil(lambda: at_end(view), timeout=5_000)
    note = view.views[reply.message_id].stats
    assert note.visibleRegion().boundingRect().height() > 0, "the cut-off note is in view"
