"""The in-app Benchmark view: offers to stop the live engine, runs the benchmark as its own process,
shows the table, and saves the files."""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTableWidget

pytestmark = pytest.mark.slow  # the real engine, and the benchmark's own


def test_benchmark_view_runs_shows_and_saves(window, qtbot, tmp_path):
    asked = []
    view = window.open_benchmark(ask_to_stop=lambda: asked.append(True) or True)
    for name, value in (("requests", 4), ("prompt-len", 32), ("output-len", 16), ("repeats", 1), ("hf-time-box", 30)):
        view.fields[name].setValue(value)
    view.run()
    assert asked, "the view should offer to stop the live engine"
    qtbot.waitUntil(lambda: window.model.engine.state == "stopped", timeout=60_000)
    qtbot.waitUntil(lambda: view.run_button.isEnabled(), timeout=900_000)
    table = view.findChild(QTableWidget, "benchmarkTable")
    assert table.rowCount() >= 4, view.message.text()
    paths = [table.item(r, 0).text() for r in range(table.rowCount())]
    assert "(a) plain vLLM" in paths and "(b) workbench loop" in paths
    assert any(p.startswith("ratio b/a throughput") for p in paths)
    assert view.progress.value() == 100
    saved = view.save_to(tmp_path / "saved")
    assert {p.name for p in saved} == {"benchmark.md", "benchmark.csv", "benchmark.svg", "benchmark.png"}
    assert "| (a) plain vLLM" in (tmp_path / "saved" / "benchmark.md").read_text()
    run_folder = view.results_dir
    assert (run_folder / "benchmark.csv").exists()
    view.close()
    assert not run_folder.exists(), "the run's folder in the temp folder goes with the view; the saved files stay"
    assert (tmp_path / "saved" / "benchmark.csv").exists()


def test_cancel_stops_the_run_and_its_engine_processes(window, qtbot):
    from workbench.engine.process_guard import child_pids

    before = child_pids(vllm_only=True)  # the live engine's, which keeps running (not stopped here)
    view = window.open_benchmark(ask_to_stop=lambda: False)
    view.run()
    qtbot.waitUntil(lambda: bool(child_pids(vllm_only=True) - before), timeout=180_000)  # its engine is up
    assert view.cancel_button.isEnabled()
    qtbot.mouseClick(view.cancel_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: not view.running, timeout=15_000)
    qtbot.waitUntil(lambda: not (child_pids(vllm_only=True) - before), timeout=30_000)
    assert "Cancelled" in view.message.text() and view.run_button.isEnabled()
    assert not view.save_button.isEnabled()  # no earlier results to save
    assert window.model.engine.state == "ready"
    run_folder = view.out_dir
    view.close()
    assert not run_folder.exists(), "the cancelled run's folder goes with the view"
