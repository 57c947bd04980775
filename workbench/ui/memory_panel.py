"""The memory panel: each GPU's total, used and free memory, each engine process's share split into
weights, KV cache and the rest (vLLM's own figures), and all of it over time as a stacked plot.

Where there is no NVML (the CPU build) it says so and shows the engine processes' host memory and
the KV space instead. It draws what the telemetry service (``workbench.telemetry.memory_service``)
published; it reads nothing itself.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QSizePolicy, QVBoxLayout
from superqt import QElidingLabel

from workbench.telemetry.memory_service import MemoryReading, MemoryState
from workbench.ui.live_plot import (
    EngineMarks, FollowView, LivePlotsWidget, live_curve, seconds_since, text_size, time_plot,
)
from workbench.ui.memory_table import GIB, MIB, READING, MemoryTableView, describe_memory
from workbench.ui.plot_export import add_export_actions
from workbench.ui.plot_grid import MIN_VIEW_HEIGHT_PX, fit_legend, hold_min_height

__all__ = ["LAYERS", "MemoryPanel", "describe_memory"]

TEXT_INTERVAL_S = 1.0
NOTE_LINES = 2  # the note's room, from the start: a longer note is elided (whole in its tooltip)
# stacked from the bottom: column, legend, colour
LAYERS = (("weights", "weights", "#5c6bc0"), ("kv_cache", "KV cache", "#26a69a"),
          ("rest", "rest of the engine", "#ffa726"), ("other", "other processes", "#78909c"))


class MemoryPanel(LivePlotsWidget):
    """A note and a table for the latest reading, and the stacked plot of the series; :meth:`show_memory`
    draws. ``text`` is the note line (a stored panel says what it shows there; the table stays hidden)."""

    def __init__(self, time_origin: float):
        super().__init__("memoryPanel", time_origin)
        self._text_at = float("-inf")
        self.text = QElidingLabel(READING, objectName="memoryText")
        self.text.setWordWrap(True)
        self.text.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        self.text.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
        self.text.setMinimumWidth(1)
        # Room for two lines from the start: a note that grows must not lay the whole window out again
        # (a third of a second on the CPU build, every pane repainted).
        self.text.setFixedHeight(self.text.fontMetrics().lineSpacing() * NOTE_LINES + 2)
        self.table = MemoryTableView()
        self.plot = time_plot(pg.PlotItem(), "Memory", "GiB")
        self.plot.getViewBox().setMinimumHeight(MIN_VIEW_HEIGHT_PX)
        self.graphics.addItem(self.plot)
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
        bar.addWidget(self.paused, 0, Qt.AlignTop)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.table)
        layout.addWidget(self.graphics, 1)
        hold_min_height(self.graphics)

    def resizeEvent(self, event) -> None:
        """The legend in as many columns as the new width holds (laid out again only when that changes)."""
        super().resizeEvent(event)
        fit_legend(self.plot, event.size().width())

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
        """At most once a second, and only the cells whose text changed: a label or cell whose text
        changes asks for a repaint, and a note that changes shape would lay the window out."""
        if reading.at - self._text_at < TEXT_INTERVAL_S and self.text.text() != READING:
            return
        self._text_at = reading.at
        table = describe_memory(reading)
        if table.note != self.text.text():
            self.text.setText(table.note)
            self.text.setToolTip(table.note)
        self.table.show_rows(table.rows)

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
        self.plot.setLabel("left", name, **{"font-size": text_size()})
        self.plot.setTitle("GPU memory" if on_gpu else "Engine processes' host memory (no NVML)", size=text_size())
        label = self.plot.legend.getLabel(self.total) if self.plot.legend is not None else None
        if label is not None:
            label.setText("GPU total" if on_gpu else "host memory (RSS)")
