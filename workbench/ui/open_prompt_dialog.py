"""The dialog a prompt file opens through: how the file holds its records (shown), their format (detected, the
user's to change), a datasets folder's split or a workbook's sheet, the CSV column or the records' field that holds
the prompts, and how many rows to read; the first record is shown as it will be asked.

The dialog shows at once; what it offers is read on a thread of its own (``batch/file_look.py``: a workbook's first
look took 0.7 s at 100,000 rows), a busy bar under the first record meanwhile. The looks run in turn on that one
thread (a workbook's sheets' first rows are read once, in a process of their own, and kept), and only the last one
asked for is shown.
"""
from __future__ import annotations

import itertools
import queue
import threading
from pathlib import Path

from PySide6.QtCore import QObject, QSignalBlocker, Signal
from PySide6.QtWidgets import (
    QComboBox, QDialog, QDialogButtonBox, QFormLayout, QLabel, QProgressBar, QSpinBox, QVBoxLayout, QWidget,
)

from workbench.batch.file_look import FileLook, first_record_preview, look_at, sheet_look
from workbench.batch.formats import CONTAINERS, FORMATS

NAMED_FORMATS = ("csv", "field")  # the formats that read the prompt from a column or field the user names


class OpenPromptDialog(QDialog):
    """``looked`` once a look's result is shown (the first fills the dialog); :meth:`looking` while one is asked."""

    looked = Signal()

    def __init__(self, path: str, parent=None, max_rows: int | None = None):
        super().__init__(parent)
        self.path = path
        self.setWindowTitle(f"Open {Path(path).name}")
        self.file_look: FileLook | None = None
        self._ticket: int | None = None  # the look asked for last; another's result is dropped
        self._then = None  # what shows it
        self.container = ""
        self.container_label = QLabel("…", objectName="batchContainer")
        self.format = QComboBox(objectName="batchFormat", enabled=False)
        self.split_choice = QComboBox(self, objectName="batchSplit", visible=False)  # a folder's splits, a sheet
        self.column = QComboBox(objectName="batchCsvColumn", enabled=False)
        self.column.setEditable(True)
        self._named_text = ""  # the column or field, kept while a format reads none
        self.rows = QSpinBox(objectName="batchMaxRows", minimum=0, maximum=1 << 30, value=max_rows or 0)
        self.rows.setSpecialValueText("all")
        self.rows.setToolTip("Read only the first N prompts (ms-swift's dataset#N); \"all\" reads the whole file.")
        self.preview = QLabel(f"Looking at {Path(path).name}…", objectName="batchFirstRecord", wordWrap=True)
        self.preview.setMinimumWidth(420)
        self.busy = QProgressBar(objectName="batchLooking", minimum=0, maximum=0, textVisible=False)
        self.busy.setMaximumHeight(8)
        first = QWidget()
        stack = QVBoxLayout(first)
        stack.setContentsMargins(0, 0, 0, 0)
        stack.addWidget(self.preview)
        stack.addWidget(self.busy)
        buttons = QDialogButtonBox(QDialogButtonBox.Open | QDialogButtonBox.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        self.open_button = buttons.button(QDialogButtonBox.Open)
        self.open_button.setEnabled(False)
        self.form = QFormLayout(self)
        self.form.addRow("File", self.container_label)
        self.form.addRow("Format", self.format)
        self.form.addRow("Prompt column or field", self.column)
        self.form.addRow("Rows", self.rows)
        self.form.addRow("First record", first)
        self.form.addRow(buttons)
        _courier().looked.connect(self._on_looked)
        self._ask(self._show_first_look, look_at, path)

    def looking(self) -> bool:
        return self._ticket is not None

    def chosen(self) -> tuple[str, str | None]:
        fmt = self.format.currentData()
        return fmt, (self.column.currentText() if fmt in NAMED_FORMATS else None)

    def split(self) -> str | None:
        return self.split_choice.currentText() or None

    def max_rows(self) -> int | None:
        return self.rows.value() or None

    # ------------------------------------------------------------------ looks
    def _ask(self, then, work, *args) -> None:
        self._ticket, self._then = next(_tickets), then
        _jobs().put((self._ticket, work, args))

    def _on_looked(self, ticket: int, result) -> None:
        if ticket != self._ticket:
            return
        then, self._ticket, self._then = self._then, None, None
        self.busy.hide()
        if isinstance(result, Exception):
            self.preview.setText(f"Cannot be read: {result}")
        else:
            then(result)
        self.looked.emit()

    def _show_first_look(self, look: FileLook) -> None:
        self.file_look, self.container = look, look.container
        self.container_label.setText(CONTAINERS[look.container])
        for key, label in FORMATS.items():
            self.format.addItem(label + (" (detected)" if key == look.detected else ""), key)
        self.format.setCurrentIndex(list(FORMATS).index(look.detected))
        if look.splits:
            self.split_choice.addItems(look.splits)
            self.form.insertRow(2, "Sheet" if look.container == "xlsx" else "Split", self.split_choice)
            self.split_choice.show()
        self.column.addItems(look.columns)
        if look.column:
            self.column.setCurrentText(look.column)
        self._named_text = self.column.currentText()
        self._sync_column()
        self.preview.setText(look.preview)
        self.format.setEnabled(True)
        self.open_button.setEnabled(True)
        self.split_choice.currentIndexChanged.connect(self._on_split_changed)
        self.format.currentIndexChanged.connect(self._on_format_changed)
        self.column.currentTextChanged.connect(self._on_format_changed)

    def _on_split_changed(self) -> None:
        """A workbook's sheets have columns of their own: the chosen sheet's are offered, the column waiting."""
        if self.container != "xlsx":
            self._on_format_changed()
            return
        self.column.setEnabled(False)
        self._ask(self._show_sheet, sheet_look, self.path, self.format.currentData(), self.split())

    def _show_sheet(self, look: tuple[tuple[str, ...], str]) -> None:
        fields, preview = look
        with QSignalBlocker(self.column):
            self.column.clear()
            self.column.addItems(fields)
        self._named_text = self.column.currentText()
        self._sync_column()
        self.preview.setText(preview)

    def _on_format_changed(self) -> None:
        if self._then == self._show_sheet:  # the sheet's columns are still coming: asked again, with this format
            self._on_split_changed()
            return
        self._sync_column()
        fmt, column = self.chosen()
        self._ask(self.preview.setText, first_record_preview, self.path, fmt, self.split(), column)

    def _sync_column(self) -> None:
        """The column or field box: the user's where the format reads one, else blank (its text kept)."""
        named = self.format.currentData() in NAMED_FORMATS
        self.column.setEnabled(named)
        if named != bool(self.column.currentText()):
            if not named:
                self._named_text = self.column.currentText()
            with QSignalBlocker(self.column):
                self.column.setEditText(self._named_text if named else "")


class _Courier(QObject):
    """Carries a look's result from the looking thread to the dialogs (queued to the GUI thread)."""

    looked = Signal(int, object)  # the ask's ticket; what it found, or the exception it raised


_tickets = itertools.count(1)
_state: dict = {}  # the courier (made on the GUI thread) and the looking thread's queue, made when first asked


def _courier() -> _Courier:
    if "courier" not in _state:
        _state["courier"] = _Courier()
    return _state["courier"]


def _jobs() -> queue.SimpleQueue:
    if "jobs" not in _state:
        _state["jobs"] = queue.SimpleQueue()
        threading.Thread(target=_look, args=(_state["jobs"], _courier()), name="file-looks", daemon=True).start()
    return _state["jobs"]


def _look(jobs: queue.SimpleQueue, courier: _Courier) -> None:
    while True:
        ticket, work, args = jobs.get()
        try:
            result = work(*args)
        except Exception as exc:  # noqa: BLE001 (a file that reads as none of the formats: the dialog says why)
            result = exc
        courier.looked.emit(ticket, result)
