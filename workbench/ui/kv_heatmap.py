"""The KV-cache heatmap: one cell per block of vLLM's block pool, coloured by state.

One ``ImageItem`` created once and updated with ``setImage(uint8, autoLevels=False)`` through a
fixed colour table. What the picture holds (binning, highlights, colours, hover and summary text) is
computed in ``workbench.engine.heatmap_image``, and what following a conversation shows in
``workbench.engine.heatmap_follow``, without Qt; this module only draws it.

The cells are square and fill the view: the grid takes the view's shape, and what is left (less
than one cell) is the window's own colour. The view's range is the whole pool ("fit"), the
followed conversation's blocks ("follow", the Follow chat button) or wherever the user zoomed and
panned to ("user"); a zoom or pan by the mouse leaves follow mode, Fit shows the whole pool again.
"""
from __future__ import annotations

import math
import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, QSize
from PySide6.QtGui import QColor, QImage, QPalette
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QToolTip, QVBoxLayout, QWidget

from workbench.engine.heatmap_follow import MIN_FOLLOW_CELL_PX, FollowedRequests, follow_range
from workbench.engine.heatmap_image import (
    NO_BLOCK, NO_BLOCK_TEXT, block_cells, cell_blocks, colour_table, describe_blocks, grid_shape,
    heatmap_image, summary_details, summary_text,
)
from workbench.engine.image_blocks import IMAGE_MARK_COLOUR, ImageBlocks, hatch_lines
from workbench.engine.kv_snapshot import KVSnapshot
from workbench.ui.heatmap_labels import ElidedLines, legend_label, legend_text

OUTLINE_COLOUR = QColor(0, 0, 0)  # the followed blocks' outline: dark on every state's colour


class _CellsImage(pg.ImageItem):
    """The pool's image: each cell holds an index into the colour table, drawn through a 32-bit
    QImage made here. pyqtgraph would make an 8-bit indexed QImage from the table, which Qt converts
    on every paint: drawing the 32-bit one scaled to the view costs a sixth of the time."""

    def __init__(self, colours: np.ndarray):
        super().__init__()
        red, green, blue = (colours[:, i].astype(np.uint32) for i in range(3))
        self._argb = 0xFF000000 | (red << 16) | (green << 8) | blue
        self._pixels = None  # the QImage's memory

    def set_colour(self, index: int, colour: QColor) -> None:
        """Draws image value ``index`` in ``colour`` from the next frame on."""
        self._argb[index] = 0xFF000000 | colour.rgb()
        self._renderRequired = True
        self.update()

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

    def __init__(self):
        super().__init__()
        self.paint_ms_total = 0.0
        self.num_paints = 0
        self.setAspectLocked(True)  # square cells, also while the user zooms
        self.invertY(True)
        self.hideAxis("left")
        self.hideAxis("bottom")
        self.hideButtons()
        self.setMenuEnabled(False)
        self.getPlotItem().setContentsMargins(0, 0, 0, 0)

    def paintEvent(self, event):
        started = time.perf_counter()
        super().paintEvent(event)
        self.paint_ms_total += (time.perf_counter() - started) * 1e3
        self.num_paints += 1


