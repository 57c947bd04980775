"""Sessions and the plots' series in storage, without an engine: a version 1 database keeps its data
when it becomes version 2, a run of the app is a session holding its engine runs, and the series
points come back per engine run as they were published."""
from __future__ import annotations

import json
import sqlite3
import time
from types import MappingProxyType

import numpy as np
import pytest
from PySide6.QtCore import Qt

from chat_driver import HANG_TIMEOUT_MS
from no_nvml import telemetry_without_nvml
from workbench.engine.backend import EngineInfo, StreamEvent
from workbench.engine.events import EngineReady, EngineState, RequestFinished, StateChanged, TextFlushed
from workbench.engine.metrics import RequestFigures
from workbench.engine.ring_buffer import Series
from workbench.engine.sampling import SamplingSettings
from workbench.engine.spec import EngineConfig
from workbench.engine.stats import COLUMNS, StatsSeries, StatsTotals
from workbench.model.app_model import AppModel
from workbench.storage.database import connect
from workbench.storage.schema import MIGRATIONS, SCHEMA_VERSION, migrate, schema_version
from workbench.storage.series import MEMORY, load_series
from workbench.storage.store import Storage

FACTS = {"app_version": "0.1.0", "vllm_version": "0.32.0", "torch_version": "2.13.0", "driver_version": None,
         "gpus": []}


def test_a_version_1_database_keeps_its_data_when_migrated(tmp_path):
    path = tmp_path / "workbench.db"
    connection = connect(path)
    assert migrate(connection, MIGRATIONS[:1]) == 1
    connection.executescript("""
        INSERT INTO conversations VALUES ('c1', 'First', 0, 100.0, NULL);
        INSERT INTO messages VALUES ('m1', 'c1', 0, 'user', 'Hi', 'done', '', '', NULL, 'sys', NULL, 110.0);
        INSERT INTO messages VALUES ('m2', 'c1', 1, 'assistant', 'Hello', 'done', '', 'r1', NULL, 'sys',
                                     '{"prompt_tokens":5,"cached_prompt_tokens":0,"output_tokens":2,"ttft_s":0.01,"decode_tokens_per_s":50}', 111.0);
        INSERT INTO batch_runs VALUES ('batch1', '["p.jsonl","jsonl"]', '{}', 120.0);
        INSERT INTO batch_rows VALUES ('batch1', 0, '{}', 2, 'length', 'out', '', NULL);
        INSERT INTO engine_runs VALUES ('e1', 1, '{"model":"demo"}', '{"vllm_version":"0.32.0"}', 105.0, 106.0, 130.0, '');
        INSERT INTO engine_runs VALUES ('e0', 0, '{"model":"demo"}', NULL, 50.0, NULL, 60.0, 'failed');
    """)
    connection.close()
    storage = Storage.open(path)  # opening migrates
    assert storage.problem is None and schema_version(storage.opened.connection) == SCHEMA_VERSION
    storage.close()
    db = sqlite3.connect(path)
    assert db.execute("SELECT text, run_key FROM messages ORDER BY position").fetchall() == [
        ("Hi", None), ("Hello", "e1")]  # the reply: the engine run that was running when it was written
    assert db.execute("SELECT text, status, run_key FROM batch_rows").fetchall() == [("out", 2, "e1")]
    assert db.execute("SELECT title FROM conversations").fetchall() == [("First",)]
    assert db.execute("SELECT session_id, started_s, ended_s FROM sessions").fetchall() == [("v1", 50.0, 130.0)]
    assert db.execute("SELECT run_key, session_id FROM engine_runs ORDER BY run_key").fetchall() == [
        ("e0", "v1"), ("e1", "v1")]


def step_points(first_t: float, num: int, start_id: int = 0) -> StatsSeries:
    columns = {name: np.arange(num, dtype=float) + index for index, name in enumerate(COLUMNS)}
    columns["t"] = first_t + 0.25 * np.arange(num)
    return StatsSeries(Series(num, MappingProxyType(columns)), StatsTotals(), start_id)


