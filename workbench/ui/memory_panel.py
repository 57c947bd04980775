"""The memory panel: each GPU's total, used and free memory, each engine process's share split into
weights, KV cache and the rest (vLLM's own figures), and all of it over time as a stacked plot.

Where there is no NVML (the CPU build) it says so and shows the engine processes' host memory and
the KV space instead. It draws what the telemetry service (``workbench.telemetry.memory_service``)
published; it reads nothing itself.
"""
from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout

from workbench.telemetry.memory_service import MemoryReading, MemoryState
from workbench.ui.live_plot import EngineMarks, FollowView, LivePlotsWidget, live_curve, seconds_since, time_plot
from workbench.ui.plot_export import add_export_actions

TEXT_INTERVAL_S = 1.0
TEXT_LINES = 6
GIB = 1 << 30
MIB = 1 << 20
# stacked from the bottom: column, legend, colour
LAYERS = (("weights", "weights", "#5c6bc0"), ("kv_cache", "KV cache", "#26a69a"),
          ("rest", "rest of the engine", "#ffa726"), ("other", "other processes", "#78909c"))


def _size(num_bytes: float | None) -> str:
    if num_bytes is None:
        return "n/a"
    return f"{num_bytes / GIB:.2f} GiB" if abs(num_bytes) >= GIB else f"{num_bytes / MIB:.1f} MiB"


def describe_memory(reading: MemoryReading | None) -> str:
    """The panel's text (HTML): GPUs and engine processes, or why there are no GPU figures."""
    if reading is None:
        return "Reading memory…"
    lines = []
    if reading.nvml_unavailable is not None:
        lines.append(f"<b>No GPU figures</b>: {html.escape(reading.nvml_unavailable)}. "
                     "Shown instead: the engine processes' host memory and the KV space.")
    for gpu in reading.gpus:
        lines.append(f"<b>GPU {gpu.index}</b> {html.escape(gpu.name)}: {_size(gpu.used_bytes)} used of "
                     f"{_size(gpu.total_bytes)}, {_size(gpu.total_bytes - gpu.used_bytes)} free")
    for process in reading.processes:
        memory = (f"GPU {_size(process.gpu_bytes)}" if reading.nvml_unavailable is None
                  else f"host {_size(process.host_rss_bytes)}")
        split = ""
        if process.worker is not None:
            worker = process.worker
            split = f" — weights {_size(worker.weights_bytes)}, KV cache {_size(worker.kv_cache_bytes)}"
            if process.rest_bytes is not None:
                split += f", rest {_size(process.rest_bytes)}"
        lines.append(f"pid {process.pid} {html.escape(process.name)}: {memory}{split}")
    if not reading.processes:
        lines.append("No engine running.")
    elif reading.kv_cache_bytes:
        lines.append(f"KV space: {_size(reading.kv_cache_bytes)} ({reading.num_blocks:,} blocks)")
    return "<br>".join(lines)


class MemoryPanel(LivePlotsWidget):
    """Text for the latest reading and the stacked plot of the series; :meth:`show_memory` draws."""

    def __init__(self, time_origin: float):
        super().__init__("memoryPanel", time_origin)
        self._text_at = float("-inf")
        self.text = QLabel("Reading memory…", objectName="memoryText")
        self.text.setWordWrap(True)
        self.text.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        # Room for six lines from the start: text that grows when an engine starts must not lay the
        # whole window out again (a third of a second on the CPU build, every pane repainted).
        self.text.setMinimumHeight(self.text.fontMetrics().lineSpacing() * TEXT_LINES)
        self.plot = time_plot(self.graphics.addPlot(), "Memory", "GiB")
        add_export_actions(self, self.plot, "memory")
        self.bounds = [live_curve(self.plot, colour, legend, 1.0) for _, legend, colour in LAYERS]
        zero = self.plot.plot(pen=None)
        self.fills = []
        for below, above, (_, _, colour) in zip([zero, *self.bounds], self.bounds, LAYERS):
            fill = pg.FillBetweenItem(below, above, brush=pg.mkBrush(colour + "90"))
            self.plot.addItem(fill)
            self.fills.append(fill)
        self._zero = zero
        self.total = live_curve(self.plot, "#eeeeee", "GPU total", 1.0)
        self.view = FollowView([self.plot])
        self.marks = EngineMarks([self.plot])  # where an engine died, stopped or restarted
        self.unit = GIB
        self._labelled: tuple[int, bool] | None = None  # (unit, on a GPU) the labels say
        bar = QHBoxLayout()
        bar.addWidget(self.text, 1)
        bar.addWidget(self.paused)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.graphics, 1)

    def show_memory(self, state: MemoryState) -> bool:
        """Draws ``state`` if it holds a reading not shown yet; True if it drew."""
        if state.latest is None or not self.pause.wants(state.series.version):
            return False
        self._update_text(state.latest)
        self.draw_series(state.series, state.latest.nvml_unavailable is None)
        self.view.follow(self._x_last, [self._peak])
        self.num_draws += 1
        return True

    def draw_series(self, series, on_gpu: bool) -> None:
        """The stacked plot of ``series`` (:data:`~workbench.telemetry.memory_service.MEMORY_COLUMNS`),
        live or stored; ``on_gpu``: NVML's figures (False: the engine processes' host memory)."""
        x = seconds_since(series, self.time_origin)
        peak = np.nanmax(series["gpu_total"] if on_gpu else series["process"], initial=0.0)
        self._set_unit(GIB if peak >= 2 * GIB else MIB, on_gpu)
        stacked = np.zeros(len(x))
        for curve, (column, _, _) in zip(self.bounds, LAYERS):
            if column == "other" and not on_gpu:
                curve.setData(x, stacked)  # no other processes' figure without NVML: an empty layer
                continue
            stacked = stacked + np.nan_to_num(series[column]) / self.unit
            curve.setData(x, stacked)
        self._zero.setData(x, np.zeros(len(x)))
        total = series["gpu_total"] / self.unit if on_gpu else series["process"] / self.unit
        self.total.setData(x, total)
        self._x_last = float(x[-1]) if len(x) else 0.0
        self._peak = float(np.nanmax(np.concatenate([total, stacked]), initial=0.0))

    def _update_text(self, reading: MemoryReading) -> None:
        """At most once a second: a label whose text changes asks the window to lay itself out."""
        if reading.at - self._text_at < TEXT_INTERVAL_S and self.text.text() != "Reading memory…":
            return
        self._text_at = reading.at
        text = describe_memory(reading)
        if text != self.text.text():
            self.text.setText(text)

    def _set_unit(self, unit: int, on_gpu: bool) -> None:
        """Labels the plot for ``unit`` and the source; only when either changed: each new label text
        lays the plot out again and repaints it whole."""
        if (unit, on_gpu) == self._labelled:
            return
        self._labelled = (unit, on_gpu)
        if unit != self.unit:
            self.view.resume()  # the height is in the old unit
        self.unit = unit
        name = "GiB" if unit == GIB else "MiB"
        self.plot.setLabel("left", name)
        self.plot.setTitle("GPU memory" if on_gpu else "Engine processes' host memory (no NVML)", size="9pt")
        label = self.plot.legend.getLabel(self.total) if self.plot.legend is not None else None
        if label is not None:
            label.setText("GPU total" if on_gpu else "host memory (RSS)")
