"""The batch results table: a Qt model over the batch's columnar results, not an object per row.

Sorting and filtering are index arrays (numpy over whole columns), so 100,000 rows sort in a few
milliseconds; the view asks only for the rows it shows. :meth:`BatchTableModel.refresh` (on the
pane's timer) tells the view what changed since the last look.
"""
from __future__ import annotations

from collections.abc import Generator, Sequence

import numpy as np
import shiboken6
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView
from superqt.utils import GeneratorWorker, create_worker

from workbench.batch.record_images import BatchImage
from workbench.batch.records import elide
from workbench.batch.results import COUNT_COLUMNS, DONE, STATUS_NAMES, BatchResults
from workbench.batch.text_order import TextOrder, python_ranks

ELIDE_CHARS = 120  # a cell's text, shortened
# (key, header): keys are the results' columns, or "line", "prompt", "text"
COLUMNS = (("line_no", "Line"), ("status", "Status"), ("prompt", "Prompt"), ("images", "Images"),
           ("prompt_tokens", "Prompt tok"), ("image_tokens", "Image tok"), ("output_tokens", "Output tok"),
           ("cached_prompt_tokens", "Cached tok"), ("queue_s", "Queue ms"), ("ttft_s", "TTFT ms"), ("itl_s", "ITL ms"),
           ("e2e_s", "E2E s"), ("finish_reason", "Finish"), ("text", "Output"), ("reference", "Reference"))
TEXT_COLUMNS = ("prompt", "text", "reference")
REFERENCE_COLUMN = len(COLUMNS) - 1  # shown only where the file's records hold their own answers
IMAGE_COLUMNS = (3, 5)  # "Images" and "Image tok": shown only where the file has rows with images
MS_COLUMNS = ("queue_s", "ttft_s", "itl_s")
PROMPT_KEYS = ("prompt", "reference", "images")  # sorted by what each row's prompt holds