def test_a_session_holds_its_engine_runs_and_their_series(tmp_path):
    path = tmp_path / "workbench.db"
    storage, model = Storage.open(path), AppModel(EngineConfig("demo"), "be brief")
    storage.restore_into(model)
    before = time.time()
    storage.start(model, FACTS)
    info = EngineInfo("demo", "0.32.0", "cpu", 2048, None, (1,))
    for event in (StateChanged(EngineState.STARTING, "starting", 1), EngineReady(info),
                  StateChanged(EngineState.READY, "ready", 1)):
        model.apply(event)
    now = time.monotonic()
    storage.record_stats(step_points(now, 6, start_id=1))
    storage.record_stats(step_points(now, 10, start_id=1))  # four new points; the first six are not taken again
    conversation = model.new_conversation()
    request = model.ask(conversation.conversation_id, "Hi", SamplingSettings(), "be brief")
    model.apply(TextFlushed({request.request_id: "Hello"}))
    model.apply(RequestFinished(StreamEvent(request.request_id, "", True, "stop", RequestFigures(5, 0, 2, 0.01, 40.0))))
    assert storage.flush()
    session_id = storage.session_id
    storage.close()
    db = connect(path)
    (started_s, ended_s, facts), = db.execute("SELECT started_s, ended_s, facts FROM sessions").fetchall()
    assert before <= started_s <= ended_s <= time.time() and json.loads(facts) == FACTS
    (run_key, run_session), = db.execute("SELECT run_key, session_id FROM engine_runs").fetchall()
    assert run_session == session_id
    assert db.execute("SELECT role, run_key FROM messages ORDER BY position").fetchall() == [
        ("user", None), ("assistant", run_key)]
    series = load_series(db, run_key)
    assert list(series) == list(COLUMNS) and len(series["t"]) == 10
    assert np.array_equal(series["kv_usage_pct"], np.arange(10) + COLUMNS.index("kv_usage_pct"))
    wall = series["t"]
    assert np.allclose(np.diff(wall), 0.25) and abs(wall[0] - started_s) < 5  # wall-clock seconds
    db.close()


def test_a_past_session_is_drawn_from_its_stored_series_in_every_plot(tmp_path, qtbot):
    from workbench.ui.sessions_view import SessionsView
    from workbench.ui.stats_plots import PLOTS

    path = tmp_path / "workbench.db"
    storage, model = Storage.open(path), AppModel(EngineConfig("demo"), "")
    storage.restore_into(model)
    storage.start(model, FACTS)
    for event in (StateChanged(EngineState.STARTING, "starting", 1), StateChanged(EngineState.READY, "ready", 1)):
        model.apply(event)
    storage.record_stats(step_points(time.monotonic(), 12, start_id=1))
    storage.close()
    view = SessionsView(path)
    qtbot.addWidget(view)
    qtbot.waitUntil(lambda: view.reading is None and view.comparing is None)  # read off the GUI thread
    view.session_table.selectRow(0)
    view.open_selected()
    for _, _, curves in PLOTS.values():
        for key, _, _ in curves:
            x, y = view.plots.curves[key].getData()
            assert x is not None and len(x) == 12 and y[-1] == 11 + COLUMNS.index(key), key


