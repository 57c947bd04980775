"""The KV-cache heatmap: one cell per block of vLLM's block pool, coloured by state.

One ``ImageItem`` created once and updated with ``setImage(uint8, autoLevels=False)`` through a
fixed colour table. What the picture holds (binning, highlights, colours, hover and summary text) is
computed in ``workbench.engine.heatmap_image``, without Qt; this module only draws it.
"""
from __future__ import annotations

import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QToolTip, QVBoxLayout, QWidget

from workbench.engine.heatmap_image import (
    STATE_COLOURS, cell_blocks, colour_table, describe_blocks, grid_shape, heatmap_image,
    summary_text,
)
from workbench.engine.kv_snapshot import BLOCK_STATE_NAMES, KVSnapshot


class _CellsImage(pg.ImageItem):
    """The pool's image: each cell holds an index into the colour table, drawn through a 32-bit
    QImage made here. pyqtgraph would make an 8-bit indexed QImage from the table, which Qt converts
    on every paint: drawing the 32-bit one scaled to the view costs a sixth of the time."""

    def __init__(self, colours: np.ndarray):
        super().__init__()
        red, green, blue = (colours[:, i].astype(np.uint32) for i in range(3))
        self._argb = 0xFF000000 | (red << 16) | (green << 8) | blue
        self._pixels = None  # the QImage's memory

    def render(self):
        self._unrenderable = True
        if self.image is None or self.image.size == 0:
            return
        self._pixels = np.ascontiguousarray(self._argb[self.image])
        rows, columns = self._pixels.shape
        self.qimage = QImage(self._pixels.data, columns, rows, columns * 4, QImage.Format.Format_RGB32)
        self._renderRequired = self._unrenderable = False


class _PoolPlot(pg.PlotWidget):
    """The plot, keeping the GUI thread's time spent painting it (the benchmarks read it)."""

    resized = None  # the view's hook: the grid follows the plot's shape (resizes come from __init__ too)

    def __init__(self):
        super().__init__()
        self.paint_ms_total = 0.0
        self.num_paints = 0

    def resizeEvent(self, event):
        super().resizeEvent(event)
        if self.resized is not None:
            self.resized()

    def paintEvent(self, event):
        started = time.perf_counter()
        super().paintEvent(event)
        self.paint_ms_total += (time.perf_counter() - started) * 1e3
        self.num_paints += 1


class KVHeatmapView(QWidget):
    """Shows the latest snapshot it is given; knows nothing of vLLM."""

    def __init__(self, owner_name=lambda request_id: request_id):
        super().__init__()
        self.setObjectName("kvHeatmap")
        self.owner_name = owner_name
        self.snapshot: KVSnapshot | None = None
        self._shown_version = 0
        self._since = 0  # the version the shown frame's highlights are counted from
        self.num_frames_drawn = 0  # since the view was made; the benchmarks read it
        self.last_update_ms = 0.0  # the GUI thread's time to turn the latest snapshot into the image
        self.grid = (1, 1, 1)
        self.summary = QLabel("No engine yet.", objectName="kvSummary")
        self.summary.setWordWrap(True)
        self.plot = _PoolPlot()
        self.plot.setAspectLocked(True)
        self.plot.invertY(True)
        self.plot.hideAxis("left")
        self.plot.hideAxis("bottom")
        self.plot.setMenuEnabled(False)
        self.image = _CellsImage(colour_table())
        self.image.hoverEvent = self._on_image_hover
        self.plot.addItem(self.image)
        self.plot.resized = self._on_plot_resized
        fit = QPushButton("Fit", objectName="kvFitButton")
        fit.setToolTip("Show the whole pool (scroll to zoom, drag to pan)")
        fit.clicked.connect(lambda: self.plot.autoRange())
        legend_row = QWidget()
        legend_row.setMinimumWidth(1)  # the heatmap may be narrower than its legend: the legend is cut, not the window held wide
        legend = QHBoxLayout(legend_row)
        legend.setContentsMargins(0, 0, 0, 0)
        for name, colour in zip(BLOCK_STATE_NAMES, STATE_COLOURS):
            swatch = QLabel(f"■ {name}")
            swatch.setStyleSheet(f"color: rgb{colour};" if name != "free" else "color: #9aa0a6;")
            legend.addWidget(swatch)
        legend.addWidget(QLabel("(bright: changed)"))
        legend.addStretch(1)
        legend.addWidget(fit)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.summary)
        layout.addWidget(legend_row)
        layout.addWidget(self.plot, 1)

    def show_snapshot(self, snapshot: KVSnapshot) -> None:
        if self.snapshot is not None and snapshot.version == self.snapshot.version:
            return  # nothing new: keep the GUI thread free
        started = time.perf_counter()
        new_pool = self.snapshot is None or snapshot.num_blocks != self.snapshot.num_blocks
        since = self._shown_version if not new_pool else snapshot.version
        self._draw(snapshot, since)
        self.snapshot, self._shown_version, self._since = snapshot, snapshot.version, since
        self.num_frames_drawn += 1
        self.summary.setText(summary_text(snapshot))
        self.last_update_ms = (time.perf_counter() - started) * 1e3

    def _draw(self, snapshot: KVSnapshot, since_version: int) -> None:
        """The image in a grid shaped like the plot; a new grid is fitted to the view."""
        aspect = self._plot_aspect()
        grid = grid_shape(snapshot.num_blocks, aspect=aspect)
        self.image.setImage(heatmap_image(snapshot, since_version, aspect=aspect), autoLevels=False)
        if grid != self.grid:
            self.grid = grid
            self.plot.autoRange()

    def _plot_aspect(self) -> float:
        size = self.plot.size()
        return size.width() / size.height() if size.height() > 0 and size.width() > 0 else 1.0

    def _on_plot_resized(self) -> None:
        """The grid follows the plot's shape: where it changes, the frame is drawn again, highlights and all
        (a resize that keeps the grid, most of a drag, draws nothing)."""
        if self.snapshot is not None and grid_shape(self.snapshot.num_blocks, aspect=self._plot_aspect()) != self.grid:
            self._draw(self.snapshot, self._since)

    def clear(self, message: str) -> None:
        self.snapshot = None
        self.image.clear()
        self.summary.setText(message)

    # -------------------------------------------------------------- hover
    def describe_cell(self, row: int, column: int) -> str:
        if self.snapshot is None:
            return ""
        blocks = cell_blocks(self.grid, self.snapshot.num_blocks, row, column)
        return describe_blocks(self.snapshot, blocks, self.owner_name)

    def _on_image_hover(self, event) -> None:
        if event.isExit() or self.snapshot is None:
            QToolTip.hideText()
            return
        pos = event.pos()
        text = self.describe_cell(int(pos.y()), int(pos.x()))
        if text:
            QToolTip.showText(event.screenPos().toPoint(), text, self.plot)

