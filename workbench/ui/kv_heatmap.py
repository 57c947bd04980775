"""The KV-cache heatmap: one cell per block of vLLM's block pool, coloured by state.

One ``ImageItem`` created once and updated with ``setImage(uint8, autoLevels=False)`` through a
fixed colour table. Pools larger than the view's cell budget are binned: a binned cell shows the
most-used state of its blocks (the state codes are ordered so that this is their maximum).
Blocks that changed since the previous frame are drawn in a brighter shade of their state.
"""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QToolTip, QVBoxLayout, QWidget

from workbench.engine.kv_snapshot import BLOCK_STATE_NAMES, NUM_BLOCK_STATES, KVSnapshot

STATE_COLOURS = [  # null, free, cached, in use, shared
    (40, 40, 40), (225, 228, 232), (96, 165, 250), (245, 158, 11), (220, 38, 38),
]
CHANGED_COLOURS = [  # the same states, highlighted: changed since the last frame
    (90, 90, 90), (255, 255, 255), (30, 64, 255), (255, 214, 0), (255, 0, 128),
]
MAX_CELLS = 256 * 256


def colour_table() -> np.ndarray:
    return np.array(STATE_COLOURS + CHANGED_COLOURS, dtype=np.ubyte)


def grid_shape(num_blocks: int, max_cells: int = MAX_CELLS) -> tuple[int, int, int]:
    """(blocks per cell, rows, columns) for a pool: square-ish, at most ``max_cells`` cells."""
    per_cell = max(1, math.ceil(num_blocks / max_cells))
    cells = math.ceil(num_blocks / per_cell)
    columns = max(8, math.ceil(math.sqrt(cells)))
    return per_cell, math.ceil(cells / columns), columns


def heatmap_image(snapshot: KVSnapshot, since_version: int, max_cells: int = MAX_CELLS) -> np.ndarray:
    """The uint8 image: one cell per block (or per bin), changed blocks in the highlight colours."""
    per_cell, rows, columns = grid_shape(snapshot.num_blocks, max_cells)
    padded = rows * columns * per_cell
    states = np.zeros(padded, np.uint8)
    changed = np.zeros(padded, np.bool_)
    start = 0  # filled chunk by chunk: the snapshot's whole arrays are never joined for a frame
    for state_part, changed_part in zip(snapshot.chunks["states"], snapshot.chunks["changed_at"]):
        end = start + len(state_part)
        states[start:end] = state_part
        np.greater(changed_part, since_version, out=changed[start:end])
        start = end
    # Per-cell maximum and any-changed as per_cell strided passes: numpy reduces a short inner axis
    # (``reshape(-1, per_cell).max(axis=1)``) several times slower.
    by_cell, changed_by_cell = states.reshape(-1, per_cell), changed.reshape(-1, per_cell)
    cells, highlight = by_cell[:, 0].copy(), changed_by_cell[:, 0].copy()
    for k in range(1, per_cell):
        np.maximum(cells, by_cell[:, k], out=cells)
        np.logical_or(highlight, changed_by_cell[:, k], out=highlight)
    cells += NUM_BLOCK_STATES * highlight.view(np.uint8)
    return cells.reshape(rows, columns)


