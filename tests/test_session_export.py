"""A session exported and two engine runs compared, with the real window and the real vLLM CPU engine:
the files checked field by field against the database and what the engine reported, report.html
opened in a real headless browser, the comparison's figures checked against the stored requests."""
from __future__ import annotations

import csv
import json
import os
import shutil
import sqlite3
import subprocess
import zipfile
from dataclasses import replace
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtGui import QImage

from browser import rendered_dom, screenshot
from chat_driver import ENGINE_START_TIMEOUT_MS, HANG_TIMEOUT_MS, type_and_send, wait_finished
from test_batch_engine import open_and_wait, run_and_wait
from workbench.engine.metrics import percentile
from workbench.storage.series import MEMORY, STATS, load_series
from workbench.ui.session_export_action import start_session_export, write_conversation
from workbench.ui.stats_plots import OPTIONAL_PLOTS, PLOTS

pytestmark = pytest.mark.slow  # the real engine, shared with the other slow tests
DOCS = Path(__file__).resolve().parents[1] / "docs"
QUESTIONS = ("What is a KV cache?", "What is prefix caching?", "Why do two chats share blocks?",
             "What does the scheduler do?", "What is a block table?", "Why is the first token slow?")
# Long enough that the plots' points (one every 0.25 s) see requests running on the CPU engine.
PROMPTS = tuple(f"{q} (take {n})" for n in range(4) for q in QUESTIONS)


def prompt_file(folder: Path) -> Path:
    path = folder / "prompts.jsonl"
    path.write_text("".join(json.dumps({"prompt": p, "custom_id": f"q{i}"}) + "\n" for i, p in enumerate(PROMPTS)))
    return path


def run_batch(window, qtbot, path: Path, max_in_flight: int = 16):
    pane = window.batch
    open_and_wait(pane, qtbot, path, "jsonl")
    return run_and_wait(pane, qtbot, max_tokens=64, max_in_flight=max_in_flight)


def stored_points(window, qtbot, run_key: str, at_least: int = 4) -> dict:
    """Waits until the plots' points of ``run_key`` are on disk (the window hands them over at 5 Hz)."""
    def enough() -> bool:
        window.storage.flush(HANG_TIMEOUT_MS / 1000)
        return len(load_series(sqlite3.connect(window.storage.path), run_key).get("t", ())) >= at_least
    qtbot.waitUntil(enough, timeout=HANG_TIMEOUT_MS)
    return load_series(sqlite3.connect(window.storage.path), run_key)


def db_rows(path: Path, sql: str, args=()) -> list:
    connection = sqlite3.connect(path)
    try:
        return connection.execute(sql, args).fetchall()
    finally:
        connection.close()


def export(window, qtbot, folder: Path) -> tuple[Path, float, float]:
    """The live session exported as the menu does it; with the times of the newest plot and memory points
    that the window had handed to storage when the export was asked for (the export must hold them)."""
    outcome = []
    start_session_export(window, window.storage.path, window.storage.session_id, folder, window.heatmap.snapshot,
                         lambda f, error: outcome.append(error), window.storage)
    asked = window.storage.series.newest_s, window.storage.memory_series.newest_s
    qtbot.waitUntil(lambda: bool(outcome), timeout=HANG_TIMEOUT_MS)
    assert outcome == [None]
    return (folder, *asked)


def exported_is_stored_until_asked(exported: list[float], stored, asked_s: float) -> None:
    """The exported points are the stored ones, in order, each of them up to the newest the window had
    handed to storage when the export was asked for. The live session records on meanwhile (4 points a
    second), so what is stored by now may go on beyond the export, never differ within it."""
    assert exported and max(exported) >= asked_s - 1e-3, (max(exported, default=None), asked_s)
    assert exported == pytest.approx(list(stored[:len(exported)]), abs=1e-3)


def pending_points_newer_than_the_disk(window, qtbot, run_key: str, monkeypatch) -> None:
    """Keeps the plots' and the memory panel's next points in the window's recorders (their chunk is not
    handed to the writer until something asks for a commit), then waits until they hold points that are
    newer than anything on disk: what an export asked for now must wait for."""
    storage = window.storage
    storage.flush(HANG_TIMEOUT_MS / 1000)
    for recorder in (storage.series, storage.memory_series):
        monkeypatch.setattr(recorder, "chunk_s", 3600.0)
    on_disk = {kind: load_series(sqlite3.connect(storage.path), run_key, kind).get("t", [0.0])[-1]
               for kind in (STATS, MEMORY)}
    qtbot.waitUntil(lambda: (storage.series.newest_s or 0) > on_disk[STATS] + 0.5
                    and (storage.memory_series.newest_s or 0) > on_disk[MEMORY] + 0.5, timeout=HANG_TIMEOUT_MS)


