"""The live plots and the memory panel, through the real window and the real vLLM CPU engine: the
plots' counters equal vLLM's own, the memory panel without NVML, and a plot exported as PNG and SVG."""
from __future__ import annotations

import struct
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest

from chat_driver import HANG_TIMEOUT_MS, type_and_send, wait_finished
from no_nvml import telemetry_without_nvml
from workbench.engine.stats import StatsTotals
from workbench.telemetry.memory_service import MemoryService
from workbench.ui.memory_panel import MemoryPanel
from workbench.ui.plot_export import export_plot

# vLLM's Prometheus counter or histogram -> the plots' total of the same figure
VLLM_COUNTERS = {
    "vllm:prompt_tokens": "prompt_tokens",
    "vllm:generation_tokens": "generation_tokens",
    "vllm:num_preemptions": "preemptions",
    "vllm:prefix_cache_queries": "prefix_queries",
    "vllm:prefix_cache_hits": "prefix_hits",
    "vllm:time_to_first_token_seconds": "num_ttft",
    "vllm:inter_token_latency_seconds": "num_itl",
}


def vllm_own_counters(worker) -> dict[str, int]:
    """vLLM's figures from its process-wide Prometheus registry (what ``LLMEngine.get_metrics()`` reads),
    in the process that runs vLLM's client: the engine-client process, or this one (the thread client)."""
    from workbench.bench.client_bench import vllm_metrics

    metrics = worker.call(vllm_metrics) if hasattr(worker, "call") else vllm_metrics()
    return {VLLM_COUNTERS[name]: int(value) for name, labels, value in metrics
            if name in VLLM_COUNTERS and labels.get("engine", "0") == "0"}


def plots_counters(totals: StatsTotals) -> dict[str, int]:
    return {name: getattr(totals, name) for name in VLLM_COUNTERS.values()}


@pytest.mark.slow
def test_plots_counters_equal_vllms_own(window, qtbot):
    """Two replies share the system prompt (prefix-cache hits); once the engine is idle, every total
    the plots were drawn from equals vLLM's own counter of the same figure."""
    window.chat.sampling.ignore_eos.setChecked(True)
    window.chat.sampling.max_tokens.setValue(48)
    _, first = type_and_send(window, qtbot, "What is a KV cache?")
    wait_finished(qtbot, first)
    window.chat.new_conversation()  # a new conversation takes the preset's sampling: set it again
    window.chat.sampling.ignore_eos.setChecked(True)
    window.chat.sampling.max_tokens.setValue(48)
    _, second = type_and_send(window, qtbot, "What is prefix caching?")
    wait_finished(qtbot, second)
    assert first.status == second.status == "done", (first.error, second.error)
    worker = window.engine.host

    def counters_agree():
        assert plots_counters(worker.latest_stats().totals) == vllm_own_counters(worker)
    qtbot.waitUntil(counters_agree, timeout=HANG_TIMEOUT_MS)
    totals = worker.latest_stats().totals
    assert totals.generation_tokens >= 96 and totals.prefix_hits > 0, totals
    # A line needs two points: the series gains a row a quarter second (idle ones too), and on a quiet machine both
    # replies can end within the engine's first one.
    qtbot.waitUntil(lambda: len(worker.latest_stats().series) >= 2, timeout=HANG_TIMEOUT_MS)
    version = worker.latest_stats().version  # each plot draws, in turn, the series as it is by then
    qtbot.waitUntil(lambda: window.plots.pause.shown_version >= version, timeout=HANG_TIMEOUT_MS)
    x, generated = window.plots.curves["generation_tokens_per_s"].getOriginalDataset()
    assert len(x) >= 2 and np.nanmax(generated) > 0, "the tokens/s plot drew no generation"
    assert np.nanmax(window.plots.curves["kv_usage_pct"].getOriginalDataset()[1]) > 0, "KV usage never rose"