def test_the_memory_series_is_stored_per_engine_run_apart_from_the_plots_and_exported(tmp_path, qtbot):
    """Real readings of this process's memory (the memory service, its host memory: this test process
    holds no GPU memory, so NVML is left out where the machine has it) go through the writer into the
    same table as the plots' points, come back equal and apart from them, and reach timeseries.csv and
    a past session's memory plot."""
    import csv
    import os

    from workbench.engine.backend import WorkerMemory
    from workbench.export.session_export import export_session
    from workbench.telemetry.memory_service import MEMORY_COLUMNS, MemoryService
    from workbench.ui.session_export_action import start_session_export
    from workbench.ui.sessions_view import SessionsView

    path = tmp_path / "workbench.db"
    storage, model = Storage.open(path), AppModel(EngineConfig("demo"), "")
    storage.restore_into(model)
    storage.start(model, FACTS)
    worker = WorkerMemory(os.getpid(), "cpu", None, 3 << 20, "parameters", 5 << 20)
    service = MemoryService(telemetry_without_nvml())
    service.watch(EngineInfo("demo", "0.32.0", "cpu", 2048, None, (os.getpid(),), (worker,), 64))
    service.sample()
    storage.record_memory(service.latest())  # no engine run yet: not kept
    for event in (StateChanged(EngineState.STARTING, "starting", 1), StateChanged(EngineState.READY, "ready", 1)):
        model.apply(event)
    storage.record_stats(step_points(time.monotonic(), 8, start_id=1))
    for _ in range(5):
        service.sample()
    storage.record_memory(service.latest())
    storage.record_memory(service.latest())  # the same points again: not taken twice
    for _ in range(3):
        service.sample()
    published = service.latest().series
    storage.record_memory(service.latest())
    assert storage.flush()
    storage.close()
    db = connect(path)
    (run_key,), = db.execute("SELECT run_key FROM engine_runs").fetchall()
    assert db.execute("SELECT count(*) FROM series_chunks").fetchone() == (2,)  # one chunk each, at the close
    memory, stats = load_series(db, run_key, MEMORY), load_series(db, run_key)
    assert list(memory) == list(MEMORY_COLUMNS) and list(stats) == list(COLUMNS) and len(stats["t"]) == 8
    for name in MEMORY_COLUMNS[1:]:  # the 8 points taken while the engine ran, as published
        assert np.array_equal(memory[name], published[name][1:], equal_nan=True), name
    offset = memory["t"] - published["t"][1:]  # monotonic seconds made wall-clock ones, the same shift for all
    assert np.ptp(offset) < 1e-5 and abs(memory["t"][-1] - time.time()) < 60
    assert np.all(memory["process"] > 0) and np.all(memory["weights"] == 3 << 20)  # this process's real RSS
    session_id, = db.execute("SELECT session_id FROM sessions").fetchone()
    db.close()

    for _ in export_session(path, session_id, tmp_path / "export"):
        pass
    with open(tmp_path / "export" / "timeseries.csv", newline="", encoding="utf-8-sig") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 8 + 8
    kept = [row for row in rows if row["memory_process"]]
    assert len(kept) == 8 and all(row["engine_run"] == "1" and row["run_key"] == run_key for row in kept)
    assert [float(row["memory_process"]) for row in kept] == list(memory["process"])
    assert all(row["kv_usage_pct"] == "" for row in kept) and all(row["memory_process"] == "" for row in rows
                                                                  if row["kv_usage_pct"])
    assert [float(row["t"]) for row in rows] == sorted(float(row["t"]) for row in rows)

    view = SessionsView(path)  # the past session's memory plot, drawn from the stored series
    qtbot.addWidget(view)
    qtbot.waitUntil(lambda: view.reading is None and view.comparing is None)  # read off the GUI thread
    view.session_table.selectRow(0)
    view.open_selected()
    x, total = view.memory.total.getOriginalDataset()  # without NVML: the engine processes' host memory
    assert len(x) == 8 and np.allclose(total * view.memory.unit, memory["process"])
    assert "8 stored memory points" in view.memory.text.text()
    outcome = []
    start_session_export(view, path, session_id, tmp_path / "past", on_done=lambda f, e: outcome.append(e))
    qtbot.waitUntil(lambda: bool(outcome), timeout=HANG_TIMEOUT_MS)
    assert outcome == [None] and (tmp_path / "past" / "plot-memory.png").stat().st_size > 1000
    assert "stored series" in (tmp_path / "past" / "report.html").read_text()


def test_a_session_the_app_did_not_end_is_closed_at_the_next_start(tmp_path):
    path = tmp_path / "workbench.db"
    storage, model = Storage.open(path), AppModel(EngineConfig("demo"), "")
    storage.restore_into(model)
    storage.start(model, FACTS)
    model.apply(StateChanged(EngineState.STARTING, "starting", 1))
    assert storage.flush()
    storage.writer.put(None)  # the thread ends as in a crash: no SessionEnded, no stop time
    storage.writer._thread.join(10)
    storage.writer = storage.recorder = storage.series = None
    storage.opened.connection = None
    storage.close()
    storage, model = Storage.open(path), AppModel(EngineConfig("demo"), "")
    storage.restore_into(model)
    storage.close()
    db = connect(path)
    (started_s, ended_s), = db.execute("SELECT started_s, ended_s FROM sessions").fetchall()
    assert ended_s is not None and ended_s >= started_s