def newest_exported_s(folder: Path, run_key: str) -> tuple[float, float]:
    """The newest plot point and the newest memory point of ``run_key`` in an export's timeseries.csv."""
    with open(folder / "timeseries.csv", newline="", encoding="utf-8-sig") as handle:
        rows = [p for p in csv.DictReader(handle) if p["run_key"] == run_key]
    return (max(float(p["t"]) for p in rows if p["kv_usage_pct"] != ""),
            max(float(p["t"]) for p in rows if p["kv_usage_pct"] == ""))


def series_story(window, stored: dict, started_s: float) -> str:
    """What a failure needs told: the stored points' span and peaks, and the window's live series now."""
    live = window.engine.host.latest_stats()
    peaks = {name: float(np.nanmax(stored[name])) for name in ("kv_usage_pct", "generation_tokens_per_s",
                                                                "num_running")}
    live_peaks = {name: float(np.nanmax(live.series[name])) for name in peaks} if len(live.series) else {}
    return (f"{len(stored['t'])} stored points from {stored['t'][0] - started_s:.2f} s to "
            f"{stored['t'][-1] - started_s:.2f} s after the run's start, peaks {peaks}; the live series: "
            f"{len(live.series)} points of start {live.start_id} (the engine's: {window.model.engine.start_id}), "
            f"peaks {live_peaks}, totals {live.totals}")


def answer_dialogs(monkeypatch, folder: Path) -> list:
    """The export's folder chosen as a person would, in the folder dialog; the message boxes that tell
    how the export went recorded (title, text) instead of waiting for a click."""
    from PySide6.QtWidgets import QFileDialog, QMessageBox

    told: list = []
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *args: str(folder)))
    for name in ("information", "warning"):
        monkeypatch.setattr(QMessageBox, name, staticmethod(lambda parent, title, text, *a, n=name: told.append((n, text))))
    return told


