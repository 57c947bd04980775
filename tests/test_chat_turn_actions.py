"""Copy on each turn: its text as written, to the clipboard.

Editing the last question: its text and images go back into the input, what was typed there is put aside and
comes back; Send asks the edit in place of the question and its reply, Cancel edit (or Esc) keeps both. The pane
on a model without an engine (the commands it posts are kept), the storage on a real SQLite file, and the whole
path through the real window and the real vLLM CPU engine."""
from __future__ import annotations

import pytest
from chat_driver import type_and_send, wait_finished
from chat_images import image_file
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QPushButton, QToolButton
from test_chat_attachments import attach, names, pane  # noqa: F401  (the pane fixture)
from test_storage import FIGURES, answered, restarted, started

from workbench.engine.commands import SubmitAll
from workbench.engine.backend import StreamEvent
from workbench.engine.events import RequestFinished, TextFlushed
from workbench.engine.sampling import SamplingSettings
from workbench.ui.message_text import MessageText


def edit_buttons(pane) -> dict[str, QToolButton]:
    """The shown conversation's questions' Edit buttons, by message id, once its views are built."""
    transcript = pane.transcripts[pane.current.conversation_id]
    transcript.sync_now()
    return {key: view.edit_button for key, view in transcript.views.items() if view.edit_button is not None}


def answer(pane, text: str) -> None:
    """The reply now open in the shown conversation ends with ``text``."""
    reply = pane.current.streaming_message()
    pane.model.apply(TextFlushed({reply.request_id: text}))
    pane.model.apply(RequestFinished(StreamEvent(reply.request_id, "", True, "stop", FIGURES)))
    assert reply.status == "done"


def asked(pane, question: str, reply: str) -> None:
    """``question`` typed and sent in the shown conversation, and answered with ``reply``."""
    pane.input.setPlainText(question)
    pane.send()
    answer(pane, reply)


def test_regenerate_is_off_until_there_is_a_question_to_ask_again(pane, qtbot):
    assert not pane.regenerate_button.isEnabled()
    asked(pane, "a question", "a reply")
    assert pane.regenerate_button.isEnabled()
    pane.new_conversation()
    assert not pane.regenerate_button.isEnabled()


def test_edit_shows_on_the_last_question_only_while_no_reply_is_open(pane, qtbot):
    pane.input.setPlainText("first")
    pane.send()
    first = pane.current.messages[0].message_id
    buttons = edit_buttons(pane)
    assert not buttons[first].isHidden() and not buttons[first].isEnabled()  # its reply streams
    answer(pane, "one")
    assert buttons[first].isEnabled()
    asked(pane, "second", "two")
    buttons = edit_buttons(pane)
    second = pane.current.messages[2].message_id
    assert buttons[first].isHidden() and not buttons[second].isHidden() and buttons[second].isEnabled()


def test_an_edit_sent_replaces_the_question_and_its_reply_and_the_draft_comes_back(pane, qtbot, tmp_path):
    pane.input.setPlainText("What is a KV cach?")
    attach(pane, qtbot, [image_file(tmp_path, "cat.png")])
    pane.send()
    answer(pane, "A cache.")
    conversation = pane.current
    question = conversation.messages[0]
    pane.input.setPlainText("half a next question")
    attach(pane, qtbot, [image_file(tmp_path, "dog.png", colour=(40, 40, 200))])
    with qtbot.waitSignal(pane.attachments.read_done, timeout=10_000):
        edit_buttons(pane)[question.message_id].click()
    assert pane.edit_bar.isVisibleTo(pane) and not pane.regenerate_button.isEnabled()
    marked = edit_buttons(pane)[question.message_id]
    assert marked.text() == "Editing below" and not marked.isEnabled()
    assert pane.input.toPlainText() == "What is a KV cach?" and names(pane) == ["cat.png"]
    assert [m.text for m in conversation.messages] == ["What is a KV cach?", "A cache."]  # nothing changed yet
    pane.input.setPlainText("What is a KV cache?")
    pane.send()
    assert [(m.role, m.text) for m in conversation.messages] == [("user", "What is a KV cache?"), ("assistant", "")]
    assert conversation.messages[0].images == question.images  # the image went again, as it was
    assert conversation.title == "What is a KV cache?"  # the title came from the question edited
    sent = pane.posted[-1]
    assert isinstance(sent, SubmitAll) and [m.content for m in sent.requests[0].messages if m.role == "user"] == \
        ["What is a KV cache?"] and len(sent.requests[0].messages[-1].images) == 1
    assert not pane.edit_bar.isVisibleTo(pane)
    assert pane.input.toPlainText() == "half a next question" and names(pane) == ["dog.png"]  # put back
    transcript = pane.transcripts[conversation.conversation_id]
    transcript.sync_now()
    assert [v.body.text() for v in transcript.views.values()][0] == "What is a KV cache?"
    assert len(transcript.views) == 2


