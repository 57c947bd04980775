"""Storage without a window: what the model does is written by the storage thread and read back whole."""
from __future__ import annotations

import sqlite3
import time

import pytest

from workbench.batch.formats import BatchPrompt
from workbench.batch.results import CANCELLED, DONE, QUEUED, BatchResults
from workbench.batch.run import RunSettings
from workbench.engine.backend import EngineInfo, StreamEvent
from workbench.engine.events import EngineReady, EngineState, RequestFinished, StateChanged, TextFlushed
from workbench.engine.metrics import RequestFigures
from workbench.engine.sampling import SamplingSettings
from workbench.engine.spec import EngineConfig
from workbench.model.app_model import AppModel
from workbench.storage.database import connect
from workbench.storage.schema import MIGRATIONS, SCHEMA_VERSION, migrate, schema_version
from workbench.model.engine_commands import EngineCommands
from workbench.storage.store import Storage
from workbench.storage.writer import COMMIT_INTERVAL_S

FIGURES = RequestFigures(12, 4, 7, 0.021, 88.5, queue_s=0.002, e2e_s=0.1)


def started(path, before_storage=lambda model: None) -> tuple[Storage, AppModel]:
    """``before_storage(model)``: receivers to connect before the storage's own."""
    storage, model = Storage.open(path), AppModel(EngineConfig("demo"), "be brief")
    storage.restore_into(model)
    EngineCommands(model, posted.append)  # the one owner the model's batch runs send through
    before_storage(model)
    storage.start(model)
    return storage, model


def restarted(storage: Storage, path) -> tuple[Storage, AppModel]:
    assert storage.flush()
    storage.close()
    return started(path)


posted: list = []


def answered(model: AppModel, text: str, reply: str, sampling=SamplingSettings(temperature=0.2, seed=3)):
    conversation = model.new_conversation()
    request = model.ask(conversation.conversation_id, text, sampling, "be brief")
    for part in reply.split(" "):
        model.apply(TextFlushed({request.request_id: part + " "}))
    model.apply(RequestFinished(StreamEvent(request.request_id, "", True, "stop", FIGURES)))
    return conversation


def test_a_conversation_comes_back_field_by_field(tmp_path):
    storage, model = started(tmp_path / "workbench.db")
    first = answered(model, "What is a block?", "A page of keys and values.")
    second = answered(model, "And a hash?", "It names a full block.")
    storage, model = restarted(storage, tmp_path / "workbench.db")
    assert list(model.conversations) == [first.conversation_id, second.conversation_id]
    restored = model.conversations[first.conversation_id]
    assert restored == first  # ids, titles, text, status, request ids, settings, system prompt, figures
    assert restored.messages[1].figures == FIGURES and restored.messages[1].sampling.seed == 3
    assert storage.opened.connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    storage.close()


def test_streamed_text_is_committed_within_a_second_without_a_flush(tmp_path):
    storage, model = started(tmp_path / "workbench.db")
    conversation = model.new_conversation()
    request = model.ask(conversation.conversation_id, "Stream please", SamplingSettings())
    model.apply(TextFlushed({request.request_id: "still streaming"}))
    reader = connect(tmp_path / "workbench.db", "ro")
    deadline = time.monotonic() + 1.0
    text = None
    while time.monotonic() < deadline and text != "still streaming":
        text = reader.execute("SELECT text FROM messages WHERE role = 'assistant'").fetchone()
        text = text[0] if text else None
        time.sleep(COMMIT_INTERVAL_S / 10)
    assert text == "still streaming"
    reader.close()
    storage, model = restarted(storage, tmp_path / "workbench.db")
    reply = model.conversations[conversation.conversation_id].messages[-1]
    assert reply.status == "stopped" and "ended while this reply streamed" in reply.error  # not "streaming" forever
    storage.close()