def ran_batch(model: AppModel, num_rows: int = 3):
    from workbench.batch.formats import BatchPrompt
    from workbench.batch.results import BatchResults
    from workbench.batch.run import RunSettings
    from workbench.model.engine_commands import EngineCommands

    results = BatchResults()
    for line_no in range(1, num_rows + 1):
        results.append(BatchPrompt(line_no, prompt=f"prompt {line_no}"))
    EngineCommands(model, lambda command: None)  # the engine is not running: nothing goes anywhere
    run = model.new_batch_run(results, RunSettings(max_in_flight=num_rows), source=("/p.jsonl", "jsonl"))
    run.start()
    for row in range(num_rows - 1):
        run.request_finished(StreamEvent(f"{run.run_id}-{row}", "", True, "length",
                                         RequestFigures(10, 2, 5, 0.01 * (row + 1), 50.0, e2e_s=0.2 + row)))
    # the last row is aborted before the engine ran it: no figures, no engine run
    run.request_finished(StreamEvent(f"{run.run_id}-{num_rows - 1}", "", True, "aborted", None))
    return run


def test_a_batch_run_let_go_of_stays_with_its_session_until_the_session_is_deleted(tmp_path, qtbot):
    from workbench.ui.sessions_view import SessionsView

    path = tmp_path / "workbench.db"
    storage, model = Storage.open(path), AppModel(EngineConfig("demo"), "")
    storage.restore_into(model)
    storage.start(model, FACTS)
    for event in (StateChanged(EngineState.STARTING, "starting", 1), StateChanged(EngineState.READY, "ready", 1)):
        model.apply(event)
    first = ran_batch(model)
    model.forget_batch_run(first.run_id)  # the Batch pane opened another file
    assert storage.flush()
    db = connect(path)
    assert db.execute("SELECT row FROM batch_rows WHERE run_id = ?", (first.run_id,)).fetchall() == [(0,), (1,)]
    storage.close()
    storage, model = Storage.open(path), AppModel(EngineConfig("demo"), "")
    storage.restore_into(model)
    assert first.run_id not in model.batch_runs  # not shown again, but kept for the session
    storage.start(model, FACTS)
    second = ran_batch(model)  # may take the same id: the kept one moves aside
    assert storage.flush()
    rows = db.execute("SELECT run_id, count(*) FROM batch_rows GROUP BY run_id ORDER BY run_id").fetchall()
    assert len(rows) == 2 and {count for _, count in rows} == {2, 3} and second.run_id in dict(rows)
    assert db.execute("SELECT count(*) FROM batch_runs WHERE forgotten_s IS NOT NULL").fetchone() == (1,)
    view = SessionsView(path, storage.session_id)
    qtbot.addWidget(view)
    qtbot.waitUntil(lambda: view.reading is None and view.comparing is None)  # read off the GUI thread
    assert view.session_table.rowCount() == 2 and view.session_table.item(1, 3).text() == "2"
    view.session_table.selectRow(0)  # the newest: this run of the app
    assert not view.delete_button.isEnabled() and not view.delete_selected(lambda question: True)
    view.session_table.selectRow(1)
    assert view.export_button.isEnabled()
    from workbench.ui.session_export_action import start_session_export

    outcome = []  # a past session exported from the view: its plots from the stored series, no heatmap
    start_session_export(view, path, view.selected().session_id, tmp_path / "past", on_done=lambda f, e: outcome.append(e))
    qtbot.waitUntil(lambda: bool(outcome), timeout=HANG_TIMEOUT_MS)
    assert outcome == [None] and (tmp_path / "past.zip").exists() and not (tmp_path / "past" / "heatmap.png").exists()
    with open(tmp_path / "past" / "requests.csv") as handle:
        assert len(handle.readlines()) == 1 + 2  # the header and the two rows that ran
    assert not view.delete_selected(lambda question: False)  # asked, and the answer was no
    assert view.session_table.rowCount() == 2
    assert view.delete_selected(lambda question: "engine runs" in question)
    qtbot.waitUntil(lambda: view.reading is None and view.session_table.rowCount() == 1)
    assert db.execute("SELECT run_id, count(*) FROM batch_rows GROUP BY run_id").fetchall() == [(second.run_id, 3)]
    assert db.execute("SELECT count(*) FROM engine_runs").fetchone() == (0,)  # the new session started none
    storage.close()


