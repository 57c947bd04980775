"""Attaching images in the chat pane, without an engine: the pane on a model. Files are read off the GUI
thread; a bad one is named beside the input with its fix, the text and the other images kept."""
from __future__ import annotations

import threading

import pytest
from chat_images import image_file, not_an_image, truncated_file
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QColor, QDropEvent, QImage, QTextCursor
from PySide6.QtWidgets import QApplication, QPushButton

from workbench.engine.backend import EngineInfo, VisionInfo
from workbench.engine.commands import SubmitAll
from workbench.engine.events import EngineReady, EngineState, StateChanged
from workbench.engine.spec import EngineConfig
from workbench.model.app_model import AppModel
from workbench.model.engine_commands import EngineCommands
from workbench.ui import image_attachments
from workbench.ui.chat_pane import ChatPane
from workbench.ui.image_attachments import TEXT_ONLY, PendingImage

TEXT_INFO = EngineInfo("/models/demo", "0.32.0", "cpu", 2048, None, (123,))
VISION = VisionInfo("Idefics3ForConditionalGeneration", 4, max_pixels=2000)
VISION_INFO = EngineInfo("/models/demo-vl", "0.32.0", "cpu", 2048, None, (123,), vision=VISION)


@pytest.fixture
def pane(qtbot, tmp_path):
    model = AppModel(EngineConfig(model="demo"), "Be brief.")
    model.images_dir = tmp_path / "store"
    model.apply(StateChanged(EngineState.READY, "Engine ready", 0))
    posted: list = []
    pane = ChatPane(model, EngineCommands(model, posted.append))
    pane.posted = posted
    qtbot.addWidget(pane)
    pane.resize(900, 600)
    with qtbot.waitExposed(pane):
        pane.show()
    return pane


def attach(pane, qtbot, paths) -> None:
    pane.choose_images = lambda parent: [str(p) for p in paths]
    with qtbot.waitSignal(pane.attachments.read_done, timeout=10_000):
        pane.attach_button.click()


def names(pane) -> list[str]:
    return [image.ref.name for image in pane.attachments.images()]


def test_two_images_attached_show_as_thumbnails_and_go_with_the_question(pane, qtbot, tmp_path, monkeypatch):
    read_on = []
    original = image_attachments.read_one
    monkeypatch.setattr(image_attachments, "read_one",
                        lambda *a: (read_on.append(threading.current_thread()), original(*a))[1])
    attach(pane, qtbot, [image_file(tmp_path, "cat.png"), image_file(tmp_path, "dog.webp", colour=(0, 90, 0))])
    assert names(pane) == ["cat.png", "dog.webp"] and pane.attachments.scroll.isVisible()
    assert read_on and threading.main_thread() not in read_on  # read and checked off the GUI thread
    pane.input.setPlainText("What animals are these?")
    pane.send()
    (command,) = pane.posted
    assert isinstance(command, SubmitAll)
    assert [i.ref.name for i in command.requests[0].messages[-1].images] == ["cat.png", "dog.webp"]
    assert pane.input.toPlainText() == "" and pane.attachments.images() == ()
    assert not pane.attachments.scroll.isVisible()
    assert not any(p.isVisible() for p in pane.attachments.findChildren(PendingImage))  # gone at once
    question = pane.current.messages[0]
    view = pane.transcripts[pane.current.conversation_id].view_of(question.message_id)
    assert [thumb.toolTip() for thumb in view.thumbs] == ["cat.png · 64 × 48 PNG · 1 KB",
                                                           "dog.webp · 64 × 48 WEBP · 1 KB"]
    assert all(thumb.pixmap() is not None and not thumb.pixmap().isNull() for thumb in view.thumbs)


def test_a_pending_image_can_be_removed(pane, qtbot, tmp_path):
    attach(pane, qtbot, [image_file(tmp_path, "a.png"), image_file(tmp_path, "b.gif"), image_file(tmp_path, "c.jpg")])
    pending = pane.attachments._pending[1]
    pending.remove_button.click()
    assert names(pane) == ["a.png", "c.jpg"]


def test_bad_files_are_named_and_nothing_else_is_lost(pane, qtbot, tmp_path):
    pane.input.setPlainText("Compare the pictures")
    attach(pane, qtbot, [image_file(tmp_path, "good.png"), not_an_image(tmp_path), truncated_file(tmp_path),
                         tmp_path / "gone.jpg"])
    problem = pane.attachments.problem
    assert problem.isVisible()
    lines = problem.text().splitlines()
    assert lines[0].startswith("notes.png is not an image") and "Attach the picture itself" in lines[0]
    assert lines[1].startswith("cut.png is damaged or truncated") and "Save or download it again" in lines[1]
    assert lines[2].startswith(f"gone.jpg is no longer at {tmp_path}") and "attach it again" in lines[2]
    assert names(pane) == ["good.png"] and pane.input.toPlainText() == "Compare the pictures"


