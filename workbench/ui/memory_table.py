"""The memory panel's figures as a table: a note line (why there are no GPU figures, or that no engine
runs), then a section for the GPUs (total, used, free) and one for the engine processes (GPU or host
memory, and vLLM's split of it: weights, KV cache, the rest), and the KV space.

:func:`describe_memory` turns a reading into rows (pure: the tests read it); :class:`MemoryTableView`
shows them. The table's height changes only with the reading's shape (how many GPUs and processes),
its columns only with its width: a figure that changes sets one cell's text, and lays nothing out.
"""
from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QSizePolicy, QTableWidget, QTableWidgetItem

from workbench.telemetry.memory_service import MemoryReading, ProcessMemory

GIB = 1 << 30
MIB = 1 << 20
NUM_COLUMNS = 5
FIRST_COLUMN_SHARE = 0.32  # of the table's width; the four figures share the rest
READING = "Reading memory…"


@dataclass(frozen=True)
class MemoryRow:
    cells: tuple[str, ...]  # NUM_COLUMNS texts at most
    heading: bool = False  # a section's heading (bold): what the columns below it hold


@dataclass(frozen=True)
class MemoryTable:
    note: str  # a line above the table: why there are no GPU figures, no engine; "" for nothing to say
    rows: tuple[MemoryRow, ...]

    def texts(self) -> list[tuple[str, ...]]:
        return [row.cells for row in self.rows]


def size_text(num_bytes: float | None) -> str:
    if num_bytes is None:
        return "n/a"
    return f"{num_bytes / GIB:.2f} GiB" if abs(num_bytes) >= GIB else f"{num_bytes / MIB:.1f} MiB"


def describe_memory(reading: MemoryReading | None) -> MemoryTable:
    """The panel's note and rows for ``reading``: GPUs and engine processes, or why there are no GPU figures."""
    if reading is None:
        return MemoryTable(READING, ())
    notes, rows = [], []
    if reading.nvml_unavailable is not None:
        notes.append(f"No GPU figures: {reading.nvml_unavailable}. "
                     "Shown instead: the engine processes' host memory and the KV space.")
    if reading.gpus:
        rows.append(MemoryRow(("GPU", "total", "used", "free"), heading=True))
        rows += [MemoryRow((f"GPU {gpu.index} {gpu.name}", size_text(gpu.total_bytes), size_text(gpu.used_bytes),
                            size_text(gpu.total_bytes - gpu.used_bytes))) for gpu in reading.gpus]
    on_gpu = reading.nvml_unavailable is None
    if reading.processes:
        rows.append(MemoryRow(("engine process", "GPU memory" if on_gpu else "host memory", "weights", "KV cache",
                               "rest"), heading=True))
        rows += [_process_row(process, on_gpu) for process in reading.processes]
        if reading.kv_cache_bytes:
            rows.append(MemoryRow(("KV space", size_text(reading.kv_cache_bytes), f"{reading.num_blocks:,} blocks")))
    else:
        notes.append("No engine running.")
    return MemoryTable(" ".join(notes), tuple(rows))


def _process_row(process: ProcessMemory, on_gpu: bool) -> MemoryRow:
    memory = size_text(process.gpu_bytes if on_gpu else process.host_rss_bytes)
    worker = process.worker
    if worker is None:
        return MemoryRow((f"pid {process.pid} {process.name}", memory, "", "", ""))
    rest = "" if process.rest_bytes is None else size_text(process.rest_bytes)
    return MemoryRow((f"pid {process.pid} {process.name}", memory, size_text(worker.weights_bytes),
                      size_text(worker.kv_cache_bytes), rest))


class MemoryTableView(QTableWidget):
    """The rows of a :class:`MemoryTable`, as tall as they are, and never wider than it is given."""

    def __init__(self):
        super().__init__(0, NUM_COLUMNS, objectName="memoryTable")
        self.horizontalHeader().hide()
        self.verticalHeader().hide()
        self.verticalHeader().setSectionResizeMode(QHeaderView.Fixed)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().lineSpacing() + 6)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.Fixed)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.NoSelection)
        self.setFocusPolicy(Qt.NoFocus)
        self.setTextElideMode(Qt.ElideRight)
        self.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
        self.setMinimumWidth(1)
        self._shape: tuple[bool, ...] | None = None  # which rows are headings: the table's shape
        self.hide()

    def show_rows(self, rows: tuple[MemoryRow, ...]) -> None:
        """Shows ``rows``; the table is laid out again only when their shape changed."""
        shape = tuple(row.heading for row in rows)
        if shape != self._shape:
            self._reshape(shape)
        for index, row in enumerate(rows):
            cells = row.cells + ("",) * (NUM_COLUMNS - len(row.cells))
            for column, text in enumerate(cells):
                item = self.item(index, column)
                if item.text() != text:
                    item.setText(text)
                    item.setToolTip(text)

    def texts(self) -> list[tuple[str, ...]]:
        """Every row's cell texts, as shown."""
        return [tuple(self.item(row, column).text() for column in range(NUM_COLUMNS))
                for row in range(self.rowCount())]

    def _reshape(self, shape: tuple[bool, ...]) -> None:
        self._shape = shape
        self.setRowCount(len(shape))
        bold = QFont(self.font())
        bold.setBold(True)
        for index, heading in enumerate(shape):
            for column in range(NUM_COLUMNS):
                item = QTableWidgetItem()
                if heading:
                    item.setFont(bold)
                if column:
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                self.setItem(index, column, item)
        self.setFixedHeight(len(shape) * self.verticalHeader().defaultSectionSize() + 2 * self.frameWidth())
        self.setVisible(bool(shape))

    def resizeEvent(self, event) -> None:
        """The first column a share of the width, the figures the rest in equal parts."""
        super().resizeEvent(event)
        width = self.viewport().width()
        first = int(width * FIRST_COLUMN_SHARE)
        self.setColumnWidth(0, first)
        for column in range(1, NUM_COLUMNS):
            self.setColumnWidth(column, (width - first) // (NUM_COLUMNS - 1))