def test_regenerate_delete_and_clear_are_kept(tmp_path):
    storage, model = started(tmp_path / "workbench.db")
    kept = answered(model, "one", "first answer")
    gone = answered(model, "two", "second answer")
    request = model.regenerate(kept.conversation_id, SamplingSettings())
    model.apply(TextFlushed({request.request_id: "regenerated"}))
    model.delete_conversation(gone.conversation_id)
    storage, model = restarted(storage, tmp_path / "workbench.db")
    assert list(model.conversations) == [kept.conversation_id]
    assert [m.text for m in model.conversations[kept.conversation_id].messages] == ["one", "regenerated"]
    model.clear_conversations()
    storage, model = restarted(storage, tmp_path / "workbench.db")
    assert model.conversations == {}
    storage.close()


def test_a_batch_run_comes_back_with_its_results(tmp_path):
    storage, model = started(tmp_path / "workbench.db")
    results = BatchResults()
    for line_no in (1, 2, 3):
        results.append(BatchPrompt(line_no, prompt=f"prompt {line_no}", sampling=(("max_tokens", 5),)))
    run = model.new_batch_run(results, RunSettings(max_in_flight=2), source=("/p.jsonl", "jsonl"))
    run.start()
    run.text_arrived(f"{run.run_id}-0", "out zero")
    run.request_finished(StreamEvent(f"{run.run_id}-0", "", True, "length", FIGURES))
    run.request_finished(StreamEvent(f"{run.run_id}-1", "", True, "aborted", None))
    storage, model = restarted(storage, tmp_path / "workbench.db")
    restored = model.batch_runs[run.run_id]
    assert restored.source == ("/p.jsonl", "jsonl") and restored.settings.max_in_flight == 2
    assert [restored.results.status(r) for r in range(3)] == [DONE, CANCELLED, QUEUED]
    assert restored.results.texts[0] == "out zero" and restored.results.finish_reason(0) == "length"
    assert restored.results.value("ttft_s", 0) == FIGURES.ttft_s and restored.results.prompts == results.prompts
    assert restored.state == "paused" and "Resume" in restored.message  # the unfinished row waits
    assert model.new_batch_run(BatchResults(), RunSettings()).run_id != run.run_id
    storage.close()


def test_a_kept_run_says_how_long_it_ran_and_its_tokens_a_second_after_a_restart(tmp_path):
    """A kept run read back said "ran 0s · 0 tok/s": its running time was not kept. It is now the time its rows
    were in the engine (each from its arrival to its end), which leaves out pauses and the time between
    sessions; a run whose rows hold no such times (a server that gives no end-to-end latency) says neither."""
    from dataclasses import replace

    from workbench.ui.batch_runs import progress_text

    storage, model = started(tmp_path / "workbench.db")
    results = BatchResults()
    for line_no in (1, 2, 3):
        results.append(BatchPrompt(line_no, prompt=f"prompt {line_no}"))
    run = model.new_batch_run(results, RunSettings(max_in_flight=3), source=("/p.jsonl", "jsonl"))
    run.start()
    for row, e2e_s in enumerate((2.0, 3.0, 1.0)):  # all three in the engine together, the longest 3 s
        run.request_finished(StreamEvent(f"{run.run_id}-{row}", "", True, "length",
                                         RequestFigures(10, 0, 8, 0.1, 50.0, e2e_s=e2e_s)))
    storage, model = restarted(storage, tmp_path / "workbench.db")
    progress = model.batch_runs[run.run_id].progress()
    assert progress.state == "finished" and progress.elapsed_s == pytest.approx(3.0, abs=0.5)
    assert progress.tokens_per_s == pytest.approx(24 / progress.elapsed_s)
    assert progress_text(progress).startswith(f"3 done · ran 3s · {24 / progress.elapsed_s:,.0f} tok/s")
    untimed = progress_text(replace(progress, elapsed_s=0.0))
    assert "ran" not in untimed and "tok/s" not in untimed
    storage.close()