class KVHeatmapView(QWidget):
    """Shows the latest snapshot it is given; knows nothing of vLLM."""

    def __init__(self, owner_name=lambda request_id: request_id, image_names=lambda request_id: ()):
        """``owner_name``: a request's owner as the hover names it; ``image_names``: its images' names, in
        the order sent (``ImageSpan.index`` points into them)."""
        super().__init__()
        self.setObjectName("kvHeatmap")
        self.owner_name = owner_name
        self.image_names = image_names
        self.snapshot: KVSnapshot | None = None
        self._shown_version = 0
        self._since = 0  # the version the shown frame's highlights are counted from
        self.num_frames_drawn = 0  # since the view was made; the benchmarks read it
        self.last_update_ms = 0.0  # the GUI thread's time to turn the latest snapshot into the image
        self.grid = (1, 1, 1)
        self.followed = FollowedRequests()
        self.image_blocks = ImageBlocks()
        self._mode = "fit"  # what the view's range shows: "fit", "follow" or "user"
        self.summary = ElidedLines(2, "No engine yet.", objectName="kvSummary")
        self.follow_status = ElidedLines(1, "", objectName="kvFollowStatus")
        self.plot = _PoolPlot()
        self.image = _CellsImage(colour_table())
        self.image.hoverEvent = self._on_image_hover
        self.outline = pg.ScatterPlotItem(pxMode=False, symbol="s", size=1.0, brush=None,
                                          pen=pg.mkPen(OUTLINE_COLOUR, width=2, cosmetic=True))
        hatch_pen = pg.mkPen(QColor(*IMAGE_MARK_COLOUR), width=1.5, cosmetic=True)
        self.image_marks = pg.PlotCurveItem(connect="pairs", pen=hatch_pen)  # the image tokens' blocks, hatched
        self.plot.addItem(self.image)
        self.plot.addItem(self.image_marks, ignoreBounds=True)
        self.plot.addItem(self.outline)
        self.plot.getViewBox().sigResized.connect(self._on_view_resized)
        self.plot.getViewBox().sigRangeChangedManually.connect(self._on_range_changed_manually)
        self.follow_button = QPushButton("Follow chat", objectName="kvFollowButton", checkable=True)
        self.follow_button.setToolTip("Zoom to the selected conversation's blocks and keep them in view")
        self.follow_button.toggled.connect(self._on_follow_button_toggled)
        self.fit_button = QPushButton("Fit", objectName="kvFitButton")
        self.fit_button.setToolTip("Show the whole pool (scroll to zoom, drag to pan)")
        self.fit_button.clicked.connect(self._on_fit_button_clicked)
        self.legend = legend_label()
        self._use_window_colours()
        self._lay_out()

    def _lay_out(self) -> None:
        buttons = QHBoxLayout()
        buttons.setContentsMargins(0, 0, 0, 0)
        buttons.addWidget(self.follow_status, 1)
        buttons.addWidget(self.follow_button)
        buttons.addWidget(self.fit_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.summary)
        layout.addLayout(buttons)
        layout.addWidget(self.legend)
        layout.addWidget(self.plot, 1)

    def _use_window_colours(self) -> None:
        """The plot's background and the cells with no block in the window's colour, not black."""
        window = self.palette().color(QPalette.Window)
        self.plot.setBackground(window)
        self.image.set_colour(NO_BLOCK, window)
        self.legend.setText(legend_text(window, self.palette().color(QPalette.Mid)))

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange:
            self._use_window_colours()

    def sizeHint(self) -> QSize:
        return QSize(600, 380)

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        return QSize(min(hint.width(), 300), min(hint.height(), 300))

    # ----------------------------------------------------------- frames
    def show_snapshot(self, snapshot: KVSnapshot) -> None:
        if self.snapshot is not None and snapshot.version == self.snapshot.version:
            return  # nothing new: keep the GUI thread free
        started = time.perf_counter()
        new_pool = self.snapshot is None or snapshot.num_blocks != self.snapshot.num_blocks
        since = self._shown_version if not new_pool else snapshot.version
        self.snapshot = snapshot
        if new_pool:
            self.image_blocks.clear()
        marks_changed, grid = self.image_blocks.update(snapshot), self.grid
        self._draw(snapshot, since)
        if marks_changed and grid == self.grid:  # a new grid has drawn them already
            self._draw_image_marks()
        self._shown_version, self._since = snapshot.version, since
        self.num_frames_drawn += 1
        self.summary.setText(summary_text(snapshot))
        self.summary.setToolTip(summary_details(snapshot))
        self._follow(self.followed.update(snapshot))
        self.last_update_ms = (time.perf_counter() - started) * 1e3

    def _draw(self, snapshot: KVSnapshot, since_version: int) -> None:
        """The image in a grid shaped like the view; a new grid is fitted to the view."""
        aspect = self._view_aspect()
        grid = grid_shape(snapshot.num_blocks, aspect=aspect)
        self.image.setImage(heatmap_image(snapshot, since_version, aspect=aspect), autoLevels=False)
        if grid != self.grid:
            self.grid = grid
            self._show_range()
            self._draw_outline()
            self._draw_image_marks()

    def _view_px(self) -> tuple[float, float]:
        size = self.plot.getViewBox().size()
        return (size.width(), size.height()) if size.width() > 0 and size.height() > 0 else (1.0, 1.0)

    def _view_aspect(self) -> float:
        width, height = self._view_px()
        return width / height

    def _on_view_resized(self) -> None:
        """The grid follows the view's shape: where it changes, the frame is drawn again, highlights
        and all; the range is fitted again (a user's zoom is kept)."""
        if self.snapshot is not None and grid_shape(self.snapshot.num_blocks, aspect=self._view_aspect()) != self.grid:
            self._draw(self.snapshot, self._since)
        else:
            self._show_range()

    def clear(self, message: str) -> None:
        self.snapshot = None
        self.image.clear()
        self.outline.clear()
        self.image_blocks.clear()
        self.image_marks.setData([], [])
        self.summary.setText(message)
        self.summary.setToolTip("")

    # ------------------------------------------------------------ range
    def _show_range(self) -> None:
        """Sets the view's range for the mode: the whole grid, or the followed blocks."""
        if self._mode == "user":
            return
        _, rows, columns = self.grid
        rect = (0.0, 0.0, float(columns), float(rows))
        if self._mode == "follow" and len(self.followed.block_ids):
            rect = follow_range(self.grid, self.followed.block_ids, self.followed.newest_block(), self._view_px())
        self.plot.getViewBox().setRange(QRectF(*rect), padding=0)

    def _on_fit_button_clicked(self) -> None:
        self._mode = "fit"
        self.follow_button.setChecked(False)
        self._show_range()

    def _on_range_changed_manually(self, *_) -> None:
        self._mode = "user"
        self.follow_button.setChecked(False)

    # ----------------------------------------------------------- follow
    def set_followed(self, label: str, request_ids: tuple[str, ...]) -> None:
        """Follows the conversation ``label`` (its name, for the follow line), whose requests are
        ``request_ids`` (keys of ``KVSnapshot.tables``, oldest first). The window calls it whenever the
        selected conversation or its requests change; the view zooms to them while Follow chat is on."""
        if label == self.followed.label and tuple(request_ids) == self.followed.request_ids:
            return
        self.followed.set(label, request_ids)
        if self.snapshot is not None:
            self.followed.update(self.snapshot)
        self.follow_button.setToolTip(f"Zoom to {label}'s blocks and keep them in view" if label else
                                      "Zoom to the selected conversation's blocks and keep them in view")
        self._follow(True, rezoom=True)

    def _on_follow_button_toggled(self, checked: bool) -> None:
        if checked:
            self._mode = "follow"
            self._follow(True, rezoom=True)
            return
        if self._mode == "follow":
            self._mode = "fit"
            self._show_range()
        self.outline.clear()
        self.follow_status.setText("")
        self.follow_status.setToolTip("")

    def _follow(self, blocks_changed: bool, rezoom: bool = False) -> None:
        """While following: the follow line, and where the followed blocks changed their outline and,
        where the newest one is out of view (or ``rezoom``), the range."""
        if self._mode != "follow":
            return
        text = self.followed.describe(self.snapshot, self.image_blocks.block_ids)
        if text != self.follow_status.text():
            self.follow_status.setText(text)
            self.follow_status.setToolTip(text)  # the whole line, where a narrow view cuts it
        if not blocks_changed:
            return
        self._draw_outline()
        if rezoom or not self._newest_in_view():
            self._show_range()

    def _draw_outline(self) -> None:
        if self._mode != "follow" or not len(self.followed.block_ids):
            self.outline.clear()
            return
        rows, columns = block_cells(self.grid, self.followed.block_ids)
        self.outline.setData(x=columns + 0.5, y=rows + 0.5)

    def _draw_image_marks(self) -> None:
        """The hatch over the cells holding image tokens: drawn when those blocks or the grid change."""
        x, y = hatch_lines(self.grid, self.image_blocks.block_ids)
        self.image_marks.setData(x, y, connect="pairs")

    def _newest_in_view(self) -> bool:
        """Whether the newest followed block's cell is in view, drawn at a legible size."""
        newest = self.followed.newest_block()
        if newest is None:
            return True
        per_cell, _, columns = self.grid
        row, column = divmod(newest // per_cell, columns)
        view = self.plot.getViewBox().viewRect()
        cell_px = self._view_px()[0] / view.width() if view.width() > 0 else 0.0
        return cell_px >= MIN_FOLLOW_CELL_PX * 0.99 and view.contains(QRectF(column, row, 1, 1))

    # ------------------------------------------------------------ hover
    def describe_cell(self, row: int, column: int) -> str:
        """Hover text of the grid's cell (row, column): its block or blocks, "no block" past the
        pool's end, "" outside the grid."""
        _, rows, columns = self.grid
        if self.snapshot is None or not (0 <= row < rows and 0 <= column < columns):
            return ""
        blocks = cell_blocks(self.grid, self.snapshot.num_blocks, row, column)
        if not len(blocks):
            return NO_BLOCK_TEXT
        text = describe_blocks(self.snapshot, blocks, self.owner_name)
        images = self.image_blocks.describe(self.snapshot, blocks, self.owner_name, self.image_names)
        return f"{text}\n{images}" if images else text

    def _on_image_hover(self, event) -> None:
        if event.isExit() or self.snapshot is None:
            QToolTip.hideText()
            return
        pos = event.pos()
        text = self.describe_cell(math.floor(pos.y()), math.floor(pos.x()))
        if text:
            QToolTip.showText(event.screenPos().toPoint(), text, self.plot)
