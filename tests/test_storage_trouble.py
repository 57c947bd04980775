"""A database in trouble never stops the app: the window says what is wrong, names the file and what to
do, runs on, and writes nothing over a file it cannot use. Also: deleting asks first, clearing asks twice."""
from __future__ import annotations

import sqlite3

import pytest

from chat_driver import HANG_TIMEOUT_MS
from workbench.app import build_window, demo_engine_config
from workbench.engine.events import EngineState, TextFlushed
from workbench.engine.sampling import SamplingSettings
from workbench.storage.store import Storage

LONG_TEXT = "block " * 20_000


@pytest.fixture
def open_window(qtbot):
    """Builds the real window (no engine started) on a given Storage; closes it after the test."""
    windows = []

    def build(storage: Storage, start_engine: bool = False):
        window, _ = build_window(demo_engine_config("demo"), start_engine=start_engine, storage=storage)
        windows.append(window)
        window.show()
        return window

    yield build
    for window in windows:
        window.close()


def stored_conversation(path, title="Kept") -> str:
    storage = Storage.open(path)
    from workbench.model.app_model import AppModel
    from workbench.engine.spec import EngineConfig

    model = AppModel(EngineConfig("demo"))
    storage.start(model)
    conversation = model.new_conversation()
    conversation.title = title
    model.ask(conversation.conversation_id, "stored question", SamplingSettings())
    assert storage.flush()
    storage.close()
    return conversation.conversation_id


def notice_text(window) -> str:
    assert window.storage_notice.isVisible()
    return window.storage_notice.label.text()


def test_a_corrupted_database_is_named_kept_and_can_be_moved_aside(tmp_path, open_window, qtbot):
    path = tmp_path / "workbench.db"
    path.write_bytes(b"not a database at all " * 500)
    window = open_window(Storage.open(path))
    assert str(path) in notice_text(window) and "damaged" in notice_text(window)
    assert window.storage_notice.move_aside_button.isVisible()
    assert path.read_bytes().startswith(b"not a database")  # nothing written over it
    window.model.ask(window.chat.current.conversation_id, "typed before moving it aside", SamplingSettings())
    qtbot.mouseClick(window.storage_notice.move_aside_button, qtbot_left())
    kept = [p for p in tmp_path.iterdir() if ".damaged-" in p.name]
    assert len(kept) == 1 and kept[0].read_bytes().startswith(b"not a database")
    assert str(kept[0]) in notice_text(window)
    assert window.storage.flush()
    texts = sqlite3.connect(path).execute("SELECT text FROM messages").fetchall()
    assert ("typed before moving it aside",) in texts  # the new database took over what the window held


def test_a_second_instance_says_so_and_starts_no_engine(tmp_path, open_window):
    path = tmp_path / "workbench.db"
    first = Storage.open(path)
    try:
        window = open_window(Storage.open(path), start_engine=True)
        assert "Another vLLM Workbench is running" in notice_text(window) and str(path) in notice_text(window)
        assert window.model.latest_start_id == 0 and window.model.engine.state is EngineState.STOPPED
        assert window.restart_engine() == 0  # the menu's Restart engine does not start one either
        assert not window.storage.saving
    finally:
        first.close()


def test_a_read_only_database_is_shown_and_nothing_is_written(tmp_path, open_window):
    path = tmp_path / "workbench.db"
    conversation_id = stored_conversation(path)
    before = path.read_bytes()
    window = open_window(Storage.open(path, mode="ro"))
    assert "can only be read" in notice_text(window) and str(path) in notice_text(window)
    assert window.model.conversations[conversation_id].messages[0].text == "stored question"
    new = window.chat.new_conversation()  # the app runs on, in memory
    window.model.ask(new.conversation_id, "not saved", SamplingSettings())
    window.close()
    assert path.read_bytes() == before


