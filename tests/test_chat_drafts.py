"""What was typed and attached in a conversation and not sent is kept with it: in the model a second after the typing
stops (at once when another conversation is shown, when the question is sent or the window closes), in the database,
and back in the chat's input after a restart, its images read again from the data folder's store. The pane on a
model without an engine; the storage on a real SQLite file (the kill is in test_storage_engine.py)."""
from __future__ import annotations

from chat_images import image_file, image_input
from test_chat_attachments import attach, names, pane  # noqa: F401  (the pane fixture)
from test_chat_turn_actions import asked
from test_storage import restarted, started

from workbench.engine import image_store
from workbench.engine.spec import EngineConfig
from workbench.model.app_model import AppModel
from workbench.model.engine_commands import EngineCommands
from workbench.storage.restore import sweep_images
from workbench.ui.chat_pane import ChatPane


def test_a_draft_is_kept_a_moment_after_the_typing_stops_and_dropped_once_sent(pane, qtbot, tmp_path):
    conversation = pane.current
    pane.input.setPlainText("half a question")
    attach(pane, qtbot, [image_file(tmp_path, "cat.png")])
    assert conversation.draft == ""  # not at each key
    qtbot.waitUntil(lambda: conversation.draft == "half a question", timeout=5_000)
    assert [ref.name for ref in conversation.draft_images] == ["cat.png"]
    assert image_store.path_of(conversation.draft_images[0], pane.model.images_dir).is_file()
    pane.input.setPlainText("half a question, whole now")
    pane.send()
    assert (conversation.draft, conversation.draft_images) == ("", ())  # sent: at once, no draft left


def test_showing_another_conversation_keeps_the_draft_at_once(pane, qtbot):
    first = pane.current
    pane.input.setPlainText("for the first")
    pane.new_conversation()
    assert first.draft == "for the first" and pane.current.draft == ""


def test_a_kept_draft_comes_back_in_the_input_with_its_images(qtbot, tmp_path):
    model = AppModel(EngineConfig(model="demo"), "Be brief.")
    model.images_dir = tmp_path / "store"
    kept = model.new_conversation()
    other = model.new_conversation()
    model.keep_draft(kept.conversation_id, "typed before the restart", (image_input("dog.png"),))
    model.keep_draft(other.conversation_id, "in the other")
    pane = ChatPane(model, EngineCommands(model, lambda command: None))
    qtbot.addWidget(pane)
    pane.conversation_list.setCurrentRow(0)
    with qtbot.waitSignal(pane.attachments.read_done, timeout=10_000):
        pass
    assert pane.input.toPlainText() == "typed before the restart" and names(pane) == ["dog.png"]
    pane.conversation_list.setCurrentRow(1)
    assert pane.input.toPlainText() == "in the other" and names(pane) == []
    assert kept.draft == "typed before the restart" and len(kept.draft_images) == 1  # kept as it was


def test_while_an_edit_is_open_the_draft_put_aside_is_kept_with_the_edit(pane, qtbot):
    asked(pane, "the question", "the reply")
    conversation = pane.current
    pane.input.setPlainText("typed before Edit")
    pane.edit_last_question()
    pane.keep_draft()
    assert conversation.draft == "typed before Edit"  # the edit not begun: the question is in the conversation
    pane.input.setPlainText("the question, mended")
    pane.keep_draft()
    assert conversation.draft == "typed before Edit\n\nthe question, mended"


def test_a_draft_is_stored_and_its_images_outlive_the_start_sweep(tmp_path):
    storage, model = started(tmp_path / "workbench.db")
    model.images_dir = tmp_path / "images"
    conversation = model.new_conversation()
    model.keep_draft(conversation.conversation_id, "a draft", (image_input("cat.png"),))
    storage, model = restarted(storage, tmp_path / "workbench.db")
    kept = model.conversations[conversation.conversation_id]
    assert kept.draft == "a draft" and [ref.name for ref in kept.draft_images] == ["cat.png"]
    storage.close()
    from workbench.storage.database import connect
    connection = connect(tmp_path / "workbench.db")
    assert sweep_images(connection, tmp_path / "images") == 0
    assert image_store.path_of(kept.draft_images[0], tmp_path / "images").is_file()
    connection.close()


def test_an_image_still_being_read_when_another_conversation_is_shown_stays_with_its_own(pane, qtbot, tmp_path):
    """Images are read off the GUI thread: one attached just before another conversation is shown goes into the
    draft of the conversation it was attached in, never into the one shown now (it would be sent there)."""
    first = pane.current
    pane.attachments.add_sources([str(image_file(tmp_path, "cat.png"))])
    pane.new_conversation()  # before the image is read
    with qtbot.waitSignal(pane.attachments.read_done, timeout=10_000):
        pass
    assert names(pane) == [] and pane.current.draft_images == ()
    assert [ref.name for ref in first.draft_images] == ["cat.png"]  # kept with its own draft
    pane.conversation_list.setCurrentRow(0)
    assert pane.current is first and names(pane) == ["cat.png"]