@pytest.mark.slow
def test_memory_panel_shows_every_engine_process_and_the_kv_space(window, qtbot):
    """Every engine process's memory with vLLM's split for its worker, and the KV space of the pool.
    The CPU build has no NVML: the panel says so, shows host memory, and the plot follows it. Where
    NVML answers (a GPU machine), the panel shows each GPU and the engine's GPU memory, and the plot
    the GPU's total."""
    info = window.model.engine.info
    panel = window.memory

    def shows_engine():
        assert str(info.engine_pids[-1]) in memory_text(panel)
    qtbot.waitUntil(shows_engine, timeout=HANG_TIMEOUT_MS)
    text, rows = memory_text(panel), panel.table.texts()
    reading = window.memory_service.latest().latest
    on_gpu = reading.nvml_unavailable is None
    assert all(f"pid {pid}" in text for pid in info.engine_pids)
    # The engine's processes, and the engine-client process that runs vLLM's client loop where there is one.
    client = getattr(window.engine.host, "client_pid", None)
    assert {p.pid for p in reading.processes} == set(info.engine_pids) | ({client} if client else set())
    assert all(p.host_rss_bytes > 0 for p in reading.processes)
    if client:
        assert any(row[0] == f"pid {client} engine client" for row in rows)
        assert ("engine process", f"{'GPU' if on_gpu else 'host'} memory", "weights", "KV cache", "rest") in rows
    worker = info.workers[0]
    assert worker.kv_cache_bytes > 0 and worker.weights_bytes > 0
    assert rows[-1][0] == "KV space" and rows[-1][2] == f"{info.num_kv_blocks:,} blocks" and info.num_kv_blocks == 1024
    total = panel.total.getOriginalDataset()[1]
    if on_gpu:
        assert reading.gpus and all(f"GPU {gpu.index} {gpu.name}" in text for gpu in reading.gpus)
        assert "No GPU figures" not in text
        assert any((p.gpu_bytes or 0) > worker.kv_cache_bytes for p in reading.processes), "the worker's GPU memory"
        assert len(total) and total[-1] * panel.unit == pytest.approx(sum(g.total_bytes for g in reading.gpus), rel=0.01)
    else:
        assert reading.nvml_unavailable and "No GPU figures" in text and "host" in text
        assert not reading.gpus
        assert len(total) and total[-1] * panel.unit == pytest.approx(
            sum(p.host_rss_bytes for p in reading.processes), rel=0.2)


def test_memory_service_without_an_engine_or_nvml_never_raises(qtbot):
    """No NVIDIA driver here: a reading says why, and the panel shows it, with no engine at all."""
    service = MemoryService(telemetry_without_nvml())
    service.sample()
    panel = MemoryPanel(time_origin=0.0)
    qtbot.addWidget(panel)
    assert panel.show_memory(service.latest())
    assert "No GPU figures" in panel.text.text() and "No engine running" in panel.text.text()


def memory_text(panel: MemoryPanel) -> str:
    """The memory panel's note and every cell of its table, one line a row."""
    return "\n".join([panel.text.text(), *("\t".join(row) for row in panel.table.texts())])


def _num_points(curve) -> int:
    x = curve.getOriginalDataset()[0]
    return 0 if x is None else len(x)


@pytest.mark.slow
def test_a_plot_exports_as_png_and_svg(window, qtbot, tmp_path):
    _, reply = type_and_send(window, qtbot, "What is a block?")
    wait_finished(qtbot, reply)
    qtbot.waitUntil(lambda: _num_points(window.plots.curves["generation_tokens_per_s"]) >= 2, timeout=HANG_TIMEOUT_MS)
    plot = window.plots.plots["tokens"]
    png = export_plot(plot, tmp_path / "tokens.png", width_px=800)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width == 800 and height > 100 and len(data) > 5_000
    svg = export_plot(plot, tmp_path / "tokens.svg")
    root = ElementTree.parse(svg).getroot()
    assert root.tag.endswith("svg")
    paths = [e for e in root.iter() if e.tag.endswith("path") or e.tag.endswith("polyline")]
    assert len(paths) >= 2, "the exported SVG holds no curves"
    with pytest.raises(ValueError):
        export_plot(plot, tmp_path / "tokens.jpg")


def _marks_at(plot) -> list[tuple[float, str]]:
    """The vertical lines a plot shows, with their labels."""
    import pyqtgraph as pg

    return [(line.value(), line.label.format) for line in plot.items if isinstance(line, pg.InfiniteLine)]


def _points_of(plot) -> tuple[np.ndarray, np.ndarray]:
    """Every finite point the plot's curves hold, in time order, whichever curve holds it."""
    import pyqtgraph as pg

    xs, ys = [np.zeros(0)], [np.zeros(0)]
    for item in plot.items:
        if isinstance(item, pg.PlotDataItem) and item.getOriginalDataset()[0] is not None:
            x, y = item.getOriginalDataset()
            finite = np.isfinite(y)
            xs.append(np.asarray(x)[finite])
            ys.append(np.asarray(y)[finite])
    x, y = np.concatenate(xs), np.concatenate(ys)
    order = np.argsort(x, kind="stable")
    return x[order], y[order]


def _points_drawn(plot) -> int:
    return len(_points_of(plot)[0])