def test_the_report_table_holds_the_1000_slowest_requests_with_a_note():
    from workbench.export.report import build_report
    from workbench.sessions.stored import FIGURE_COLUMNS, RequestRecord, SessionSummary

    found = [RequestRecord("batch", "batch1", "batch1", str(i), f"q{i}", "k", "done", "length", 1.0,
                           {**dict.fromkeys(FIGURE_COLUMNS), "e2e_s": i / 1000}, "p", "o") for i in range(1200)]
    page = build_report(SessionSummary("s", 0.0, 1.0, FACTS), [], [], found, {}, None)
    table = page[page.index("<table id='requests'>"):]
    assert table.count("<tr>") == 1001 and "1,000 slowest of 1,200" in page
    assert "<td>batch1, line 1199 (q1199)</td>" in table and "line 199 " not in table and "line 200 " in table


def test_without_a_browser_the_report_check_fails_in_ci_and_skips_elsewhere(monkeypatch):
    import pytest

    import browser

    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="apt-get install -y chromium"):
        browser.browser()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        browser.browser()


def runs_of_the_app(path, count: int, with_engine_run: bool = True) -> str:
    """``count`` runs of the app kept in the database at ``path``, each (``with_engine_run``) with an engine
    run that became ready; returns the last one's session id."""
    for _ in range(count):
        storage, model = Storage.open(path), AppModel(EngineConfig("demo"), "")
        storage.restore_into(model)
        storage.start(model, FACTS)
        if with_engine_run:
            for event in (StateChanged(EngineState.STARTING, "starting", 1),
                          StateChanged(EngineState.READY, "ready", 1)):
                model.apply(event)
        assert storage.flush()
        session_id = storage.session_id
        storage.close()
    return session_id


def test_the_sessions_window_names_a_database_it_cannot_read(tmp_path, qtbot):
    from workbench.ui.sessions_view import SessionsView

    damaged = tmp_path / "workbench.db"
    damaged.write_bytes(b"not a database at all" * 100)
    view = SessionsView(damaged)
    qtbot.addWidget(view)
    qtbot.waitUntil(lambda: view.reading is None and view.comparing is None)  # read off the GUI thread
    assert not view.problem.isHidden() and str(damaged) in view.problem.text()
    assert view.session_table.rowCount() == 0 and damaged.read_bytes().startswith(b"not a database")


def test_the_sessions_window_reads_off_the_gui_thread_and_says_so_meanwhile(tmp_path, qtbot, monkeypatch):
    """A session of 100,000 batch rows took 5 s to read, the window frozen: the sessions and the comparison
    are now read on a worker, the window saying so with a busy bar; a Refresh asked meanwhile reads again."""
    import threading

    from workbench.ui import sessions_view
    from workbench.ui.sessions_view import SessionsView

    path = tmp_path / "workbench.db"
    runs_of_the_app(path, 2)  # two runs of the app, each with an engine run: two runs to compare
    read_on = []
    for name in ("read_listing", "compare_runs"):
        real = getattr(sessions_view, name)
        monkeypatch.setattr(sessions_view, name, lambda *args, real=real, name=name: (
            read_on.append((name, threading.current_thread())), real(*args))[1])
    view = SessionsView(path)
    qtbot.addWidget(view)
    assert view.reading is not None and view.reading_note.text() == f"Reading the sessions in {path}…"
    assert view.reading_bar.isVisibleTo(view) and not view.refresh_button.isEnabled()
    assert not any(button.isEnabled() for button in (view.open_button, view.export_button, view.delete_button))
    with qtbot.waitSignal(view.compare_done, timeout=HANG_TIMEOUT_MS):
        pass
    assert [name for name, _ in read_on] == ["read_listing", "compare_runs"]
    assert all(thread is not threading.main_thread() for _, thread in read_on)
    assert view.session_table.rowCount() == 2 and len(view.runs) == 2 and view.compared
    assert view.compare_note.text().startswith("No engine argument differs.")
    assert view.reading_note.text() == "" and not view.reading_bar.isVisibleTo(view) and view.refresh_button.isEnabled()
    view.refresh()
    view.refresh()  # asked while the first reads: read again once it is done
    with qtbot.waitSignal(view.read_done, timeout=HANG_TIMEOUT_MS):
        pass
    assert [name for name, _ in read_on].count("read_listing") == 3
    qtbot.waitUntil(lambda: view.comparing is None)