def test_a_full_disk_is_reported_and_what_was_not_saved_is_written_later(tmp_path, open_window, qtbot):
    path = tmp_path / "workbench.db"
    storage = Storage.open(path)
    pages = storage.opened.connection.execute("PRAGMA page_count").fetchone()[0]
    storage.opened.connection.execute(f"PRAGMA max_page_count = {pages + 2}")
    window = open_window(storage)
    model = window.model
    request = model.ask(window.chat.current.conversation_id, "a long reply please", SamplingSettings())
    model.apply(TextFlushed({request.request_id: LONG_TEXT}))
    qtbot.waitUntil(lambda: window.storage_notice.isVisible(), timeout=HANG_TIMEOUT_MS)
    assert "is full" in notice_text(window) and str(path) in notice_text(window)
    assert window.model.conversations[window.chat.current.conversation_id].messages[-1].text == LONG_TEXT
    storage.opened.connection.execute("PRAGMA max_page_count = 1000000")  # space freed: the retry succeeds
    qtbot.waitUntil(lambda: not window.storage_notice.isVisible(), timeout=HANG_TIMEOUT_MS)
    assert storage.flush()
    texts = sqlite3.connect(path).execute("SELECT text FROM messages WHERE role = 'assistant'").fetchall()
    assert texts == [(LONG_TEXT,)]


def test_a_database_from_a_newer_schema_is_left_alone(tmp_path, open_window):
    path = tmp_path / "workbench.db"
    stored_conversation(path)
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA user_version = 99")
    connection.commit()
    connection.close()
    before = path.read_bytes()
    window = open_window(Storage.open(path))
    assert "newer vLLM Workbench" in notice_text(window) and "schema 99" in notice_text(window)
    assert str(path) in notice_text(window) and window.model.conversations  # a fresh chat to type in
    window.model.ask(window.chat.current.conversation_id, "not saved", SamplingSettings())
    window.close()
    assert path.read_bytes() == before


def qtbot_left():
    from PySide6.QtCore import Qt

    return Qt.LeftButton


def test_deleting_asks_first_and_clearing_asks_twice(tmp_path, open_window):
    path = tmp_path / "workbench.db"
    window = open_window(Storage.open(path))
    chat, asked = window.chat, []
    answers: list[bool] = []
    chat.confirm = lambda parent, title, text: (asked.append(text), answers.pop(0))[1]
    for _ in range(3):
        chat.new_conversation()
    ids = list(window.model.conversations)
    answers[:] = [False]
    assert not chat.delete_current() and list(window.model.conversations) == ids and len(asked) == 1
    answers[:] = [True]
    assert chat.delete_current() and list(window.model.conversations) == ids[:-1]
    assert chat.conversation_list.count() == len(ids) - 1
    answers[:] = [True, False]
    assert not chat.clear_all() and len(window.model.conversations) == len(ids) - 1 and len(asked) == 4
    answers[:] = [True, True]
    assert chat.clear_all() and len(asked) == 6
    assert len(window.model.conversations) == 1 and chat.conversation_list.count() == 1  # a fresh one to type in
    assert window.storage.flush()
    stored = sqlite3.connect(path).execute("SELECT conversation_id FROM conversations").fetchall()
    assert stored == [(chat.current.conversation_id,)]


def test_the_window_shows_the_batch_run_of_the_last_session(tmp_path, open_window):
    from workbench.batch.formats import BatchPrompt
    from workbench.batch.results import BatchResults
    from workbench.batch.run import RunSettings
    from workbench.engine.backend import StreamEvent
    from workbench.engine.spec import EngineConfig
    from workbench.model.app_model import AppModel
    from workbench.model.engine_commands import EngineCommands

    path = tmp_path / "workbench.db"
    storage, model = Storage.open(path), AppModel(EngineConfig("demo"))
    storage.start(model)
    results = BatchResults()
    for line_no in (1, 2):
        results.append(BatchPrompt(line_no, prompt=f"prompt {line_no}"))
    EngineCommands(model, lambda command: None)  # the engine is not running: nothing goes anywhere
    run = model.new_batch_run(results, RunSettings(), source=(str(tmp_path / "p.txt"), "text"))
    run.start()
    run.text_arrived(f"{run.run_id}-0", "the output")
    run.request_finished(StreamEvent(f"{run.run_id}-0", "", True, "stop", None))
    assert storage.flush()
    storage.close()
    window = open_window(Storage.open(path))
    pane = window.batch
    assert pane.run is window.model.batch_runs[run.run_id] and pane.table_model.rowCount() == 2
    assert "Restored from the last session" in pane.file_label.text() and "p.txt" in pane.file_label.text()
    assert pane.run.results.texts[0] == "the output" and pane.run.state == "paused"
    assert pane.pause_button.text() == "Resume" and pane.export_button.isEnabled()