class BatchTableModel(QAbstractTableModel):
    """A sort by a column of what each row's prompt holds ranks the rows on a worker (a kept run's prompts are
    read back from their JSON first: 0.8 s for 100,000 on the GUI thread), ``reading(done, total)`` saying how
    far it is; the rows stay in the file's order meanwhile. ``reading_failed(message)`` if a stored prompt does
    not read back: the sort is dropped."""

    reading = Signal(int, int)  # prompts read, of how many; (0, 0) when the read ends
    reading_failed = Signal(str)

    def __init__(self, results: BatchResults | None = None):
        super().__init__()
        self.results = results or BatchResults()
        self.order = np.arange(0, dtype=np.int64)  # view row -> results row
        self.status_filter: int | None = None  # a status code, or None for all
        self.finish_filter: str | None = None  # a finish reason, or None for all
        self.sort_key: tuple[int, Qt.SortOrder] | None = None
        self.ranker: GeneratorWorker | None = None  # ranking the rows by a prompt's column
        self._ranks: tuple[Sequence, str, np.ndarray] | None = None  # (prompts, column key, each row's rank)
        self._text_order = TextOrder()  # the rows by their outputs, kept up as a run streams
        self._seen_version = -1
        self._rebuild()

    @property
    def sorting(self) -> bool:
        """Whether a sort waits for its ranks (the rows in the file's order meanwhile)."""
        return self.ranker is not None

    # ------------------------------------------------------------------ Qt's model interface
    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.order)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if role == Qt.DisplayRole and orientation == Qt.Horizontal:
            key, name = COLUMNS[section]
            return "Row" if key == "line_no" and self.results.unit == "row" else name  # a table's, a sheet's rows
        return None

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        row, key = int(self.order[index.row()]), COLUMNS[index.column()][0]
        if role == Qt.DisplayRole:
            return self.display(row, key)
        if role == Qt.ToolTipRole and key in TEXT_COLUMNS:
            return self.full_text(row, key)[:2000]
        if role == Qt.ToolTipRole and key == "images":
            return "\n".join(image_line(image) for image in self.results.prompts[row].images[:20]) or None
        if role == Qt.TextAlignmentRole and key not in (*TEXT_COLUMNS, "images", "status", "finish_reason"):
            return int(Qt.AlignRight | Qt.AlignVCenter)
        return None

    def display(self, row: int, key: str) -> str:
        results = self.results
        if key == "line_no":
            return str(results.prompts[row].line_no)
        if key == "status":
            return results.status_name(row)
        if key == "finish_reason":
            return results.finish_reason(row)
        if key == "images":
            return images_cell(results.prompts[row].images)
        if key in TEXT_COLUMNS:
            return elide(self.full_text(row, key), ELIDE_CHARS)
        value = results.value(key, row)
        if value is None:  # a finished row without the figure: the backend does not give it (a server)
            return "n/a" if results.status(row) == DONE else ""
        if key in COUNT_COLUMNS:
            return f"{value:,}"
        return f"{value * 1e3:,.1f}" if key in MS_COLUMNS else f"{value:,.2f}"

    def full_text(self, row: int, key: str) -> str:
        if key == "text":
            return self.results.texts[row]
        if key == "reference":
            return self.results.prompts[row].reference or ""
        return self.results.prompts[row].preview()

    def results_row(self, view_row: int) -> int:
        return int(self.order[view_row])

    # ------------------------------------------------------------------ sort and filter
    def sort(self, column: int, order: Qt.SortOrder = Qt.AscendingOrder) -> None:
        """Sorts by a column; column -1 (no sort indicator) goes back to the file's order."""
        self.sort_key = (column, order) if 0 <= column < len(COLUMNS) else None
        self._relayout()

    def _ranked(self, key: str) -> np.ndarray | None:
        """Each row's rank by prompt column ``key``, if ranked for the prompts shown; else ranks them on a
        worker, which lays the rows out again when it ends."""
        prompts = self.results.prompts
        if self._ranks is not None and self._ranks[0] is prompts and self._ranks[1] == key \
                and len(self._ranks[2]) == len(prompts):
            return self._ranks[2]
        if self.ranker is None:
            total = len(prompts)
            self.ranker = create_worker(prompt_ranks, prompts, key, _start_thread=False, _connect={
                "yielded": lambda done: self._on_ranking(prompts, done, total),
                "returned": lambda ranks: self._on_ranked(prompts, key, ranks, None),
                "errored": lambda error: self._on_ranked(prompts, key, None, error)})
            self.reading.emit(0, total)
            self.ranker.start()
        return None  # a ranking under way lays the rows out again when it ends

    def _on_ranking(self, prompts: Sequence, done: int, total: int) -> None:
        if shiboken6.isValid(self) and prompts is self.results.prompts:
            self.reading.emit(done, total)

    def _on_ranked(self, prompts: Sequence, key: str, ranks: np.ndarray | None, error: Exception | None) -> None:
        if not shiboken6.isValid(self):
            return  # the window closed meanwhile
        self.ranker = None
        self.reading.emit(0, 0)
        if error is not None:
            if prompts is self.results.prompts:
                self.sort_key = None
                self.reading_failed.emit(f"Could not sort: a stored prompt did not read back ({error}).")
        else:
            self._ranks = (prompts, key, ranks)
        self._relayout()  # sorted now; or ranked for another column or run asked for meanwhile: ranks it

    def set_filters(self, status: int | None, finish_reason: str | None) -> None:
        self.status_filter, self.finish_filter = status, finish_reason
        self._relayout()

    def _rebuild(self) -> None:
        results = self.results
        rows = np.arange(results.num_rows, dtype=np.int64)
        if self.status_filter is not None:
            rows = rows[results.column("status") == self.status_filter]
        if self.finish_filter is not None:
            names = results.finish_reason_names
            code = names.index(self.finish_filter) if self.finish_filter in names else -1
            rows = rows[results.column("finish_reason")[rows] == code]
        keys = None if self.sort_key is None else self._sort_keys(COLUMNS[self.sort_key[0]][0], rows)
        if keys is not None:  # None: ranks being made on a worker
            ranked = np.argsort(keys, kind="stable")
            rows = rows[ranked[::-1] if self.sort_key[1] == Qt.DescendingOrder else ranked]
        self.order = rows
        self._seen_version = results.version

    def _sort_keys(self, key: str, rows: np.ndarray) -> np.ndarray | None:
        results = self.results
        if key == "finish_reason":  # each code's rank among the few names, not 100,000 strings sorted
            names = results.finish_reason_names
            return python_ranks(names)[results.column(key)[rows]]
        if key in PROMPT_KEYS:
            ranks = self._ranked(key)
            return None if ranks is None else ranks[rows]
        if key == "text":
            return self._text_order.ranks(results)[rows]
        return results.column(key)[rows]

    def _relayout(self) -> None:
        """Rebuilds the order, keeping the view's selection on the same results rows."""
        self.layoutAboutToBeChanged.emit()
        persistent = self.persistentIndexList()
        old_rows = [int(self.order[i.row()]) if i.isValid() and i.row() < len(self.order) else -1
                    for i in persistent]
        self._rebuild()
        where = np.full(self.results.num_rows + 1, -1, dtype=np.int64)
        where[self.order] = np.arange(len(self.order))
        moved = [self.index(int(where[r]), i.column()) if r >= 0 and where[r] >= 0 else QModelIndex()
                 for i, r in zip(persistent, old_rows)]
        self.changePersistentIndexList(persistent, moved)
        self.layoutChanged.emit()

    # ------------------------------------------------------------------ keeping up with a run
    def set_results(self, results: BatchResults) -> None:
        self.beginResetModel()
        self.results = results
        self.status_filter = self.finish_filter = None
        self._ranks, self._text_order = None, TextOrder()  # an earlier run's orders: not kept alive
        self._rebuild()
        self.endResetModel()

    def refresh(self) -> bool:
        """Tells the view what changed since the last call; False if nothing did."""
        if self.results.version == self._seen_version:
            return False
        grows_only = self.sort_key is None and self.status_filter is None and self.finish_filter is None
        if grows_only and self.results.num_rows > len(self.order):
            first = len(self.order)
            self.beginInsertRows(QModelIndex(), first, self.results.num_rows - 1)
            self._rebuild()
            self.endInsertRows()
        elif grows_only:
            self._seen_version = self.results.version
        else:
            self._relayout()
        if len(self.order):
            self.dataChanged.emit(self.index(0, 0), self.index(len(self.order) - 1, len(COLUMNS) - 1),
                                  [Qt.DisplayRole])
        return True


