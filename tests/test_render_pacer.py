"""A streaming reply's draws are paced by what they cost; the text shown is never behind for good.
A question's views are built once the engine holds its request, or soon after at the latest."""
from __future__ import annotations

from workbench.engine.events import RequestFailed, RequestsTaken
from workbench.engine.sampling import SamplingSettings
from workbench.engine.spec import EngineConfig
from workbench.model.app_model import AppModel
from workbench.model.conversations import ChatMessage, Conversation
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
    pane = ChatPane(model)
    qtbot.addWidget(pane)
    pane.show()
    sent = []
    pane.request_submitted.connect(sent.append)
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