def test_the_time_in_the_engine_is_the_union_of_the_rows_times():
    import numpy as np

    from workbench.engine.metrics import generating_time_s as busy_seconds

    assert busy_seconds(np.array([]), np.array([])) == 0.0
    assert busy_seconds(np.array([5.0, 0.0, 1.0]), np.array([6.0, 2.0, 3.0])) == 4.0  # [0, 3] and [5, 6]
    assert busy_seconds(np.array([0.0, 2.0, 4.0]), np.array([10.0, 3.0, 12.0])) == 12.0  # nested, overlapping
    assert busy_seconds(np.array([0.0, 1.0]), np.array([1.0, 2.0])) == 2.0  # touching


def test_every_column_of_a_batch_run_comes_back_as_it_was_whatever_its_figures_lack(tmp_path):
    """A kept run's figures are read back by SQLite into arrays, not a RequestFigures a row: every column, status,
    finish reason, text and error comes back as the run held it, for figures that lack what a server may not
    report (cached tokens, queue time, a decode speed) and rows that failed, were cancelled or never ran."""
    import numpy as np

    from workbench.batch.record_images import BatchImage
    from workbench.batch.results import COUNT_COLUMNS, TIME_COLUMNS

    storage, model = started(tmp_path / "workbench.db")
    results = BatchResults()
    for line_no in range(1, 41):
        images = (BatchImage("https://example.org/cat.png", 0),) if line_no > 36 else ()  # rows never answered
        results.append(BatchPrompt(line_no * 2, prompt=f"prompt {line_no}", reference="r" if line_no % 5 == 0 else None,
                                   images=images))
    run = model.new_batch_run(results, RunSettings(max_in_flight=40), source=("/p.jsonl", "jsonl"))
    run.start()
    kinds = (FIGURES, RequestFigures(30, None, 1, 0.5, None, source="client"),
             RequestFigures(9, 0, 3, None, 0.0, e2e_s=2.5, num_image_tokens=144), None)
    for row in range(36):
        request_id = f"{run.run_id}-{row}"
        run.text_arrived(request_id, f"answer {row}")
        if row % 9 == 8:
            run.request_failed(request_id, f"row {row} failed")
        else:
            run.request_finished(StreamEvent(request_id, "", True, ("length", "stop", "aborted", None)[row % 4],
                                             kinds[row % 4]))
    storage, model = restarted(storage, tmp_path / "workbench.db")
    back = model.batch_runs[run.run_id].results
    assert back.prompts.num_read == 0, "a kept run's prompts are read when asked for, not at start"
    assert back.prompts[7] == results.prompts[7] and back.prompts.num_read == 1
    assert back.num_rows == 40 and back.prompts == results.prompts and back.prompts.num_read == 40
    assert list(back.column("line_no")) == list(range(2, 82, 2))
    for name in ("status", "finish_reason", *COUNT_COLUMNS, *TIME_COLUMNS):
        assert np.array_equal(back.column(name)[:36], results.column(name)[:36], equal_nan=True), name
    assert [back.status(row) for row in range(36, 40)] == [QUEUED] * 4  # sent when the app ended: sent again
    assert back.finish_reason_names[1:] == results.finish_reason_names[1:]  # the codes mean the same reasons
    assert back.texts[:36] == results.texts[:36] and back.texts[36:] == [""] * 4 and back.errors == results.errors
    assert back.value("itl_s", 0) == FIGURES.itl_s and back.value("image_tokens", 2) == 144
    assert back.value("cached_prompt_tokens", 1) is None and back.value("image_tokens", 1) == 0
    assert (back.num_references, back.num_image_rows) == (results.num_references, results.num_image_rows) == (8, 4)
    storage.close()


def test_every_engine_run_is_kept_with_its_configuration_and_times(tmp_path):
    storage, model = started(tmp_path / "workbench.db")
    info = EngineInfo("demo", "0.32.0", "cpu", 2048, None, (1, 2))
    for event in (StateChanged(EngineState.STARTING, "starting", 1), EngineReady(info),
                  StateChanged(EngineState.READY, "ready", 1)):
        model.apply(event)
    model.note_capacity_plan(1, 4096)  # the preset panel's estimate, once vLLM's count is in
    for event in (StateChanged(EngineState.STOPPED, "stopped", 1), StateChanged(EngineState.STARTING, "starting", 2)):
        model.apply(event)
    assert storage.flush()
    rows = sqlite3.connect(tmp_path / "workbench.db").execute(
        "SELECT start_id, config, info, started_s, ready_s, stopped_s, planned_kv_blocks FROM engine_runs "
        "ORDER BY started_s").fetchall()
    assert [r[0] for r in rows] == [1, 2] and [r[6] for r in rows] == [4096, None]
    assert '"model":"demo"' in rows[0][1] and '"vllm_version":"0.32.0"' in rows[0][2]
    assert rows[0][3] <= rows[0][4] <= rows[0][5] and rows[1][5] is None
    storage.close()