def nvidia_smi_gpu_names() -> list[str]:
    """The GPUs as nvidia-smi names them; none where there is no NVIDIA driver (the CPU machines)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    names = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True,
                           timeout=HANG_TIMEOUT_MS / 1000)
    return [line.strip() for line in names.stdout.splitlines() if line.strip()] if names.returncode == 0 else []


def results_run_id(window) -> str:
    return window.batch.run.run_id


def assert_heatmap_is_the_block_grid(image: QImage, snapshot) -> None:
    """heatmap.png: the snapshot's cells in the state colours (block 0, the null block, top left), a
    white margin and a legend under them; no widget (its buttons and summary line were a grab's)."""
    from workbench.engine.heatmap_image import STATE_COLOURS, grid_shape
    from workbench.ui.heatmap_picture import GRID_ASPECT, MARGIN_PX
    from workbench.export.report import PICTURE_SCALE

    _, rows, columns = grid_shape(snapshot.num_blocks, aspect=GRID_ASPECT)
    margin = MARGIN_PX * PICTURE_SCALE
    cell = (image.width() - 2 * margin) // columns
    colour = lambda x, y: image.pixelColor(x, y).getRgb()[:3]
    assert colour(1, 1) == (255, 255, 255)
    for block in (0, 1, snapshot.num_blocks - 1):
        row, column = divmod(block, columns)
        assert colour(margin + column * cell + cell // 2, margin + row * cell + cell // 2) == \
            STATE_COLOURS[snapshot.states[block]], block
    assert image.height() > margin + rows * cell + margin  # the legend's row under the grid


def test_the_session_export_matches_the_database_and_the_engine(window, qtbot, tmp_path):
    file_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&File")
    assert [a.text() for a in file_menu.actions()] == ["Export session…", "Export conversation…", "Sessions…", "",
                                                       "Quit"]
    conversation, reply = type_and_send(window, qtbot, "What is a KV cache?")
    wait_finished(qtbot, reply)
    assert reply.status == "done" and reply.figures is not None
    results = run_batch(window, qtbot, prompt_file(tmp_path)).results
    db = window.storage.path
    session_id = window.storage.session_id
    (run_key, config_json, info_json, started_s), = db_rows(
        db, "SELECT run_key, config, info, started_s FROM engine_runs WHERE session_id = ? ORDER BY started_s DESC "
            "LIMIT 1", (session_id,))
    series = stored_points(window, qtbot, run_key)
    folder, asked_s, asked_memory_s = export(window, qtbot, tmp_path / "export")

    document = json.loads((folder / "session.json").read_text())
    assert document["session_id"] == session_id
    info = window.model.engine.info  # what the engine reported
    assert document["vllm_version"] == info.vllm_version and document["torch_version"] == metadata.version("torch")
    assert document["app_version"] == "0.1.0"
    gpu_names = nvidia_smi_gpu_names()
    assert [gpu["name"] for gpu in document["gpus"]] == gpu_names
    assert (document["driver_version"] is None) == (not gpu_names)
    stored_runs = db_rows(db, "SELECT run_key, started_s, stopped_s FROM engine_runs WHERE session_id = ? "
                              "ORDER BY started_s", (session_id,))
    assert [(r["run_key"], r["started_s"], r["stopped_s"]) for r in document["engine_runs"]] == stored_runs
    exported_run = next(r for r in document["engine_runs"] if r["run_key"] == run_key)
    assert exported_run["engine_reported"]["num_kv_blocks"] == info.num_kv_blocks == 1024
    assert exported_run["engine_reported"]["vllm_version"] == info.vllm_version
    # vLLM's own resolved values, read from the running engine's vllm_config, kept beside what was asked
    resolved = exported_run["engine_reported"]["resolved"]
    assert resolved == info.resolved and resolved["num_gpu_blocks"] == 1024
    assert resolved["max_num_seqs"] == window.model.config.max_num_seqs
    assert resolved["block_size"] % 32 == 0 and resolved["max_model_len"] == window.model.config.max_model_len
    assert resolved["scheduling_policy"] == "priority" and resolved["max_num_batched_tokens"] > 0
    assert exported_run["config"]["max_num_seqs"] == window.model.config.max_num_seqs == json.loads(config_json)["max_num_seqs"]
    assert exported_run["config"]["scheduling_policy"] == "priority" and exported_run["started_s"] == started_s

    for name in ("requests.csv", "timeseries.csv"):  # Excel reads UTF-8 only with its byte-order mark
        assert (folder / name).read_bytes()[:3] == b"\xef\xbb\xbf"
    with open(folder / "requests.csv", newline="", encoding="utf-8-sig") as handle:
        rows = list(csv.DictReader(handle))
    ours = [r for r in rows if r["run_key"] == run_key]
    (num_stored,), = db_rows(db, "SELECT (SELECT count(*) FROM messages WHERE run_key = ?) + "
                                 "(SELECT count(*) FROM batch_rows WHERE run_key = ?)", (run_key, run_key))
    assert len(ours) == num_stored >= len(PROMPTS) + 1
    chat = next(r for r in ours if r["item"] == reply.message_id)
    figures = reply.figures  # what vLLM reported for the reply
    assert (int(chat["prompt_tokens"]), int(chat["output_tokens"]), int(chat["cached_prompt_tokens"])) == (
        figures.prompt_tokens, figures.output_tokens, figures.cached_prompt_tokens)
    assert float(chat["ttft_s"]) == figures.ttft_s and float(chat["itl_s"]) == pytest.approx(figures.itl_s)
    assert chat["prompt"] == "What is a KV cache?" and chat["output"] == reply.text and chat["kind"] == "chat"
    batch = {r["request_id"]: r for r in ours if r["kind"] == "batch"}
    for row in range(results.num_rows):
        exported = batch[f"q{row}"]
        for name in ("prompt_tokens", "output_tokens", "cached_prompt_tokens"):
            assert int(exported[name]) == results.value(name, row), name
        for name in ("queue_s", "ttft_s", "itl_s", "e2e_s"):
            assert float(exported[name]) == pytest.approx(results.value(name, row), rel=1e-12), name
        assert exported["output"] == results.texts[row] and exported["status"] == "done"

    with open(folder / "timeseries.csv", newline="", encoding="utf-8-sig") as handle:
        series_rows = [p for p in csv.DictReader(handle) if p["run_key"] == run_key]
    points = [p for p in series_rows if p["kv_usage_pct"] != ""]  # the plots'; the memory panel's are rows of their own
    memory_points = [p for p in series_rows if p["kv_usage_pct"] == ""]
    window.storage.flush(HANG_TIMEOUT_MS / 1000)
    stored = load_series(sqlite3.connect(db), run_key)
    stored_memory = load_series(sqlite3.connect(db), run_key, MEMORY)
    exported_is_stored_until_asked([float(p["t"]) for p in memory_points], stored_memory["t"], asked_memory_s)
    assert [float(p["memory_process"]) for p in memory_points] == pytest.approx(
        list(stored_memory["process"][:len(memory_points)]))
    exported_is_stored_until_asked([float(p["t"]) for p in points], stored["t"], asked_s)
    assert len(points) >= len(series["t"])  # at least what was on disk before
    exported_kv = [float(p["kv_usage_pct"]) for p in points]
    assert exported_kv == pytest.approx(list(stored["kv_usage_pct"][:len(points)]))
    assert max(exported_kv) > 0, series_story(window, stored, started_s)
    assert sum(float(p["generation_tokens_per_s"]) for p in points) > 0

    names = {path.name for path in folder.iterdir()}
    # every plot the window drew (the multimodal cache's only where the session looked images up: a
    # vision engine that an earlier test of the shared window ran), and the memory panel's, from its series
    drawn_optional = [n for n in OPTIONAL_PLOTS if n in window.plots.plots]
    plots = [*(n for n in PLOTS if n not in OPTIONAL_PLOTS), *drawn_optional, "memory"]
    assert names & {f"plot-{n}.png" for n in OPTIONAL_PLOTS} == {f"plot-{n}.png" for n in drawn_optional}, \
        "a plot the window did not draw exported"
    assert {f"plot-{n}.{s}" for n in plots for s in ("png", "svg")} | {"heatmap.png", "report.html"} <= names
    assert all(QImage(str(folder / f"plot-{n}.png")).width() >= 900 for n in plots)
    assert_heatmap_is_the_block_grid(QImage(str(folder / "heatmap.png")), window.heatmap.snapshot)
    assert (folder / "plot-tokens.svg").read_text().lstrip().startswith(("<?xml", "<svg"))
    files = {path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file()}  # images/ too
    with zipfile.ZipFile(folder.with_name("export.zip")) as archive:
        assert {n.split("/", 1)[1] for n in archive.namelist()} == files

    page = folder / "report.html"
    text = page.read_text()
    assert "http://" not in text and "https://" not in text  # self-contained
    dom = rendered_dom(page)
    assert dom.count("class=\"plot\"") == len(plots) and dom.count("src=\"data:image/png;base64,") == len(plots) + 1
    table = dom[dom.index("<table id=\"requests\""):]
    table = table[:table.index("</table>")]
    assert table.count("<tr>") == len(rows) + 1  # the header and every request
    # each request named by its prompt and where it came from, not by a hex id
    assert "<td class=\"prompt\" title=\"What is a KV cache?\">What is a KV cache?</td>" in table
    assert f"{results_run_id(window)}, line 1 (q0)" in table and reply.message_id not in table
    assert f"chat “{conversation.title}”" in table
    assert "Output tokens/s while generating" in dom and "Time generating" in dom
    assert "max_num_seqs" in dom and "table-note" not in dom  # under 1,000 requests: no note
    shot = screenshot(page, tmp_path / "report.png")
    image = QImage(str(shot))
    colours = {image.pixel(x, y) for x in range(0, 1400, 10) for y in range(0, 2200, 10)}
    assert image.width() == 1400 and len(colours) > 20  # the plots' curves and text, not a blank page
    if os.environ.get("WORKBENCH_SCREENSHOTS"):
        from PIL import Image

        with Image.open(screenshot(page, tmp_path / "report-doc.png", (1400, 3000))) as full:
            full.convert("RGB").resize((980, 2100)).quantize(colors=96).save(DOCS / "session-report.png", optimize=True)

    as_json = json.loads(write_conversation(conversation, tmp_path / "chat.json").read_text())
    assert as_json["messages"][-1]["text"] == reply.text and as_json["messages"][-1]["figures"]["ttft_s"] == figures.ttft_s
    markdown = write_conversation(conversation, tmp_path / "chat.md").read_text()
    assert "## User\n\nWhat is a KV cache?" in markdown and reply.text in markdown


def test_the_live_session_exported_from_the_sessions_window_holds_its_last_seconds(window, qtbot, tmp_path,
                                                                                   monkeypatch):
    """File > Sessions… opened, then a reply, then the session exported from that window: the points the
    window handed to storage since the window opened, not committed yet, are in the export."""
    from workbench.ui.file_menu import open_sessions

    view = open_sessions(window)
    qtbot.waitUntil(lambda: view.reading is None and view.comparing is None)  # read off the GUI thread
    try:
        _, reply = type_and_send(window, qtbot, "What is a block table?")
        wait_finished(qtbot, reply)
        run_key = window.storage.recorder.run_key
        pending_points_newer_than_the_disk(window, qtbot, run_key, monkeypatch)
        told = answer_dialogs(monkeypatch, tmp_path)
        view.session_table.selectRow(next(i for i, s in enumerate(view.sessions)
                                          if s.session_id == window.storage.session_id))
        view.export_selected()
        asked = window.storage.series.newest_s, window.storage.memory_series.newest_s
        qtbot.waitUntil(lambda: bool(told), timeout=HANG_TIMEOUT_MS)
        assert told[0][0] == "information", told
        folder, = tmp_path.glob("workbench-session-*[0-9]")
        newest = newest_exported_s(folder, run_key)
        assert newest[0] >= asked[0] - 1e-3 and newest[1] >= asked[1] - 1e-3, (newest, asked)
        view.close()
        assert open_sessions(window) is view and view.isVisible(), "one Sessions window, read again when asked for"
        qtbot.waitUntil(lambda: view.reading is None and view.comparing is None)
    finally:
        view.close()


def test_the_menus_export_waits_for_the_storage_commit_off_the_gui_thread(window, qtbot, tmp_path, monkeypatch):
    """File > Export session… while the storage thread cannot commit (another connection holds the write
    lock): the menu's action returns while the commit it asked for is still pending (the window answers;
    before, it waited for that commit on the GUI thread), and once the lock goes the export holds the
    points recorded up to the moment it was asked for."""
    storage = window.storage
    _, reply = type_and_send(window, qtbot, "What does the scheduler do?")
    wait_finished(qtbot, reply)
    run_key = storage.recorder.run_key
    pending_points_newer_than_the_disk(window, qtbot, run_key, monkeypatch)
    told = answer_dialogs(monkeypatch, tmp_path)
    export_action = next(a for a in window.menuBar().actions() if a.text() == "&File").menu().actions()[0]
    blocker = sqlite3.connect(storage.path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # the writer's next commit waits for this lock
    try:
        export_action.trigger()
        asked = storage.series.newest_s, storage.memory_series.newest_s
        job = window._session_export
        assert storage.problem is None, storage.problem  # the GUI thread did not wait for the commit
        assert job.committed is not None and not job.committed.is_done
    finally:
        blocker.rollback()
        blocker.close()
    qtbot.waitUntil(lambda: bool(told), timeout=HANG_TIMEOUT_MS)
    assert told[0][0] == "information", told
    folder, = tmp_path.glob("workbench-session-*[0-9]")
    newest = newest_exported_s(folder, run_key)
    assert newest[0] >= asked[0] - 1e-3 and newest[1] >= asked[1] - 1e-3, (newest, asked)


def run_figures_from_db(db: Path, run_key: str) -> dict:
    """The comparison's figures computed here from the stored rows, independently of workbench.sessions."""
    figures = [json.loads(f) for (f,) in db_rows(db, "SELECT figures FROM batch_rows WHERE run_key = ? AND "
                                                    "figures IS NOT NULL UNION ALL SELECT figures FROM messages "
                                                    "WHERE run_key = ? AND figures IS NOT NULL", (run_key, run_key))]
    ends = [e for (e,) in db_rows(db, "SELECT finished_s FROM batch_rows WHERE run_key = ? AND figures IS NOT NULL "
                                      "UNION ALL SELECT updated_s FROM messages WHERE run_key = ? AND figures "
                                      "IS NOT NULL", (run_key, run_key))]
    starts = [end - f["e2e_s"] for end, f in zip(ends, figures)]
    output = sum(f["output_tokens"] for f in figures)
    series = load_series(sqlite3.connect(db), run_key)
    return {
        "num_requests": len(figures), "output_tokens": output,
        "output_tokens_per_s": output / (max(ends) - min(starts)),
        "ttft_ms_p50": percentile([f["ttft_s"] * 1e3 for f in figures], 50),
        "ttft_ms_p99": percentile([f["ttft_s"] * 1e3 for f in figures], 99),
        "itl_ms_p50": percentile([1e3 / f["decode_tokens_per_s"] for f in figures if f["decode_tokens_per_s"]], 50),
        "prefix_hit_pct": 100 * sum(f["cached_prompt_tokens"] for f in figures) / sum(f["prompt_tokens"] for f in figures),
        "preemptions": float(np.nansum(series["preemptions"])),
        "kv_usage_pct_peak": float(np.nanmax(series["kv_usage_pct"])),
    }


def test_two_engine_runs_compared_side_by_side(window, qtbot, tmp_path):
    from workbench.ui.sessions_view import SessionsView

    path = prompt_file(tmp_path)
    run_batch(window, qtbot, path)
    first_key = window.storage.recorder.run_key
    stored_points(window, qtbot, first_key)
    start_id = window.start_engine(replace(window.model.config, max_num_seqs=2))  # the one restart
    qtbot.waitUntil(lambda: window.model.engine.settled(start_id), timeout=ENGINE_START_TIMEOUT_MS)
    assert window.model.engine.ready, window.model.engine.message
    run_batch(window, qtbot, path, max_in_flight=2)
    second_key = window.storage.recorder.run_key
    assert second_key != first_key
    stored_points(window, qtbot, second_key)

    view = SessionsView(window.storage.path, window.storage.session_id)
    qtbot.addWidget(view)
    qtbot.waitUntil(lambda: view.reading is None and view.comparing is None)  # read off the GUI thread
    keys = [run.run_key for _, _, run in view.runs]
    view.choose_runs(keys.index(first_key), keys.index(second_key))
    assert view.compare_note.text() == "Reading both runs' requests…"
    qtbot.waitUntil(lambda: view.comparing is None)
    compared = {row.name: row for row in view.compared}
    db = window.storage.path
    for side, key in (("a", first_key), ("b", second_key)):
        expected = run_figures_from_db(db, key)
        for name, value in expected.items():
            assert getattr(compared[name], side) == pytest.approx(value, rel=1e-9), (side, name)
    # B ran this batch alone; A also answered what earlier tests asked of the shared engine
    assert compared["num_requests"].b == len(PROMPTS) <= compared["num_requests"].a
    row = compared["output_tokens_per_s"]
    assert row.difference == pytest.approx(row.b - row.a) and row.better in ("a", "b")
    assert view.figure_table.item(2, 3).text().startswith(("+", "−"))
    changed = [line for line in view.config_lines if line.changed]
    assert [(line.key, line.a, line.b) for line in changed] == [("max_num_seqs", 64, 2)]
    assert view.config_table.item(0, 0).text() == "max_num_seqs"
    assert view.compare_note.text().startswith("1 engine argument differs ")
    unset = next(index for index, line in enumerate(view.config_lines) if line.key == "block_size")
    assert view.config_lines[unset].a is None  # the app left it to vLLM
    assert [view.config_table.item(unset, column).text() for column in (1, 2)] == ["vLLM default"] * 2
    view.tabs.setCurrentIndex([view.tabs.tabText(i) for i in range(view.tabs.count())].index("Compare"))
    view.resize(1100, 700)
    view.show()
    table = view.config_table  # B in sight beside A, a long path and all
    qtbot.waitUntil(lambda: table.columnViewportPosition(2) + table.columnWidth(2) <= table.viewport().width())
    model_row = next(index for index, line in enumerate(view.config_lines) if line.key == "model")
    assert table.item(model_row, 2).toolTip() == str(view.config_lines[model_row].b)
    if os.environ.get("WORKBENCH_SCREENSHOTS"):
        from workbench.bench.gui.screenshot import save_small

        assert save_small(view, str(DOCS / "session-compare.png"), 150_000) < 150_000
    view.session_table.selectRow(0)
    view.open_selected()
    assert view.plots.curves["kv_usage_pct"].getData()[0] is not None
    assert not view.delete_button.isEnabled()  # this run of the app: not deleted from here
