"""Conversations: numbers that never come back, titles from the first question, rename, and a system
prompt of each conversation's own, kept in the real SQLite file across restarts."""
from __future__ import annotations

from PySide6.QtCore import Qt

from workbench.engine.events import EngineState, StateChanged
from workbench.engine.sampling import SamplingSettings
from workbench.model.app_model import AppModel
from workbench.model.conversations import title_from_question
from workbench.model.engine_commands import EngineCommands
from workbench.ui.chat_pane import ChatPane
from test_storage import restarted, started  # the real SQLite file, written by its thread, read back


def titles(model: AppModel) -> list[str]:
    return [c.title for c in model.conversations.values()]


def test_a_conversation_number_is_never_given_twice_even_after_the_highest_is_deleted(tmp_path):
    storage, model = started(tmp_path / "workbench.db")
    for _ in range(3):
        model.new_conversation()
    ids = list(model.conversations)
    model.delete_conversation(ids[1])
    model.delete_conversation(ids[2])  # Chat 3, the highest
    assert model.new_conversation().title == "Chat 4"
    model.delete_conversation(list(model.conversations)[-1])
    storage, model = restarted(storage, tmp_path / "workbench.db")
    assert titles(model) == ["Chat 1"]
    assert model.new_conversation().title == "Chat 5", "deleted numbers stay taken across a restart"
    storage.close()


def test_a_chat_is_titled_from_its_first_question_and_keeps_a_title_the_user_gave(tmp_path):
    storage, model = started(tmp_path / "workbench.db")
    first, second = model.new_conversation(), model.new_conversation()
    model.ask(first.conversation_id, "  How does vLLM's prefix cache\nreuse blocks?", SamplingSettings())
    assert first.title == "How does vLLM's prefix cache"
    assert model.rename_conversation(second.conversation_id, "  My   notes ")
    assert second.title == "My notes"
    model.ask(second.conversation_id, "A question after the rename", SamplingSettings())
    assert second.title == "My notes", "a title the user gave is not replaced by the first question"
    assert not model.rename_conversation(second.conversation_id, "   "), "a blank title is refused"
    storage, model = restarted(storage, tmp_path / "workbench.db")
    assert titles(model) == ["How does vLLM's prefix cache", "My notes"]
    storage.close()


def test_a_long_first_question_is_cut_at_a_word():
    title = title_from_question("Explain the difference between paged attention and a contiguous KV cache")
    assert title == "Explain the difference between paged attention…" and len(title) <= 48


def test_each_conversation_has_its_own_system_prompt_in_the_pane_the_request_and_the_database(qtbot, tmp_path):
    storage, model = started(tmp_path / "workbench.db")
    model.apply(StateChanged(EngineState.READY, "Engine ready: demo", 0))
    sent = []
    pane = ChatPane(model, EngineCommands(model, lambda command: sent.extend(command.requests)))
    qtbot.addWidget(pane)
    pirate = pane.current
    pane.sampling.system.setPlainText("Answer like a pirate.")
    pane.input.setPlainText("Who are you?")
    pane.send()
    plain = pane.new_conversation()
    assert pane.sampling.system_prompt() == "be brief", "a new conversation starts from the default"
    pane.input.setPlainText("Who are you?")
    pane.send()
    assert [r.messages[0].content for r in sent] == ["Answer like a pirate.", "be brief"]
    pane.conversation_list.setCurrentRow(0)
    assert pane.sampling.system_prompt() == "Answer like a pirate."
    item = pane.conversation_list.item(1)
    item.setText("Plain answers")  # what an edit in the list (double-click, F2) ends with
    assert plain.title == "Plain answers"
    item.setText("")
    assert item.text() == "Plain answers", "a blank rename is refused and the list shows the kept title"
    assert item.flags() & Qt.ItemIsEditable
    storage, model = restarted(storage, tmp_path / "workbench.db")
    assert model.conversations[pirate.conversation_id].system_prompt == "Answer like a pirate."
    assert model.conversations[plain.conversation_id].title == "Plain answers"
    storage.close()


def test_settings_set_in_the_drawer_before_a_question_are_stored_with_the_conversation(qtbot, tmp_path):
    storage, model = started(tmp_path / "workbench.db")
    pane = ChatPane(model, EngineCommands(model, lambda command: None))
    qtbot.addWidget(pane)
    edited = pane.current
    pane.sampling.max_tokens.setValue(64)  # nothing sent: the conversation keeps it all the same
    pane.sampling.seed.setValue(7)
    pane.new_conversation()
    storage, model = restarted(storage, tmp_path / "workbench.db")
    assert model.conversations[edited.conversation_id].sampling == SamplingSettings(max_tokens=64, seed=7)
    storage.close()