def test_images_dropped_or_pasted_on_the_input_are_attached(pane, qtbot, tmp_path):
    pane.input.setPlainText("typed")
    dropped = QMimeData()
    dropped.setUrls([QUrl.fromLocalFile(str(image_file(tmp_path, "dropped.png")))])
    with qtbot.waitSignal(pane.attachments.read_done, timeout=10_000):
        pane.input.insertFromMimeData(dropped)  # what a drop on the input and a paste of copied files do
    picture = QImage(40, 30, QImage.Format_RGB32)
    picture.fill(QColor("orange"))
    QApplication.clipboard().setImage(picture)
    with qtbot.waitSignal(pane.attachments.read_done, timeout=10_000):
        pane.input.paste()
    on_pane = QMimeData()
    on_pane.setUrls([QUrl.fromLocalFile(str(image_file(tmp_path, "on the pane.jpg")))])
    drop = QDropEvent(QPointF(20, 20), Qt.CopyAction, on_pane, Qt.LeftButton, Qt.NoModifier)
    with qtbot.waitSignal(pane.attachments.read_done, timeout=10_000):
        pane.dropEvent(drop)
    assert names(pane) == ["dropped.png", "pasted image 1.png", "on the pane.jpg"]
    assert pane.attachments.images()[1].ref.width == 40 and pane.input.toPlainText() == "typed"
    link = QMimeData()
    link.setUrls([QUrl("https://example.org/a-page")])  # a link to a page is text, not an image
    assert image_attachments.sources_in(link) == []
    cells = QMimeData()
    cells.setText("1\t2")
    cells.setImageData(picture)  # a spreadsheet's copied cells come with a picture of them: text
    assert image_attachments.sources_in(cells) == []
    text_only = QMimeData()
    text_only.setText(" and more")
    pane.input.moveCursor(QTextCursor.End)
    pane.input.insertFromMimeData(text_only)  # text is still text
    assert pane.input.toPlainText() == "typed and more"


def test_a_text_only_engine_disables_attach_and_keeps_a_question_with_images(pane, qtbot, tmp_path):
    attach(pane, qtbot, [image_file(tmp_path, "kept.png")])
    pane.model.apply(EngineReady(TEXT_INFO))
    assert not pane.attach_button.isEnabled() and pane.attach_button.toolTip() == TEXT_ONLY
    pane.input.setPlainText("What is in it?")
    pane.send()
    assert pane.posted == [] and pane.current.messages == []
    assert pane.input.toPlainText() == "What is in it?" and names(pane) == ["kept.png"]
    assert TEXT_ONLY in pane.attachments.problem.text() and pane.attachments.problem.isVisible()
    pane.model.apply(EngineReady(VISION_INFO))
    assert pane.attach_button.isEnabled()


def test_an_image_beyond_the_processors_pixels_says_it_is_resized(pane, qtbot, tmp_path):
    pane.model.apply(EngineReady(VISION_INFO))
    attach(pane, qtbot, [image_file(tmp_path, "big.png", size=(80, 60)), image_file(tmp_path, "small.png", (40, 30))])
    big, small = pane.attachments._pending
    assert big.note.isVisible() and big.note.text() == "the processor resizes it"
    assert big.note.toolTip() == "80 × 60 = 4,800 pixels: the model's processor resizes it to at most 2,000 pixels"
    assert not small.note.isVisible()


def test_more_images_than_the_engine_takes_stay_in_the_input(pane, qtbot, tmp_path):
    pane.model.apply(EngineReady(VISION_INFO))
    attach(pane, qtbot, [image_file(tmp_path, f"{n}.png") for n in range(5)])
    pane.input.setPlainText("all of them")
    pane.send()
    assert pane.posted == [] and len(names(pane)) == 5
    assert "takes at most 4 a prompt" in pane.attachments.problem.text()