@pytest.mark.slow
def test_a_restart_right_after_a_reply_keeps_its_last_figures(window, qtbot):
    """Restart pressed the moment a reply ends: the window says so at once and stops following the engine, and
    the plots still show that reply (drawn from the engine's figures up to its stop), with its totals."""
    import re

    plots = window.plots
    window.chat.sampling.ignore_eos.setChecked(True)
    window.chat.sampling.max_tokens.setValue(48)
    _, reply = type_and_send(window, qtbot, "What is a KV cache?")
    wait_finished(qtbot, reply)
    kept = plots.kept["generation_tokens_per_s"]
    at_the_mark = []  # what the plots show as the engine's end is marked (the window's receivers ran first)
    record = lambda status: at_the_mark.append((status.state, plots.totals.text(), np.nanmax(kept.y, initial=0)))
    window.model.engine_changed.connect(record)
    try:
        start_id = window.restart_engine()
        qtbot.waitUntil(lambda: window.model.engine.settled(start_id), timeout=180_000)
    finally:
        window.model.engine_changed.disconnect(record)
    assert window.model.engine.ready, window.model.engine.message
    state, totals, peak = at_the_mark[0]
    assert state == "starting" and peak > 0, "the reply's generation is not on the tokens/s plot"
    generated = re.search(r"^restarted — since start: ([\d,]+) generated", totals)
    assert generated and int(generated[1].replace(",", "")) >= 48, totals
    assert np.nanmax(kept.y) > 0, "kept after the next engine's start"


@pytest.mark.slow
def test_plots_keep_their_points_across_a_death_marked_where_it_died(window, qtbot):
    """vLLM's processes SIGKILLed mid-reply (as `pkill -9 -f VLLM` does): every plot keeps the points it
    drew and shows a line labelled "engine died: SIGKILL" where the engine died, the memory plot too;
    after a restart the next engine's points follow on the same time axis, the old ones still there."""
    import os
    import signal

    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QPushButton

    from workbench.engine.process_guard import child_pids

    plots = window.plots
    window.chat.sampling.ignore_eos.setChecked(True)
    window.chat.sampling.max_tokens.setValue(1800)
    _, reply = type_and_send(window, qtbot, "What is a KV cache?")
    generated = plots.curves["generation_tokens_per_s"]
    qtbot.waitUntil(lambda: len(reply.text) > 100 and _num_points(generated) >= 8
                    and np.nanmax(generated.getOriginalDataset()[1]) > 0, timeout=60_000)
    before = {name: _points_drawn(plot) for name, plot in plots.plots.items()}
    for pid in child_pids(vllm_only=True):
        os.kill(pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: window.model.engine.state == "died", timeout=60_000)
    assert before["tokens"] >= 8
    for name, plot in plots.plots.items():
        assert _points_drawn(plot) >= before[name], f"the {name} plot lost the points it drew"
    marks = _marks_at(plots.plots["tokens"])
    assert marks and marks[-1][1] == "engine died: SIGKILL", marks
    died_at = marks[-1][0]
    for name, plot in [*plots.plots.items(), ("memory", window.memory.plot)]:
        assert (died_at, "engine died: SIGKILL") in _marks_at(plot), f"the {name} plot shows no mark"
    drawn_x, drawn_y = _points_of(plots.plots["tokens"])
    assert np.nanmax(drawn_y) > 0 and drawn_x[-1] <= died_at, "the tokens/s plot lost its generation or drew after"
    assert plots.totals.text().startswith("engine died: SIGKILL")

    died_start = window.model.engine.start_id
    qtbot.mouseClick(window.findChild(QPushButton, "restartButton"), Qt.LeftButton)
    qtbot.waitUntil(lambda: window.model.engine.settled(died_start + 1), timeout=180_000)
    assert window.model.engine.ready, window.model.engine.message
    window.chat.new_conversation()
    window.chat.sampling.ignore_eos.setChecked(True)
    window.chat.sampling.max_tokens.setValue(64)
    _, again = type_and_send(window, qtbot, "What is prefix caching?")
    wait_finished(qtbot, again)
    qtbot.waitUntil(lambda: _num_points(generated) >= 2 and np.nanmax(generated.getOriginalDataset()[1]) > 0,
                    timeout=10_000)
    x_after = generated.getOriginalDataset()[0]
    assert x_after[0] > died_at, "the next engine's points start after the death, on the same axis"
    x_all, _ = _points_of(plots.plots["tokens"])
    assert set(drawn_x) <= set(x_all), "the dead engine's points were lost"
    assert (died_at, "engine died: SIGKILL") in _marks_at(plots.plots["tokens"])
    window.chat.sampling.ignore_eos.setChecked(False)