def prompt_ranks(prompts: Sequence, key: str, chunk: int = 10_000) -> Generator[int, None, np.ndarray]:
    """Each row's rank by what its prompt holds (``key``: one of PROMPT_KEYS), for a worker: a kept run's
    prompts are read back from their JSON here. Yields how many rows are read after each ``chunk``."""
    values: list = []
    total = len(prompts)  # a file still being read may add rows meanwhile: they are ranked next time
    for start in range(0, total, chunk):
        for prompt in prompts[start:min(start + chunk, total)]:
            values.append(prompt.preview() if key == "prompt" else prompt.reference or "" if key == "reference"
                          else len(prompt.images))
        yield len(values)
    return python_ranks(values)


def results_view(model: BatchTableModel) -> QTableView:
    """The table view over ``model``: sortable, one row selected at a time, fixed row heights."""
    table = QTableView(objectName="batchTable")
    table.setModel(model)
    table.setSortingEnabled(True)
    table.horizontalHeader().setSortIndicator(-1, Qt.AscendingOrder)
    table.setSelectionBehavior(QAbstractItemView.SelectRows)
    table.setSelectionMode(QAbstractItemView.SingleSelection)
    table.verticalHeader().setSectionResizeMode(QHeaderView.Fixed)
    table.verticalHeader().setDefaultSectionSize(22)
    table.verticalHeader().hide()
    table.setWordWrap(False)
    header = table.horizontalHeader()
    header.setStretchLastSection(True)
    for column, width in enumerate((48, 64, 170, 140, 80, 74, 80, 80, 74, 66, 56, 56, 54, 260)):
        header.resizeSection(column, width)
    return table


def images_cell(images: tuple[BatchImage, ...]) -> str:
    """A row's images in a cell: how many, and the first one's name ("2 · cat.png, …")."""
    if not images:
        return ""
    return f"{len(images)} · {images[0].name}" + (", …" if len(images) > 1 else "")


def image_line(image: BatchImage) -> str:
    """One image in a tooltip or the detail: "cat.png (640 × 480 JPEG) from photos/cat.png"."""
    what = image.ref.describe() if image.ref is not None else f"{image.name} (fetched when the row is sent)"
    return what if image.source in (image.name, "") else f"{what} from {image.source}"


def detail_text(results: BatchResults, row: int) -> str:
    """A row whole, for the detail below the table: its prompt, images, output, reference and error."""
    prompt = results.prompts[row]
    heading = f"{results.unit.capitalize()} {prompt.line_no}" + (f" · {prompt.custom_id}" if prompt.custom_id else "")
    text = f"{heading} · {results.status_name(row)}\n\nPrompt:\n{prompt.preview()}"
    if prompt.images:
        tokens = results.value("image_tokens", row)
        text += (f"\n\nImages ({len(prompt.images)}" + (f", {tokens:,} image tokens" if tokens else "") + "):"
                 + "".join(f"\n  {n}. {image_line(image)}" for n, image in enumerate(prompt.images, 1)))
    text += f"\n\nOutput:\n{results.texts[row]}"
    if prompt.reference is not None:
        text += f"\n\nReference (the record's own answer):\n{prompt.reference}"
    error = results.errors.get(row)
    return text + (f"\n\nError:\n{error}" if error else "")


def status_choices() -> list[tuple[str, int | None]]:
    return [("all statuses", None), *((name, code) for code, name in enumerate(STATUS_NAMES))]