def test_cancel_edit_and_esc_keep_the_question_and_put_the_draft_back(pane, qtbot):
    asked(pane, "the question", "the reply")
    pane.input.setPlainText("typed, not sent")
    pane.input.setFocus()
    pane.edit_last_question()
    assert pane.input.toPlainText() == "the question"
    pane.input.setPlainText("an edit dropped")
    pane.cancel_edit_button.click()
    assert pane.input.toPlainText() == "typed, not sent" and not pane.edit_bar.isVisibleTo(pane)
    assert [(b.text(), b.isEnabled()) for b in edit_buttons(pane).values()] == [("Edit", True)]
    assert [m.text for m in pane.current.messages] == ["the question", "the reply"]
    assert pane.regenerate_button.isEnabled()
    pane.input.clear()
    qtbot.keyClick(pane.input, Qt.Key_Up)  # in the empty input: the last question to edit
    assert pane.input.toPlainText() == "the question" and pane.edit_bar.isVisibleTo(pane)
    qtbot.keyClick(pane.input, Qt.Key_Escape)
    assert pane.input.toPlainText() == "" and not pane.edit_bar.isVisibleTo(pane)
    qtbot.keyClicks(pane.input, "x")
    qtbot.keyClick(pane.input, Qt.Key_Up)  # not empty: the cursor moves, nothing else
    assert pane.input.toPlainText() == "x" and not pane.edit_bar.isVisibleTo(pane)


def test_an_edit_stays_with_its_conversation_and_a_deleted_one_takes_it(pane, qtbot):
    asked(pane, "in the first", "reply")
    first = pane.current
    pane.input.setPlainText("aside")
    pane.edit_last_question()
    pane.input.setPlainText("in the first, edited")
    pane.new_conversation()
    assert not pane.edit_bar.isVisibleTo(pane) and pane.input.toPlainText() == ""
    pane.input.setPlainText("in the second")
    pane.send()  # a plain question there: the first's edit is not sent with it
    assert [m.text for m in first.messages] == ["in the first", "reply"]
    pane.conversation_list.setCurrentRow(0)
    assert pane.edit_bar.isVisibleTo(pane) and pane.input.toPlainText() == "in the first, edited"
    pane.send()
    assert [m.text for m in first.messages] == ["in the first, edited", ""]
    assert pane.input.toPlainText() == "aside"
    pane.input.clear()
    answer(pane, "again")
    pane.edit_last_question()
    pane.confirm = lambda *_: True
    pane.delete_current()
    assert pane._editing == {} and not pane.edit_bar.isVisibleTo(pane)


def test_an_edit_of_a_question_no_longer_last_is_asked_after_it(pane, qtbot):
    """The model replaces only the last question: a stale id asks the text as a new question, nothing lost."""
    conversation = pane.current
    asked(pane, "one", "1")
    stale = conversation.messages[0].message_id
    asked(pane, "two", "2")
    pane.commands.ask(conversation.conversation_id, "three", SamplingSettings(), replacing=stale)
    assert [m.text for m in conversation.messages[:5]] == ["one", "1", "two", "2", "three"]


def test_an_edited_question_is_what_the_database_keeps(tmp_path):
    storage, model = started(tmp_path / "workbench.db")
    conversation = answered(model, "What is vLLM", "An engine.")
    edited = conversation.messages[0].message_id
    request = model.ask(conversation.conversation_id, "What is vLLM?", SamplingSettings(), replacing=edited)
    model.apply(TextFlushed({request.request_id: "A serving engine."}))
    storage, model = restarted(storage, tmp_path / "workbench.db")
    kept = model.conversations[conversation.conversation_id]
    assert [m.text for m in kept.messages] == ["What is vLLM?", "A serving engine."]
    assert kept.title == "What is vLLM?"
    storage.close()


def test_copy_puts_a_turns_markdown_on_the_clipboard_once_it_has_ended(pane, qtbot):
    pane.input.setPlainText("Show me **bold**")
    pane.send()
    transcript = pane.transcripts[pane.current.conversation_id]
    transcript.sync_now()
    question, reply = (transcript.views[m.message_id] for m in pane.current.messages)
    assert question.copy_button.isEnabled() and not reply.copy_button.isEnabled()  # nothing yet, it streams
    answer(pane, "Here: **bold** and `code`")
    assert reply.copy_button.isEnabled()
    qtbot.mouseClick(reply.copy_button, Qt.LeftButton)
    assert QApplication.clipboard().text() == "Here: **bold** and `code`" and reply.copy_button.text() == "Copied"
    qtbot.waitUntil(lambda: reply.copy_button.text() == "Copy", timeout=5_000)
    question.copy_button.click()
    assert QApplication.clipboard().text() == "Show me **bold**"


@pytest.mark.slow
def test_an_edited_question_is_answered_by_the_engine_in_its_place(window, qtbot):
    """Through the real window and engine: the reply to the edit follows the edit, and the first reply is gone."""
    window.chat.sampling.max_tokens.setValue(24)
    conversation, first = type_and_send(window, qtbot, "What is a paged KV cach?")
    wait_finished(qtbot, first)
    question = conversation.messages[0]
    transcript = window.chat.transcripts[conversation.conversation_id]
    qtbot.waitUntil(lambda: question.message_id in transcript.views)
    edit = transcript.views[question.message_id].edit_button
    qtbot.waitUntil(edit.isEnabled)
    qtbot.mouseClick(edit, Qt.LeftButton)
    window.chat.input.setPlainText("What is a paged KV cache?")
    qtbot.mouseClick(window.findChild(QPushButton, "sendButton"), Qt.LeftButton)
    reply = conversation.messages[-1]
    wait_finished(qtbot, reply)
    assert reply.status == "done", reply.error
    assert reply is not first and [m.role for m in conversation.messages] == ["user", "assistant"]
    assert conversation.messages[0].text == "What is a paged KV cache?"
    assert reply.figures.prompt_tokens > 0 and reply.figures.cached_prompt_tokens is not None
    qtbot.waitUntil(lambda: [t.text() for t in transcript.findChildren(MessageText) if t.isVisibleTo(transcript)]
                    == ["What is a paged KV cache?", reply.text])