def test_pictures_are_drawn_from_series_thinned_to_their_peaks_with_the_runs_apart():
    from workbench.sessions.thinning import thin_series

    n = 10_000
    run = {"t": np.arange(n, dtype=float), "kv_usage_pct": np.zeros(n)}
    run["kv_usage_pct"][4321] = 97.0  # one spike among thousands of points
    gap = {"t": np.array([np.nan]), "kv_usage_pct": np.array([np.nan])}
    series = {name: np.concatenate([run[name], gap[name], run[name] + (0 if name != "t" else n + 5)])
              for name in run}
    thinned = thin_series(series, 800)
    assert len(thinned["t"]) == 2 * 800 + 1 and np.isnan(thinned["t"][800])  # each run alone, the gap kept
    assert np.nanmax(thinned["kv_usage_pct"][:800]) == 97.0 == np.nanmax(thinned["kv_usage_pct"][801:])
    assert thinned["t"][0] == 0 and thinned["t"][799] == n - 1 and np.all(np.diff(thinned["t"][:800]) >= 0)
    small = {"t": np.arange(5.0), "kv_usage_pct": np.ones(5)}
    assert thin_series(small, 800) is small


def test_the_keeper_files_no_point_of_the_last_engine_under_the_next_one(tmp_path, qtbot):
    """After a restart the mailbox holds the last engine's series until the new engine's first bin closes
    (0.25 s), and its newest points (the bin closed as that engine stopped) are newer than any kept: the
    keeper's tick in that moment files them under the first engine's run, not the new one."""
    from workbench.bridge.engine_host import Mailboxes
    from workbench.bridge.series_keeper import SeriesKeeper
    from workbench.telemetry.memory_service import MemoryService

    path = tmp_path / "workbench.db"
    storage, model = Storage.open(path), AppModel(EngineConfig("demo"), "")
    storage.restore_into(model)
    storage.start(model, FACTS)
    mailboxes = Mailboxes()
    keeper = SeriesKeeper(mailboxes, MemoryService(telemetry_without_nvml()), storage, interval_ms=3_600_000)
    info = EngineInfo("demo", "0.32.0", "cpu", 2048, None, (1,))
    for event in (StateChanged(EngineState.STARTING, "starting", 1), EngineReady(info),
                  StateChanged(EngineState.READY, "ready", 1)):
        model.apply(event)
    first_run = storage.recorder.run_key
    now = time.monotonic()
    mailboxes._store_stats(step_points(now, 4, start_id=1))
    keeper.keep()
    mailboxes._store_stats(step_points(now, 6, start_id=1))  # the first engine's last bin, closed as it stops
    for event in (StateChanged(EngineState.STARTING, "stopping, then starting", 2), EngineReady(info),
                  StateChanged(EngineState.READY, "ready", 2)):
        model.apply(event)
    second_run = storage.recorder.run_key
    keeper.keep()  # the mailbox: still the first engine's series, its last points newer than any kept
    mailboxes._store_stats(step_points(now + 10, 3, start_id=2))
    keeper.keep()
    keeper.stop()
    assert storage.flush()
    storage.close()
    db = connect(path)
    assert len(load_series(db, first_run)["t"]) == 6  # its last two points, which came as it stopped, too
    assert np.allclose(load_series(db, second_run)["t"] - time.time() + time.monotonic(), now + 10 + 0.25 * np.arange(3),
                       atol=0.05)
    db.close()