def test_a_restored_question_shows_its_thumbnails_and_names_a_missing_one(qtbot, tmp_path):
    from chat_images import image_input

    from workbench.engine.image_store import keep
    from workbench.model.conversations import ChatMessage, Conversation
    from workbench.ui.image_thumbs import thumbnails

    kept, gone = image_input("kept.png", (300, 200)), image_input("gone.png", colour=(1, 2, 3))
    keep(kept, tmp_path / "store")
    conversation = Conversation("Chat 1", [ChatMessage("user", "Look", images=(kept.ref, gone.ref))], number=1)
    model = AppModel(EngineConfig(model="demo"))
    model.images_dir = tmp_path / "store"
    model.restore([conversation], [])
    pane = ChatPane(model, EngineCommands(model, lambda command: None))
    qtbot.addWidget(pane)
    view = pane.transcripts[conversation.conversation_id].view_of(conversation.messages[0].message_id)
    shown, missing = view.thumbs
    assert shown.text() == "…"  # read off the GUI thread: the pane is built before the pictures are read
    qtbot.waitUntil(lambda: not thumbnails.reading, timeout=10_000)
    assert (shown.pixmap().width(), shown.pixmap().height()) == (64, 42)  # read at the thumbnail's size
    assert shown.toolTip() == "kept.png · 300 × 200 PNG · 1 KB"
    assert missing.text() == "image\nmissing" and "attach it again" in missing.toolTip()


def test_enter_sends_and_shift_enter_starts_a_new_line(pane, qtbot):
    """As in the chat apps people know: Enter sends, Shift+Enter breaks the line; Ctrl+Enter sends too.
    While a reply streams, Enter neither sends nor breaks the line."""
    pane.input.setFocus()
    qtbot.keyClicks(pane.input, "Two lines:")
    qtbot.keyClick(pane.input, Qt.Key_Return, Qt.ShiftModifier)
    qtbot.keyClicks(pane.input, "the second")
    assert pane.input.toPlainText() == "Two lines:\nthe second" and not pane.posted
    qtbot.keyClick(pane.input, Qt.Key_Return)
    question = pane.current.messages[0]
    assert (question.role, question.text) == ("user", "Two lines:\nthe second") and pane.input.toPlainText() == ""
    assert len(pane.posted) == 1 and pane.current.streaming_message() is not None
    qtbot.keyClicks(pane.input, "next")
    qtbot.keyClick(pane.input, Qt.Key_Enter, Qt.KeypadModifier)  # a reply streams: Send is greyed
    assert pane.input.toPlainText() == "next" and len(pane.current.messages) == 2
    pane.new_conversation()
    pane.input.clear()
    qtbot.keyClicks(pane.input, "by the keypad's Enter")
    qtbot.keyClick(pane.input, Qt.Key_Enter, Qt.KeypadModifier)
    assert pane.current.messages[0].text == "by the keypad's Enter" and len(pane.posted) == 2


def test_ctrl_n_starts_a_new_conversation(pane, qtbot):
    """The New chat button's key, as in the chat apps people know, from wherever the focus is in the pane."""
    pane.input.setPlainText("kept as this conversation's draft")
    first = pane.current
    with qtbot.waitActive(pane):
        pane.activateWindow()
    pane.input.setFocus()
    qtbot.keyClick(pane.input, Qt.Key_N, Qt.ControlModifier)
    qtbot.waitUntil(lambda: pane.current is not first)  # a button's key clicks it as it shows it pressed
    assert pane.conversation_list.count() == 2 and pane.input.toPlainText() == ""
    assert "Ctrl+N" in pane.findChild(QPushButton, "newChatButton").toolTip()


def test_each_conversation_keeps_its_own_draft(pane, qtbot, tmp_path):
    """What was typed and attached in one conversation stays with it while another is shown, and comes back
    with it: a question written for one is never sent to another. A deleted conversation's draft goes too."""
    first = pane.current
    pane.input.setPlainText("for the first")
    attach(pane, qtbot, [image_file(tmp_path, "cat.png")])
    pane.new_conversation()
    second = pane.current
    assert pane.input.toPlainText() == "" and names(pane) == [] and not pane.attachments.scroll.isVisible()
    pane.input.setPlainText("for the second")
    pane.conversation_list.setCurrentRow(0)
    assert pane.current is first
    assert pane.input.toPlainText() == "for the first" and names(pane) == ["cat.png"]
    assert pane.input.textCursor().atEnd()  # typing goes on where it stopped
    pane.conversation_list.setCurrentRow(1)
    assert pane.input.toPlainText() == "for the second" and names(pane) == []
    pane.send()
    assert [(m.role, m.text, m.images) for m in second.messages[:1]] == [("user", "for the second", ())]
    assert first.messages == [] and pane.input.toPlainText() == ""
    pane.conversation_list.setCurrentRow(0)
    assert pane.input.toPlainText() == "for the first" and names(pane) == ["cat.png"]
    pane.confirm = lambda *_: True
    pane.delete_current()  # its draft and image go with it
    assert pane.current is second and pane.input.toPlainText() == "" and names(pane) == []
    assert pane._drafts == {} and pane.model.selected_conversation_id == second.conversation_id