def test_migrations_bring_an_older_database_up_to_date(tmp_path):
    connection = connect(tmp_path / "old.db")
    assert migrate(connection, MIGRATIONS[:0]) == 0
    assert migrate(connection) == SCHEMA_VERSION
    later = (*MIGRATIONS, ("CREATE TABLE series (series_id TEXT PRIMARY KEY)",))
    assert migrate(connection, later) == SCHEMA_VERSION + 1
    assert connection.execute("SELECT count(*) FROM series").fetchone() == (0,)
    broken = (*later, ("CREATE TABLE fine (x)", "CREATE TABLE series (x)"))  # fails half-way: all rolled back
    with pytest.raises(sqlite3.OperationalError):
        migrate(connection, broken)
    assert schema_version(connection) == SCHEMA_VERSION + 1
    assert connection.execute("SELECT count(*) FROM sqlite_master WHERE name = 'fine'").fetchone() == (0,)


def test_a_chat_made_while_all_are_removed_is_kept_whichever_receiver_connected_first(tmp_path):
    """The chat pane makes a fresh chat when the last one goes, inside the model's removal signal: it is
    stored whether that receiver was connected before the storage's or after it."""
    def fresh_chat_when_none_is_left(model: AppModel) -> None:
        model.conversation_removed.connect(lambda _id: None if model.conversations else model.new_conversation())

    storage, model = started(tmp_path / "workbench.db", before_storage=fresh_chat_when_none_is_left)
    answered(model, "one", "first answer")
    model.clear_conversations()
    fresh = list(model.conversations)
    assert len(fresh) == 1
    storage, model = restarted(storage, tmp_path / "workbench.db")
    assert list(model.conversations) == fresh
    storage.close()


def test_images_no_stored_message_holds_are_removed_at_the_next_start_and_only_beside_their_database(tmp_path):
    from chat_images import image_input
    from workbench.engine.image_store import path_of

    def opened(path):
        storage, model = Storage.open(path), AppModel(EngineConfig("demo"), "be brief")
        model.images_dir = tmp_path / "images"  # the data folder's, beside workbench.db
        storage.restore_into(model)
        storage.start(model)
        return storage, model

    path = tmp_path / "workbench.db"
    storage, model = opened(path)
    shared, only_gone = image_input("shared.png"), image_input("gone.png", colour=(0, 0, 200))
    kept, gone = model.new_conversation(), model.new_conversation()
    model.ask(kept.conversation_id, "This one?", SamplingSettings(), images=(shared,))
    model.ask(gone.conversation_id, "And these?", SamplingSettings(), images=(shared, only_gone))
    model.delete_conversation(gone.conversation_id)
    part = model.images_dir / ".part-cut-short"
    part.write_bytes(b"half an image")
    assert storage.flush()
    storage.close()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    other = Storage.open(elsewhere / "workbench.db")  # another database never judges this folder's images
    other_model = AppModel(EngineConfig("demo"))
    other_model.images_dir = model.images_dir
    other.restore_into(other_model)
    other.close()
    assert path_of(only_gone.ref, model.images_dir).exists() and part.exists()

    storage, model = opened(path)
    assert path_of(shared.ref, model.images_dir).read_bytes() == shared.data  # a kept message holds it
    assert not path_of(only_gone.ref, model.images_dir).exists() and not part.exists()
    assert [m.images for m in model.conversations[kept.conversation_id].messages][0] == (shared.ref,)
    storage.close()