def test_the_sessions_table_holds_one_choice_whatever_key_is_held(tmp_path, qtbot):
    """Open, Export and Delete act on one session: a Ctrl- or Shift-click on another row chooses it
    instead of adding it (with two rows chosen, Export took the first, not the one just clicked). The
    newest is chosen as the window opens, a double-click opens a session, and a refresh keeps the choice."""
    from PySide6.QtCore import Qt

    from workbench.ui.sessions_view import OPEN_HINT, SessionsView

    path = tmp_path / "workbench.db"
    current = runs_of_the_app(path, 2, with_engine_run=False)  # two sessions, the newest first in the table
    view = SessionsView(path, current)
    qtbot.addWidget(view)
    qtbot.waitUntil(lambda: view.reading is None and view.comparing is None)  # read off the GUI thread
    view.show()
    table = view.session_table
    assert table.rowCount() == 2
    assert view.selected() is view.sessions[0] and view.open_button.isEnabled()  # the newest, chosen at once
    assert view.plots.totals.text() == OPEN_HINT
    qtbot.waitUntil(lambda: view.plots.is_built)  # its plots are made a turn of the event loop each
    axis = next(iter(view.plots.plots.values())).getAxis("bottom")
    assert axis.labelText == "seconds since the session started" == view.memory.plot.getAxis("bottom").labelText
    for modifier in (Qt.ControlModifier, Qt.ShiftModifier):
        for row in (1, 0):
            rect = table.visualRect(table.model().index(row, 0))
            qtbot.mouseClick(table.viewport(), Qt.LeftButton, modifier, rect.center())
            assert [index.row() for index in table.selectionModel().selectedRows()] == [row], modifier
            assert view.selected() is view.sessions[row]
    assert view.sessions[0].session_id == current and not view.delete_button.isEnabled()
    rect = table.visualRect(table.model().index(1, 1))
    qtbot.mouseClick(table.viewport(), Qt.LeftButton, Qt.NoModifier, rect.center())  # a double-click's first press
    qtbot.mouseDClick(table.viewport(), Qt.LeftButton, Qt.NoModifier, rect.center())  # opens it
    assert view.selected() is view.sessions[1]
    assert view.plots.totals.text() == "No plotted points were stored for this session."
    view.refresh()  # the choice outlives a refresh
    qtbot.waitUntil(lambda: view.reading is None and view.comparing is None)
    assert view.selected().session_id == view.sessions[1].session_id


def test_the_sessions_list_reads_the_same_figures_as_the_requests_give_without_a_record_a_request(tmp_path):
    """The Sessions window's list reads its figures as arrays (SQLite reads the JSON): the same output rate
    while generating and TTFT p50 as the requests' records give, replies without figures left out."""
    from workbench.sessions.compare import compare_runs, run_figures
    from workbench.sessions.figures import generating_figures, generating_time_s
    from workbench.sessions.listing import read_listing
    from workbench.sessions.stored import open_read_only, requests

    path = tmp_path / "workbench.db"
    db = connect(path)
    migrate(db, MIGRATIONS)
    rng = np.random.default_rng(7)
    db.execute("INSERT INTO sessions VALUES ('s', 0.0, 900.0, '{}')")
    db.execute("INSERT INTO sessions VALUES ('empty', 1000.0, NULL, '{}')")
    for key in ("e1", "e2"):
        db.execute("INSERT INTO engine_runs (run_key, start_id, config, started_s, session_id) "
                   "VALUES (?, 1, '{\"model\":\"demo\"}', 1.0, 's')", (key,))
    db.execute("INSERT INTO conversations (conversation_id, title, position, created_s) VALUES ('c', 'Chat 1', 0, 1.0)")
    db.execute("INSERT INTO batch_runs VALUES ('batch1', '[]', '{}', 1.0, NULL)")

    def figures(end_s: float) -> str | None:
        kind = rng.integers(6)
        if kind == 0:
            return None  # an error: no figures
        data = {"prompt_tokens": 9, "output_tokens": int(rng.integers(1, 300)), "ttft_s": float(rng.uniform(0.01, 2)),
                "e2e_s": float(rng.uniform(0.1, 30)), "decode_tokens_per_s": float(rng.choice([0.0, rng.uniform(5, 90)])),
                "cached_prompt_tokens": int(rng.integers(0, 9))}
        if kind == 1:
            del data["e2e_s"]  # a server's reply may lack it
        if kind == 2:
            data["output_tokens"] = None
        return json.dumps(data)

    for position in range(200):  # chat replies, each after its question
        end_s = float(rng.uniform(0, 800))
        db.execute("INSERT INTO messages (message_id, conversation_id, position, role, text, status, error, request_id, "
                   "figures, updated_s, run_key) VALUES (?, 'c', ?, ?, 'x', 'done', '', '', ?, ?, 'e1')",
                   (f"m{position}", position, "assistant" if position % 2 else "user",
                    figures(end_s) if position % 2 else None, end_s))
    for row in range(2000):
        end_s = float(rng.uniform(0, 800))
        db.execute("INSERT INTO batch_rows VALUES ('batch1', ?, '{}', 2, 'length', 'o', '', ?, 'e2', ?)",
                   (row, figures(end_s), None if row % 50 == 0 else end_s))
    db.commit()
    db.close()

    listing = read_listing(path)
    line, empty = {line.summary.session_id: line for line in listing.lines}["s"], listing.lines[0]
    connection = open_read_only(path)
    found = requests(connection, ["e1", "e2"], with_text=False)
    connection.close()
    assert line.output_tokens_per_s == pytest.approx(generating_figures(found).output_tokens_per_s, rel=1e-12)
    assert line.ttft_ms_p50 == run_figures(found, {})["ttft_ms_p50"]
    assert empty.summary.session_id == "empty" and np.isnan(empty.output_tokens_per_s) and np.isnan(empty.ttft_ms_p50)
    compared = compare_runs(path, "e1", "e2").figures  # the comparison reads arrays too
    for side, key in (("a", "e1"), ("b", "e2")):
        expected = run_figures([r for r in found if r.run_key == key], {})
        for row in compared:
            value = getattr(row, side)
            assert value == pytest.approx(expected[row.name], rel=1e-12, nan_ok=True), (key, row.name)
            assert np.isnan(value) == (row.name.startswith(("kv_", "preemptions"))), (key, row.name)  # no series

    def union_s(spans):  # the time covered, span by span
        total, end = 0.0, float("-inf")
        for start, stop in sorted(spans):
            if stop > end:
                total, end = total + stop - max(start, end), stop
        return total

    for _ in range(20):
        starts = rng.uniform(0, 100, 50)
        stops = starts + rng.exponential(3, 50)
        assert generating_time_s(starts, stops) == pytest.approx(union_s(zip(starts, stops)), rel=1e-12)
    assert generating_time_s(np.array([0.0, 1.0, 5.0]), np.array([2.0, 1.5, 6.0])) == 3.0


