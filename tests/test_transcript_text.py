"""A turn's text in the transcript: a word wider than the view (an identifier, a path, a URL) wraps inside
the view instead of widening the transcript, the text is kept as written, each turn is as tall as its text
at any width, and only web links open. No engine."""
from __future__ import annotations

from PySide6.QtCore import QUrl

from workbench.model.conversations import ChatMessage, Conversation
from workbench.ui import message_text
from workbench.ui.transcript_view import TranscriptView

IDENTIFIER = "choose_" + "num_" * 60 + "seqs"  # as the demo model writes now and then: 250 characters, no space
URL = "https://docs.vllm.ai/en/latest/" + "x" * 150


def transcript(qtbot, width: int) -> tuple[TranscriptView, list[ChatMessage]]:
    conversation = Conversation("t")
    turns = [ChatMessage("user", f"What is {URL}?"),
             ChatMessage("assistant", "Words before it. " * 20 + IDENTIFIER + " and **after** it." * 10, status="done")]
    conversation.messages += turns
    view = TranscriptView(conversation)
    qtbot.addWidget(view)
    view.resize(width, 700)
    view.show()
    view.sync()
    return view, turns


def fits(view: TranscriptView) -> bool:
    bodies = [v.body for v in view.views.values()]
    return (view.horizontalScrollBar().maximum() == 0 and view.widget().width() <= view.viewport().width()
            and all(b.width() <= view.viewport().width() for b in bodies)
            and all(b.height() >= b.document().size().height() > 0 for b in bodies))


def test_a_word_wider_than_the_view_wraps_inside_it_and_keeps_its_text(qtbot):
    view, turns = transcript(qtbot, 450)
    qtbot.waitUntil(lambda: fits(view), timeout=5_000)
    reply = view.views[turns[1].message_id].body
    one_line = reply.fontMetrics().lineSpacing()
    assert reply.fontMetrics().horizontalAdvance(IDENTIFIER) > 2 * view.viewport().width()
    assert reply.height() > 10 * one_line  # the identifier's own lines among them
    assert IDENTIFIER in reply.toPlainText()  # what a selection copies: nothing inserted to break it
    assert reply.text() == turns[1].text
    taller = reply.height()
    view.resize(300, 700)  # narrower: the turns grow taller and still fit
    qtbot.waitUntil(lambda: fits(view) and reply.height() > taller, timeout=5_000)


def test_only_web_links_open(monkeypatch):
    opened = []
    monkeypatch.setattr(message_text.QDesktopServices, "openUrl", opened.append)
    for link in ("https://docs.vllm.ai/", "http://localhost:8000/", "file:///etc/passwd", "javascript:alert(1)"):
        message_text.open_link(QUrl(link))
    assert [u.toString() for u in opened] == ["https://docs.vllm.ai/", "http://localhost:8000/"]


def test_a_conversation_not_open_builds_its_views_when_it_is_shown(qtbot):
    """The app starting with many kept conversations builds the views of the one it shows, not of all (a view
    per turn: 1,244 turns took a second of the window's start)."""
    from workbench.engine.spec import EngineConfig
    from workbench.model.app_model import AppModel
    from workbench.model.engine_commands import EngineCommands
    from workbench.ui.chat_pane import ChatPane

    model = AppModel(EngineConfig(model="demo"))
    kept = []
    for number in range(4):
        conversation = Conversation(f"Kept {number}")
        conversation.messages += [ChatMessage("user", f"Question {number}?"),
                                  ChatMessage("assistant", f"Answer {number}.", status="done")]
        kept.append(conversation)
    model.restore(kept, [])  # as the start puts back what the database kept
    pane = ChatPane(model, EngineCommands(model, lambda command: None))
    qtbot.addWidget(pane)
    pane.show()
    transcripts = [pane.transcripts[c.conversation_id] for c in kept]
    assert pane.current is kept[-1]
    qtbot.waitUntil(lambda: len(transcripts[-1].views) == 2, timeout=5_000)
    assert transcripts[1].views == {} and transcripts[2].views == {}  # never open: nothing built
    pane.conversation_list.setCurrentRow(pane.order.index(kept[1].conversation_id))
    qtbot.waitUntil(lambda: len(transcripts[1].views) == 2, timeout=5_000)
    assert [v.body.text() for v in transcripts[1].views.values()] == ["Question 1?", "Answer 1."]
    assert transcripts[2].views == {}


def test_a_long_conversation_shows_its_end_at_once_and_builds_the_turns_before_in_chunks(qtbot):
    from workbench.ui.transcript_view import FIRST_BUILT

    conversation = Conversation("long")
    conversation.messages += [ChatMessage("user" if n % 2 == 0 else "assistant", f"Turn {n}.", status="done")
                              for n in range(200)]
    view = TranscriptView(conversation)
    qtbot.addWidget(view)
    view.resize(450, 700)
    view.show()
    view.sync()
    assert len(view.views) == FIRST_BUILT  # the end, at once
    assert view.views[conversation.messages[-1].message_id].body.text() == "Turn 199."
    qtbot.waitUntil(lambda: len(view.views) == 200, timeout=5_000)
    column = view.column
    shown = [column.itemAt(i).widget().body.text() for i in range(column.count()) if column.itemAt(i).widget()]
    assert shown == [f"Turn {n}." for n in range(200)]  # in the conversation's order
    bar = view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.value() == bar.maximum() > 0, timeout=5_000)  # still at its end


def test_an_older_turn_asked_for_is_built_at_once(qtbot):
    conversation = Conversation("long")
    conversation.messages += [ChatMessage("user", f"Turn {n}.") for n in range(100)]
    view = TranscriptView(conversation)
    qtbot.addWidget(view)
    view.show()
    view.sync()
    assert view.view_of(conversation.messages[0].message_id).body.text() == "Turn 0."
    assert len(view.views) == 100