class KVHeatmapView(QWidget):
    """Shows the latest snapshot it is given; knows nothing of vLLM."""

    def __init__(self, owner_name=lambda request_id: request_id):
        super().__init__()
        self.setObjectName("kvHeatmap")
        self.owner_name = owner_name
        self.snapshot: KVSnapshot | None = None
        self._shown_version = 0
        self.grid = (1, 1, 1)
        self.summary = QLabel("No engine yet.", objectName="kvSummary")
        self.summary.setWordWrap(True)
        pg.setConfigOptions(imageAxisOrder="row-major")
        self.plot = pg.PlotWidget()
        self.plot.setAspectLocked(True)
        self.plot.invertY(True)
        self.plot.hideAxis("left")
        self.plot.hideAxis("bottom")
        self.plot.setMenuEnabled(False)
        self.image = pg.ImageItem()
        self.image.setLookupTable(colour_table())
        self.image.setLevels((0, 2 * NUM_BLOCK_STATES - 1))
        self.image.hoverEvent = self._on_image_hover
        self.plot.addItem(self.image)
        fit = QPushButton("Fit", objectName="kvFitButton")
        fit.setToolTip("Show the whole pool (scroll to zoom, drag to pan)")
        fit.clicked.connect(lambda: self.plot.autoRange())
        legend = QHBoxLayout()
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
        layout.addLayout(legend)
        layout.addWidget(self.plot, 1)

    def show_snapshot(self, snapshot: KVSnapshot) -> None:
        if self.snapshot is not None and snapshot.version == self.snapshot.version:
            return  # nothing new: keep the GUI thread free
        new_pool = self.snapshot is None or snapshot.num_blocks != self.snapshot.num_blocks
        since = self._shown_version if not new_pool else snapshot.version
        self.grid = grid_shape(snapshot.num_blocks)
        self.image.setImage(heatmap_image(snapshot, since), autoLevels=False)
        self.snapshot, self._shown_version = snapshot, snapshot.version
        self.summary.setText(summary_text(snapshot))
        if new_pool:
            self.plot.autoRange()

    def clear(self, message: str) -> None:
        self.snapshot = None
        self.image.clear()
        self.summary.setText(message)

    # -------------------------------------------------------------- hover
    def cell_blocks(self, row: int, column: int) -> range:
        per_cell, rows, columns = self.grid
        first = (row * columns + column) * per_cell
        return range(first, min(first + per_cell, self.snapshot.num_blocks if self.snapshot else 0))

    def describe_cell(self, row: int, column: int) -> str:
        blocks = self.cell_blocks(row, column)
        snap = self.snapshot
        if snap is None or len(blocks) == 0:
            return ""
        if len(blocks) == 1:
            b = blocks[0]
            owners = ", ".join(sorted({self.owner_name(r) for r in snap.owners_of(b)})) or "none"
            return (f"Block {b}\nstate: {BLOCK_STATE_NAMES[snap.states[b]]}\nref_cnt: {snap.ref_cnts[b]}\n"
                    f"owner: {owners}\nhashed: {'yes' if snap.hashed[b] else 'no'}")
        states = snap.states[blocks.start:blocks.stop]
        counts = np.bincount(states, minlength=NUM_BLOCK_STATES)
        detail = ", ".join(f"{n} {BLOCK_STATE_NAMES[s]}" for s, n in enumerate(counts) if n)
        return (f"Blocks {blocks.start}–{blocks.stop - 1} ({len(blocks)} per cell)\n"
                f"most used: {BLOCK_STATE_NAMES[states.max()]}\n{detail}\nmax ref_cnt: "
                f"{snap.ref_cnts[blocks.start:blocks.stop].max()}")

    def _on_image_hover(self, event) -> None:
        if event.isExit() or self.snapshot is None:
            QToolTip.hideText()
            return
        pos = event.pos()
        text = self.describe_cell(int(pos.y()), int(pos.x()))
        if text:
            QToolTip.showText(event.screenPos().toPoint(), text, self.plot)


def summary_text(s: KVSnapshot) -> str:
    counts = dict(zip(BLOCK_STATE_NAMES, s.counts))
    slots = s.num_in_use * s.block_size
    return (f"Blocks: {s.num_in_use} used ({counts['shared']} shared) · {counts['cached']} cached · "
            f"{counts['free']} free of {s.num_blocks} × {s.block_size} tokens  |  "
            f"vLLM KV usage {s.kv_usage:.1%}  |  token occupancy {s.token_occupancy:.1%} "
            f"({s.tokens_stored} tokens in {slots} slots)  |  snapshot {s.engine_ms:.2f} ms in engine, "
            f"{s.round_trip_ms:.1f} ms round trip")
