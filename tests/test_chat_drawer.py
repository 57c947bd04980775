"""The chat pane gives the transcript the room: each conversation's settings live in a drawer, closed
until asked for, with a one-line summary of them always shown. No engine: the pane on a model."""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from workbench.engine.backend import EngineInfo
from workbench.engine.events import EngineState, StateChanged
from workbench.engine.sampling import SamplingSettings
from workbench.engine.spec import EngineConfig
from workbench.model.app_model import AppModel
from workbench.model.engine_commands import EngineCommands
from workbench.ui.chat_pane import ChatPane
from workbench.ui.sampling_panel import sampling_summary
from workbench.ui.settings_drawer import MIN_TRANSCRIPT_PX

INFO = EngineInfo("/models/demo", "0.32.0", "cpu", 2048, "{{ messages }}", (123,))
DEFAULTS = "temperature 0.7 · top_p 0.95 · 256 tokens"


@pytest.fixture
def pane(qtbot):
    model = AppModel(EngineConfig(model="demo"), "Be brief.")
    model.apply(StateChanged(EngineState.READY, "Engine ready: demo", 0))
    pane = ChatPane(model, EngineCommands(model, lambda command: None))
    qtbot.addWidget(pane)
    pane.resize(620, 600)
    with qtbot.waitExposed(pane):
        pane.show()
    return pane


def summary(pane: ChatPane) -> str:
    return pane.summary.text()


def test_the_summary_names_what_is_set_and_follows_edits_at_once(pane):
    assert summary(pane) == f"{DEFAULTS} · template not read yet"
    pane.sampling.show_chat_template(INFO)
    assert summary(pane) == f"{DEFAULTS} · demo template"
    assert pane.sampling.template.toPlainText() == "{{ messages }}"
    pane.sampling.temperature.setValue(0.2)
    pane.sampling.top_k.setValue(40)
    pane.sampling.seed.setValue(7)
    pane.sampling.max_tokens.setValue(64)  # with the drawer closed: hidden fields still set
    pane.sampling.ignore_eos.setChecked(True)
    pane.sampling.system.setPlainText("Answer like a pirate.")
    assert not pane.drawer_open()
    assert summary(pane) == ("temperature 0.2 · top_p 0.95 · top_k 40 · seed 7 · 64 tokens · to max_tokens"
                             " · system prompt · demo template")
    assert pane.summary.toolTip() == summary(pane)
    pane.sampling.system.setPlainText("")
    assert "no system prompt" in summary(pane)


def test_a_long_summary_stays_one_line_elided(pane):
    pane.sampling.system.setPlainText("Answer like a pirate.")
    pane.sampling.top_k.setValue(40)
    pane.open_drawer()
    QApplication.processEvents()
    label = pane.summary
    assert label.height() < 2 * label.fontMetrics().height(), "one line"
    assert label.fontMetrics().horizontalAdvance(QLabel_text(label)) <= label.width()
    assert QLabel_text(label).endswith("…") and label.toolTip() == label.text()


def QLabel_text(label) -> str:
    """What the label draws (an eliding label's ``text()`` is the whole line)."""
    return super(type(label), label).text()


def test_the_drawer_is_closed_at_first_and_opens_with_its_button_and_its_shortcut(pane, qtbot):
    button = pane.drawer_button
    assert button.objectName() == "settingsDrawerButton"
    assert not pane.drawer_open() and not button.isChecked()
    assert pane.splitter.sizes()[2] == 0 and pane.drawer.width() == 0
    qtbot.mouseClick(button, Qt.LeftButton)
    assert pane.drawer_open() and button.isChecked() and pane.drawer.width() > 0
    assert pane.sampling.system.hasFocus(), "the drawer opens on its first field"
    qtbot.keyClick(pane.sampling.system, Qt.Key_Escape)
    assert not pane.drawer_open() and not button.isChecked(), "Esc in the drawer closes it"
    with qtbot.waitActive(pane):
        pane.activateWindow()
    pane.input.setFocus()
    qtbot.keyClick(pane.input, Qt.Key_S, Qt.ControlModifier | Qt.ShiftModifier)
    assert pane.drawer_open() and button.isChecked(), "Ctrl+Shift+S opens it"
    qtbot.keyClick(pane.sampling.system, Qt.Key_S, Qt.ControlModifier | Qt.ShiftModifier)
    assert not pane.drawer_open(), "and closes it"
    assert pane.input.hasFocus(), "closing gives the input its focus back"
    pane.open_drawer()
    qtbot.mouseClick(button, Qt.LeftButton)
    assert not pane.drawer_open() and not button.isChecked()


def test_the_transcript_has_the_room_with_the_drawer_closed_and_enough_with_it_open(pane):
    transcript = pane.stack
    assert transcript.width() >= 0.7 * pane.width()
    pane.open_drawer()
    QApplication.processEvents()
    assert transcript.width() >= MIN_TRANSCRIPT_PX
    assert pane.drawer.width() >= 180
    assert pane.conversation_list.width() > 0, "the conversations stay in sight"
    pane.close_drawer()
    QApplication.processEvents()
    assert transcript.width() >= 0.7 * pane.width()


def test_settings_not_yet_sent_stay_with_their_conversation(pane):
    first = pane.current
    pane.sampling.max_tokens.setValue(64)
    pane.sampling.top_k.setValue(40)
    pane.sampling.system.setPlainText("Answer like a pirate.")
    first_summary = summary(pane)
    second = pane.new_conversation()
    assert pane.current is second and pane.sampling.settings() == SamplingSettings()
    assert pane.sampling.system_prompt() == "Be brief." and summary(pane).startswith(DEFAULTS)
    pane.sampling.temperature.setValue(0.3)
    pane.conversation_list.setCurrentRow(0)
    assert pane.sampling.settings() == SamplingSettings(top_k=40, max_tokens=64)
    assert pane.sampling.system_prompt() == "Answer like a pirate." and summary(pane) == first_summary
    assert first.sampling == SamplingSettings(top_k=40, max_tokens=64), "kept in the model (and so stored)"
    pane.conversation_list.setCurrentRow(1)
    assert pane.sampling.settings() == SamplingSettings(temperature=0.3)
    assert second.sampling == SamplingSettings(temperature=0.3)


def test_the_models_selection_follows_the_list_and_the_list_follows_the_model(pane):
    model = pane.model
    first = pane.current
    assert model.selected_conversation_id == first.conversation_id
    second = pane.new_conversation()
    assert model.selected_conversation_id == second.conversation_id, "a new chat is the one shown"
    pane.conversation_list.setCurrentRow(0)
    assert model.selected_conversation_id == first.conversation_id
    model.select_conversation(second.conversation_id)
    assert pane.conversation_list.currentRow() == 1 and pane.current is second
    assert pane.stack.currentWidget() is pane.transcripts[second.conversation_id]
    pane.confirm = lambda *_: True
    pane.delete_current()
    assert model.selected_conversation_id == first.conversation_id, "the one left is selected"


def test_the_summary_follows_the_selected_conversation(pane):
    pane.sampling.ignore_eos.setChecked(True)
    assert "to max_tokens" in summary(pane)
    pane.new_conversation()
    assert "to max_tokens" not in summary(pane)
    pane.model.select_conversation(next(iter(pane.model.conversations)))
    assert "to max_tokens" in summary(pane)


def test_the_summary_function_leaves_defaults_out():
    assert sampling_summary(SamplingSettings(), "no template", "Be brief.", "Be brief.") == f"{DEFAULTS} · no template"
