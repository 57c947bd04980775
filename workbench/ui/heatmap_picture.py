"""The heatmap for the report: the block grid of a snapshot with its legend under it, drawn from the
snapshot's own image data (``workbench.engine.heatmap_image``), not a grab of the widget and its buttons."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QRect, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QPainter, QPen

from workbench.engine.heatmap_image import STATE_COLOURS, colour_table, grid_shape, heatmap_image
from workbench.engine.image_blocks import IMAGE_MARK_COLOUR, ImageBlocks, hatch_lines
from workbench.engine.kv_snapshot import BLOCK_STATE_FREE, BLOCK_STATE_NAMES, KVSnapshot
from workbench.export.report import PICTURE_SCALE

GRID_WIDTH_PX = 900  # the grid's width in the report, CSS pixels (cells stay square and whole)
GRID_ASPECT = 2.0  # columns over rows
MARGIN_PX = 8
MIN_OUTLINED_CELL_PX = 8  # cells at least this large (in the PNG) are drawn with a line between them
TEXT_COLOUR = QColor("#1d1d1f")  # the report's text colour, on its white page


def heatmap_caption(snapshot: KVSnapshot) -> str:
    """What the picture shows, in words: the pool, what a cell stands for, blocks by state."""
    per_cell, rows, columns = grid_shape(snapshot.num_blocks, aspect=GRID_ASPECT)
    counts = dict(zip(BLOCK_STATE_NAMES, snapshot.counts))
    cell = "one cell per block" if per_cell == 1 else f"one cell per {per_cell} blocks (its most-used state)"
    return (f"vLLM's block pool at export time: {snapshot.num_blocks:,} blocks of {snapshot.block_size} tokens, "
            f"{rows} × {columns} cells, {cell}, block 0 top left. {snapshot.num_in_use:,} in use "
            f"({counts['shared']:,} shared by several requests), {counts['cached']:,} cached, {counts['free']:,} "
            f"free; vLLM KV usage {snapshot.kv_usage:.1%}.{_images_caption(snapshot)}")


def _image_blocks(snapshot: KVSnapshot) -> np.ndarray:
    """The blocks holding image tokens of the requests running at export time."""
    if not snapshot.image_spans:
        return np.zeros(0, np.int64)
    marks = ImageBlocks()
    marks.update(snapshot)
    return marks.block_ids


def _images_caption(snapshot: KVSnapshot) -> str:
    count = len(_image_blocks(snapshot))
    return f" Hatched: the {count:,} blocks holding images' tokens." if count else ""


def heatmap_png(snapshot: KVSnapshot, font: QFont) -> bytes:
    """The grid (no highlights: a report has no previous frame; the cells past the pool's end in the
    page's white) and a legend of the states with their counts in ``font`` (the window's), at
    :data:`PICTURE_SCALE` pixels per CSS pixel."""
    cells = heatmap_image(snapshot, snapshot.version, aspect=GRID_ASPECT)
    rows, columns = cells.shape
    cell_px = max(1, GRID_WIDTH_PX * PICTURE_SCALE // columns)
    rgb = np.ascontiguousarray(colour_table()[cells])
    grid = QImage(rgb.data, columns, rows, columns * 3, QImage.Format.Format_RGB888)
    grid = grid.scaled(columns * cell_px, rows * cell_px, Qt.IgnoreAspectRatio, Qt.FastTransformation)
    font = QFont(font)
    font.setPointSizeF(font.pointSizeF() * PICTURE_SCALE)
    metrics = QFontMetrics(font)
    margin = MARGIN_PX * PICTURE_SCALE
    legend_height = metrics.height() + margin
    picture = QImage(grid.width() + 2 * margin, grid.height() + legend_height + 2 * margin, QImage.Format.Format_RGB32)
    picture.fill(QColor("white"))
    painter = QPainter(picture)
    try:
        painter.drawImage(margin, margin, grid)
        if cell_px >= MIN_OUTLINED_CELL_PX:
            _draw_cell_lines(painter, margin, rows, columns, cell_px)
        image_blocks = _image_blocks(snapshot)
        _draw_hatch(painter, (margin, margin), grid_shape(snapshot.num_blocks, aspect=GRID_ASPECT), image_blocks,
                    cell_px)
        painter.setFont(font)
        _draw_legend(painter, metrics, snapshot, margin, grid.height() + 2 * margin, len(image_blocks))
    finally:
        painter.end()
    return _png(picture)


def _draw_cell_lines(painter: QPainter, margin: int, rows: int, columns: int, cell_px: int) -> None:
    """A white line between neighbouring cells, so that each block of a run of one state can be told apart."""
    painter.setPen(QColor("white"))
    for column in range(1, columns):
        painter.drawLine(margin + column * cell_px, margin, margin + column * cell_px, margin + rows * cell_px - 1)
    for row in range(1, rows):
        painter.drawLine(margin, margin + row * cell_px, margin + columns * cell_px - 1, margin + row * cell_px)


def _draw_hatch(painter: QPainter, origin: tuple[int, int], grid: tuple[int, int, int], block_ids: np.ndarray,
                cell_px: int) -> None:
    """The image tokens' hatch over their cells, as the window draws it (``origin``: the grid's top left)."""
    if not len(block_ids):
        return
    painter.setPen(QPen(QColor(*IMAGE_MARK_COLOUR), PICTURE_SCALE))  # one CSS pixel wide
    x, y = hatch_lines(grid, block_ids)
    left, top = origin
    for x0, y0, x1, y1 in zip(x[0::2], y[0::2], x[1::2], y[1::2]):
        painter.drawLine(round(left + x0 * cell_px), round(top + y0 * cell_px),
                         round(left + x1 * cell_px), round(top + y1 * cell_px))


def _draw_legend(painter: QPainter, metrics: QFontMetrics, snapshot: KVSnapshot, x: int, y: int,
                 num_image_blocks: int = 0) -> None:
    """A swatch and "state (count)" for each block state, left to right; then the image tokens' hatch
    where blocks hold them."""
    swatch = metrics.ascent()
    entries = list(zip(BLOCK_STATE_NAMES, STATE_COLOURS, snapshot.counts))
    if num_image_blocks:
        entries.append(("image tokens", STATE_COLOURS[BLOCK_STATE_FREE], num_image_blocks))
    for name, colour, count in entries:
        painter.fillRect(QRect(x, y + (metrics.height() - swatch) // 2, swatch, swatch), QColor(*colour))
        if name == "image tokens":
            _draw_hatch(painter, (x, y + (metrics.height() - swatch) // 2), (1, 1, 1), np.zeros(1, np.int64), swatch)
        painter.setPen(QColor("#888888"))
        painter.drawRect(QRect(x, y + (metrics.height() - swatch) // 2, swatch, swatch))
        x += swatch + metrics.averageCharWidth()
        text = f"{name} ({int(count):,})"
        painter.setPen(TEXT_COLOUR)
        painter.drawText(x, y + metrics.ascent(), text)
        x += metrics.horizontalAdvance(text) + 3 * metrics.averageCharWidth()


def _png(image: QImage) -> bytes:
    buffer = QBuffer()
    buffer.open(QIODevice.WriteOnly)
    image.save(buffer, "PNG")
    return bytes(QByteArray(buffer.data()))
