"""The batch pane: open a file of prompts, run it through the chat's engine, keep and export the results.

It shows a run; the run's logic (the bound, priority, pause, cancel) is in ``workbench.batch``, the
run itself in the application model. A 4 Hz timer reads the run's progress and the results' version.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from PySide6.QtCore import Qt, QTimer, Slot
from PySide6.QtWidgets import (
    QAbstractItemView, QComboBox, QFileDialog, QHBoxLayout, QHeaderView, QLabel, QListWidget, QMenu, QMessageBox,
    QPlainTextEdit, QProgressBar, QPushButton, QSplitter, QTableView, QVBoxLayout, QWidget,
)

from workbench.batch.export import export_rows
from workbench.batch.loader import PromptLoader
from workbench.batch.prompt_file import LineProblem
from workbench.batch.run import BatchProgress, BatchRun, default_max_in_flight
from workbench.model.app_model import AppModel
from workbench.ui.batch_settings import ChunkedTask, OpenPromptDialog, RunSettingsForm
from workbench.ui.batch_table import BatchTableModel, status_choices
from workbench.ui.scrolling import scrolling

REFRESH_MS = 250
MAX_PROBLEMS_LISTED = 1000


def duration_text(seconds: float | None) -> str:
    if seconds is None:
        return "…"
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m {seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def progress_text(p: BatchProgress) -> str:
    parts = [f"{p.num_finished:,} / {p.num_rows:,}", f"ETA {duration_text(p.eta_s)}",
             f"{p.tokens_per_s:,.0f} tok/s", f"{p.num_in_flight} in the engine"]
    if p.num_failed:
        parts.append(f"{p.num_failed:,} failed")
    return " · ".join(parts) + f" · {p.message or p.state}"


class BatchPane(QWidget):
    """``post`` puts a command on the engine loop's queue (the chat's engine)."""

    def __init__(self, model: AppModel, post: Callable[[object], None]):
        super().__init__()
        self.model, self.post = model, post
        self.loader: PromptLoader | None = None
        self.run: BatchRun | None = None
        self.table_model = BatchTableModel()
        self.settings = RunSettingsForm()
        self.loading = ChunkedTask(self._load_step, self)
        self.loading.finished.connect(self._on_loading_finished)
        self.exporting: ChunkedTask | None = None
        self.problem_box: QMessageBox | None = None
        self._in_flight_set = False
        self._build()
        self.timer = QTimer(self, interval=REFRESH_MS)
        self.timer.timeout.connect(self._on_timer_timeout)
        self.timer.start()
        model.engine_changed.connect(self._on_model_engine_changed)
        self._show_restored_run()
        self._update_controls()

    def _show_restored_run(self) -> None:
        """The latest run an earlier session stored (the model holds them all), with its results."""
        if not self.model.batch_runs:
            return
        self.run = list(self.model.batch_runs.values())[-1]
        self.table_model.set_results(self.run.results)
        name = Path(self.run.source[0]).name or "a prompt file"
        self.file_label.setText(f"Restored from the last session: {self.run.results.num_rows:,} prompts of {name}.")
        self._on_timer_timeout()

    def _build(self) -> None:
        self.open_button = QPushButton("Open prompt file…", objectName="batchOpenButton")
        self.open_button.clicked.connect(lambda: self.open_file())
        self.file_label = QLabel("No prompt file open.", objectName="batchFileLabel")
        self.load_progress = QProgressBar(objectName="batchLoadProgress", maximum=1000, visible=False)
        self.problems = QListWidget(objectName="batchProblems", visible=False)
        self.problems.setMaximumHeight(90)
        self.run_button = QPushButton("Run", objectName="batchRunButton")
        self.pause_button = QPushButton("Pause", objectName="batchPauseButton")
        self.cancel_button = QPushButton("Cancel", objectName="batchCancelButton")
        self.export_button = QPushButton("Export", objectName="batchExportButton")
        self.run_button.clicked.connect(self.start_run)
        self.pause_button.clicked.connect(self.toggle_pause)
        self.cancel_button.clicked.connect(self.cancel_run)
        menu = QMenu(self.export_button)
        menu.addAction("JSONL…", lambda: self._ask_export("jsonl"))
        menu.addAction("CSV…", lambda: self._ask_export("csv"))
        self.export_button.setMenu(menu)
        self.progress = QProgressBar(objectName="batchProgress", textVisible=False)
        self.progress_label = QLabel("", objectName="batchProgressText")
        self.export_progress = QProgressBar(objectName="batchExportProgress", visible=False)
        self.status_filter = QComboBox(objectName="batchStatusFilter")
        for label, code in status_choices():
            self.status_filter.addItem(label, code)
        self.finish_filter = QComboBox(objectName="batchFinishFilter")
        self.finish_filter.addItem("all finish reasons", None)
        self.status_filter.currentIndexChanged.connect(self._on_filters_changed)
        self.finish_filter.currentIndexChanged.connect(self._on_filters_changed)
        self.table = self._make_table()
        self.detail = QPlainTextEdit(objectName="batchDetail", readOnly=True)
        self.detail.setPlaceholderText("Select a row to see its prompt and whole output.")
        self._lay_out()

    def _make_table(self) -> QTableView:
        table = QTableView(objectName="batchTable")
        table.setModel(self.table_model)
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
        for column, width in enumerate((48, 64, 170, 74, 78, 74, 70, 66, 56, 56, 54)):
            header.resizeSection(column, width)
        table.selectionModel().currentRowChanged.connect(self._on_table_row_changed)
        return table

    def _lay_out(self) -> None:
        file_row = QHBoxLayout()
        file_row.addWidget(self.open_button)
        file_row.addWidget(self.file_label, 1)
        controls = QHBoxLayout()
        for widget in (self.run_button, self.pause_button, self.cancel_button, self.export_button):
            controls.addWidget(widget)
        controls.addWidget(self.progress, 1)
        filters = QHBoxLayout()
        filters.addWidget(QLabel("Show"))
        filters.addWidget(self.status_filter)
        filters.addWidget(self.finish_filter)
        filters.addStretch(1)
        filters.addWidget(self.export_progress)
        rows = QSplitter(Qt.Vertical, objectName="batchRowsSplitter")
        rows.addWidget(self.table)
        rows.addWidget(self.detail)
        rows.setSizes([500, 120])
        main = QWidget()
        column = QVBoxLayout(main)
        column.setContentsMargins(0, 0, 0, 0)
        column.addLayout(file_row)
        column.addWidget(self.load_progress)
        column.addWidget(self.problems)
        column.addLayout(controls)
        column.addWidget(self.progress_label)
        column.addLayout(filters)
        column.addWidget(rows, 1)
        splitter = QSplitter(objectName="batchSplitter")
        splitter.addWidget(main)
        splitter.addWidget(scrolling(self.settings))
        splitter.setSizes([1000, 260])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)

    # -------------------------------------------------------------- opening a file
    @Slot()
    def open_file(self, path: str | None = None, fmt: str | None = None, column: str | None = None) -> bool:
        """Reads a prompt file into the table (in chunks); asks for the file and format where not given."""
        if self._active():
            return False
        path = path or QFileDialog.getOpenFileName(self, "Open a prompt file", "",
                                                   "Prompt files (*.jsonl *.json *.csv *.txt);;All files (*)")[0]
        if not path:
            return False
        if fmt is None:
            dialog = OpenPromptDialog(path, self)
            if not dialog.exec():
                return False
            fmt, column = dialog.chosen()
        if self.run is not None:
            self.model.forget_batch_run(self.run.run_id)  # its results go with the table's
        self.loader = PromptLoader(path, fmt, column, on_problem="ask")
        self.run = None
        self.table_model.set_results(self.loader.results)
        self.problems.clear()
        self.problems.hide()
        self.file_label.setText(f"Reading {Path(path).name}…")
        self.load_progress.show()
        self.loading.start()
        self._update_controls()
        return True

    def _load_step(self) -> bool:
        more = self.loader.read(500)
        self.load_progress.setValue(int(self.loader.fraction * 1000))
        return more

    def _on_loading_finished(self) -> None:
        loader = self.loader
        self._list_problems()
        self.table_model.refresh()
        if loader.awaiting is not None:
            self._ask_about_problem(loader.awaiting)
            return
        self.load_progress.hide()
        self.file_label.setText(loader.summary())
        self._update_controls()

    def _list_problems(self) -> None:
        shown = self.problems.count()
        for problem in self.loader.problems[shown:MAX_PROBLEMS_LISTED]:
            self.problems.addItem(str(problem))
        self.problems.setVisible(bool(self.loader.problems))

    def _ask_about_problem(self, problem: LineProblem) -> None:
        box = QMessageBox(QMessageBox.Warning, "Malformed line", f"Line {problem.line_no}: {problem.reason}",
                          parent=self)
        box.setInformativeText(f"{self.loader.results.num_rows:,} prompts read so far are kept either way. Skip "
                               "malformed lines and read on (each is listed), or stop reading here?")
        skip = box.addButton("Skip malformed lines", QMessageBox.AcceptRole)
        box.addButton("Stop here", QMessageBox.RejectRole)
        box.buttonClicked.connect(lambda button: self._on_problem_answered("skip" if button is skip else "stop"))
        self.problem_box = box
        box.open()

    def _on_problem_answered(self, choice: str) -> None:
        self.problem_box = None
        self.loader.decide(choice)
        self.loading.start()

    # -------------------------------------------------------------- running
    @Slot()
    def start_run(self) -> BatchRun | None:
        if not self._can_run():
            return None
        self.run = self.model.new_batch_run(self.loader.results, self.settings.settings(), self.post,
                                            source=(str(self.loader.path), self.loader.fmt))
        self.run.start()
        self._on_timer_timeout()
        return self.run

    @Slot()
    def toggle_pause(self) -> None:
        if self.run is None:
            return
        self.run.resume() if self.run.state == "paused" else self.run.pause()
        self._update_controls()

    @Slot()
    def cancel_run(self) -> None:
        if self.run is not None:
            self.run.cancel()
            self._on_timer_timeout()

    def _can_run(self) -> bool:
        loaded = self.loader is not None and self.loader.done and self.loader.results.num_rows > 0
        return loaded and self.run is None and self.model.engine.ready and not self.loading.active

    def _active(self) -> bool:
        running = self.run is not None and self.run.state in ("running", "paused")
        return running or self.loading.active or self.problem_box is not None

    # -------------------------------------------------------------- exporting
    def _ask_export(self, kind: str) -> None:
        suffix = "csv" if kind == "csv" else "jsonl"
        path = QFileDialog.getSaveFileName(self, "Export results", f"batch-results.{suffix}", f"*.{suffix}")[0]
        if path:
            self.export_to(path, kind)

    def export_format(self, kind: str) -> str:
        """The writer for "jsonl" or "csv": an OpenAI batch input exports JSONL as vllm run-batch writes it."""
        fmt = self.loader.fmt if self.loader is not None else self.run.source[1] if self.run is not None else ""
        return "openai" if kind == "jsonl" and fmt == "openai" else kind

    def export_to(self, path: str, kind: str) -> ChunkedTask | None:
        if not self._exportable():
            return None
        info = self.model.engine.info
        model_name = info.model if info is not None else self.model.config.model
        results = self.table_model.results
        rows = export_rows(results, path, self.export_format(kind), model_name)
        total = max(1, results.num_rows)
        self.export_progress.setMaximum(total)
        self.export_progress.show()

        def step() -> bool:
            written = next(rows, None)
            if written is None:
                return False
            self.export_progress.setValue(min(written, total))
            return True

        self.exporting = ChunkedTask(step, self)
        self.exporting.finished.connect(lambda: self._on_export_finished(path))
        self.exporting.start()
        return self.exporting

    def _on_export_finished(self, path: str) -> None:
        self.exporting = None
        self.export_progress.hide()
        self.progress_label.setText(f"Exported to {path}")

    # -------------------------------------------------------------- keeping up
    def _on_timer_timeout(self) -> None:
        self.table_model.refresh()
        self._sync_finish_filter()
        if self.run is not None:
            progress = self.run.progress()
            self.progress.setMaximum(max(1, progress.num_rows))
            self.progress.setValue(progress.num_finished)
            self.progress_label.setText(progress_text(progress))
        self._update_controls()

    def _sync_finish_filter(self) -> None:
        names = [n for n in self.table_model.results.finish_reason_names if n]
        if self.finish_filter.count() - 1 != len(names):
            for name in names[self.finish_filter.count() - 1:]:
                self.finish_filter.addItem(name, name)

    def _on_filters_changed(self) -> None:
        self.table_model.set_filters(self.status_filter.currentData(), self.finish_filter.currentData())

    def _on_table_row_changed(self, current, _previous) -> None:
        if not current.isValid():
            return
        results, row = self.table_model.results, self.table_model.results_row(current.row())
        prompt = results.prompts[row]
        heading = f"Line {prompt.line_no}" + (f" · {prompt.custom_id}" if prompt.custom_id else "")
        error = results.errors.get(row)
        self.detail.setPlainText(f"{heading} · {results.status_name(row)}\n\nPrompt:\n{prompt.preview()}\n\n"
                                 f"Output:\n{results.texts[row]}" + (f"\n\nError:\n{error}" if error else ""))

    def _on_model_engine_changed(self, status) -> None:
        if status.ready and not self._in_flight_set:
            self._in_flight_set = True
            self.settings.max_in_flight.setValue(default_max_in_flight(self.model.config.max_num_seqs))
        self._update_controls()

    def _update_controls(self) -> None:
        state = self.run.state if self.run is not None else ""
        self.run_button.setEnabled(self._can_run())
        self.pause_button.setEnabled(state in ("running", "paused"))
        self.pause_button.setText("Resume" if state == "paused" else "Pause")
        self.cancel_button.setEnabled(state in ("running", "paused"))
        self.open_button.setEnabled(not self._active())
        self.export_button.setEnabled(self._exportable())

    def _exportable(self) -> bool:
        """A file read whole, or a restored run, and no export going on."""
        shown = self.loader.done if self.loader is not None else self.run is not None
        return shown and self.exporting is None

    def shutdown(self) -> None:
        """Stops the pane's timers (the window is closing)."""
        self.timer.stop()
        self.loading.stop()
        if self.exporting is not None:
            self.exporting.stop()