def test_the_comparison_s_tables_stack_in_a_narrow_window_so_every_column_shows(tmp_path, qtbot):
    """Side by side, a window of 700 pixels kept the figures' B column and difference past the right edge:
    narrower than both tables fit, they stand one above the other."""
    from workbench.ui.sessions_view import SIDE_BY_SIDE_PX, SessionsView

    path = tmp_path / "workbench.db"
    runs_of_the_app(path, 2)  # two runs of the app, each with an engine run: two runs compared
    view = SessionsView(path)
    qtbot.addWidget(view)
    qtbot.waitUntil(lambda: view.reading is None and view.comparing is None)
    assert view.figure_table.rowCount() > 0
    for width, orientation in ((SIDE_BY_SIDE_PX + 200, Qt.Horizontal), (700, Qt.Vertical)):
        view.resize(width, 700)
        with qtbot.waitExposed(view):
            view.show()
        qtbot.waitUntil(lambda: view.compare_tables.orientation() == orientation)
        view.tabs.setCurrentIndex(2)
        qtbot.wait(50)  # laid out on the next turn of the event loop
        assert not view.figure_table.horizontalScrollBar().isVisible(), width


def test_the_sessions_window_makes_its_plots_after_it_is_made_and_open_finishes_them(tmp_path, qtbot):
    """Made at once, the seven plots held the window 150-230 ms as File > Sessions... made it: they are made a
    turn of the event loop each once it is made; a session opened before they all are finishes them first."""
    from workbench.ui.sessions_view import SessionsView

    path = tmp_path / "workbench.db"
    runs_of_the_app(path, 1, with_engine_run=False)
    view = SessionsView(path)
    qtbot.addWidget(view)
    assert not view.plots.is_built and view.plots.plots == {}
    with qtbot.waitSignal(view.plots.built, timeout=HANG_TIMEOUT_MS):
        pass
    assert list(view.plots.plots) == ["tokens", "requests", "kv", "prefix", "preemptions", "latency"]
    from workbench.ui.stats_plots import PLOTS, StatsPlotsView

    early = StatsPlotsView(0.0, made_at_once=False)  # what Open does when the plots are not all made yet
    qtbot.addWidget(early)
    built = []
    early.built.connect(lambda: built.append(len(early.all_plots)))
    early.make_the_rest()
    assert early.is_built and built == [len(PLOTS)] and early.grid is not None
    qtbot.wait(50)  # the turns of the event loop that would have made them make nothing more
    assert built == [len(PLOTS)] and len(early.all_plots) == len(PLOTS)
