"""The batch pane: open a file of prompts, run it through the chat's engine, keep and export the results.

It shows one run at a time, or the file read but not run yet; the Runs picker brings back any run of
this session or a restored one, with its table and export. The run's logic (the bound, priority,
pause, cancel) is in ``workbench.batch``, the runs themselves in the application model, which keeps
them all (a new file does not let go of the last run). A 4 Hz timer reads the run's progress and the
results' version.
"""
from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Slot
from superqt import QElidingLabel
from superqt.utils import GeneratorWorker, create_worker
from PySide6.QtWidgets import (
    QComboBox, QFileDialog, QHBoxLayout, QLabel, QListWidget, QMenu, QMessageBox, QPlainTextEdit, QProgressBar,
    QPushButton, QSizePolicy, QSplitter, QVBoxLayout, QWidget,
)

from workbench.batch.export import export_rows
from workbench.batch.formats import split_row_limit
from workbench.batch.loader import PromptLoader
from workbench.batch.table_files import TableError
from workbench.batch.prompt_file import LineProblem
from workbench.batch.results import BatchResults
from workbench.batch.run import BatchRun, default_max_in_flight
from workbench.model.app_model import AppModel
from workbench.ui.batch_runs import PENDING, RunsPicker, file_name, leave_question, progress_text, run_title
from workbench.ui.batch_settings import RunSettingsForm
from workbench.ui.open_prompt_dialog import OpenPromptDialog
from workbench.ui.batch_table import (
    IMAGE_COLUMNS, REFERENCE_COLUMN, BatchTableModel, detail_text, results_view, status_choices,
)
from workbench.ui.chat_pane import ask_to_confirm
from workbench.ui.scrolling import scrolling

REFRESH_MS = 250
PROMPT_FILE_FILTER = ("Prompt files and datasets (*.jsonl *.json *.csv *.tsv *.txt *.xlsx *.xlsm *.parquet *.arrow "
                      "state.json dataset_dict.json);;All files (*)")
MAX_PROBLEMS_LISTED = 1000
SORT_PROGRESS_AFTER_MS = 200  # a sort still ranking its rows by then shows its progress bar
# Between chunks the reading thread lets the GUI thread have the interpreter: without the pause, reading a
# 100,000-line file held the window up to 450 ms at a time; with it, only the interpreter's own cleanups do.
GIL_PAUSE_S = 0.001
HELD_TIP = "The Tune tab's search is using the engine: run the batch once it ends, or Stop it there."


class WholeInTooltip(QElidingLabel):
    """One line, shortened with an ellipsis where the pane is narrower, whole in its tooltip."""

    def setText(self, text: str) -> None:
        super().setText(text)
        self.setToolTip(text)


class BatchPane(QWidget):
    """A prompt file read, run and shown; its runs send through the model's one owner of engine
    commands (the chat's engine)."""

    def __init__(self, model: AppModel):
        super().__init__()
        self.model = model
        self.confirm = ask_to_confirm  # (parent, title, text) -> bool; leaving a run's results asks through it
        self.loader: PromptLoader | None = None  # the file read last
        self.loader_run_id: str | None = None  # the run made of it; None while it has not run
        self._line_column_rows = 0  # the shown results' rows when the Line column was last fitted
        self.run: BatchRun | None = None  # the run shown; None: the file read, or nothing
        self.restored_ids = set(model.batch_runs)  # runs an earlier session stored
        self.table_model = BatchTableModel()
        self.settings = RunSettingsForm()
        self.loading: GeneratorWorker | None = None  # the file being read, off the GUI thread
        self.exporting: GeneratorWorker | None = None  # the results being written, off the GUI thread
        self.problem_box: QMessageBox | None = None
        self._in_flight_set = False
        self._build()
        self.timer = QTimer(self, interval=REFRESH_MS)
        self.timer.timeout.connect(self._on_timer_timeout)
        self.timer.start()
        model.engine_changed.connect(self._on_model_engine_changed)
        model.waiting_changed.connect(self._update_controls)  # a search holds the engine, or lets it go
        model.batch_run_added.connect(self._on_model_batch_runs_changed)
        model.batch_run_removed.connect(self._on_model_batch_run_removed)
        if model.batch_runs:  # the latest run an earlier session stored
            self.show_entry(list(model.batch_runs)[-1])
        self._update_controls()

    def _build(self) -> None:
        self.open_button = QPushButton("Open prompt file…", objectName="batchOpenButton")
        self.open_button.clicked.connect(lambda: self.open_file())
        self.file_label = WholeInTooltip("No prompt file open.", objectName="batchFileLabel")
        self.runs = RunsPicker()
        self.runs.chosen.connect(self.show_entry)
        self.runs.remove_requested.connect(self.remove_run)
        self.load_progress = QProgressBar(objectName="batchLoadProgress", maximum=1000, visible=False)
        self.problems = QListWidget(objectName="batchProblems", visible=False)
        self.problems.setMaximumHeight(90)
        self.problems.setWordWrap(True)  # a problem names the image, its path and the fix: read whole, not scrolled
        self.problems.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
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
        self.progress_label = QLabel("", objectName="batchProgressText", wordWrap=True)  # never widens the pane
        self.export_progress = QProgressBar(objectName="batchExportProgress", visible=False)
        # a sort by what the prompts hold ranks them on a worker (a kept run's read back from storage first)
        self.sort_progress = QProgressBar(objectName="batchSortProgress", visible=False,
                                          format="Sorting by the prompts: %p%")
        self.sort_progress.setMinimumWidth(self.sort_progress.fontMetrics().horizontalAdvance(
            "Sorting by the prompts: 100%") + 24)  # its words whole, beside the filters
        self.table_model.reading.connect(self._on_sort_reading)
        self.table_model.reading_failed.connect(self._on_sort_failed)
        self.status_filter = QComboBox(objectName="batchStatusFilter")
        for label, code in status_choices():
            self.status_filter.addItem(label, code)
        self.finish_filter = QComboBox(objectName="batchFinishFilter")
        self.finish_filter.addItem("all finish reasons", None)
        self.status_filter.currentIndexChanged.connect(self._on_filters_changed)
        self.finish_filter.currentIndexChanged.connect(self._on_filters_changed)
        self.table = results_view(self.table_model)
        self.table.selectionModel().currentRowChanged.connect(self._on_table_row_changed)
        self.detail = QPlainTextEdit(objectName="batchDetail", readOnly=True)
        self.detail.setPlaceholderText("Select a row to see its prompt and whole output.")
        self._lay_out()

    def _lay_out(self) -> None:
        self.file_label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)  # a long line never widens the pane
        self.settings_button = QPushButton("Run settings", objectName="batchSettingsButton", checkable=True)
        self.settings_button.setToolTip("Sampling, chat template, system prompt and how many requests the "
                                        "batch keeps in the engine")
        self.settings_summary = QElidingLabel(objectName="batchSettingsSummary")  # the whole line in its tooltip
        self.settings_summary.setStyleSheet("color: #555;")
        self.settings.edited.connect(self._show_settings_summary)
        self._show_settings_summary()
        file_row = QHBoxLayout()
        file_row.addWidget(self.open_button)
        file_row.addWidget(self.file_label, 1)
        file_row.addWidget(self.settings_button)
        summary_row = QHBoxLayout()
        summary_row.addWidget(self.settings_summary, 1)
        controls = QHBoxLayout()
        for widget in (self.run_button, self.pause_button, self.cancel_button, self.export_button):
            controls.addWidget(widget)
        controls.addWidget(self.progress, 1)
        filters = QHBoxLayout()
        filters.addWidget(QLabel("Show"))
        filters.addWidget(self.status_filter)
        filters.addWidget(self.finish_filter)
        filters.addStretch(1)
        filters.addWidget(self.sort_progress)
        filters.addWidget(self.export_progress)
        rows = QSplitter(Qt.Vertical, objectName="batchRowsSplitter")
        rows.addWidget(self.table)
        rows.addWidget(self.detail)
        rows.setSizes([500, 120])
        main = QWidget()
        column = QVBoxLayout(main)
        column.setContentsMargins(0, 0, 0, 0)
        column.addLayout(file_row)
        column.addLayout(summary_row)
        column.addWidget(self.runs)
        column.addWidget(self.load_progress)
        column.addWidget(self.problems)
        column.addLayout(controls)
        column.addWidget(self.progress_label)
        column.addLayout(filters)
        column.addWidget(rows, 1)
        splitter = QSplitter(objectName="batchSplitter")
        splitter.addWidget(main)
        settings = scrolling(self.settings)
        settings.setObjectName("batchSettingsArea")
        # the settings column, opened on demand, as wide as its form needs and never cut; the results
        # table has the rest
        settings.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        settings.setMinimumWidth(self.settings.minimumSizeHint().width() + settings.verticalScrollBar().sizeHint().width())
        settings.hide()
        self.settings_button.toggled.connect(settings.setVisible)
        splitter.addWidget(settings)
        splitter.setChildrenCollapsible(False)
        splitter.setStretchFactor(0, 1)
        splitter.setSizes([1000, settings.minimumWidth()])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)

    @Slot()
    def _show_settings_summary(self) -> None:
        text = self.settings.summary()
        self.settings_summary.setText(text)
        self.settings_summary.setToolTip(text)

    # -------------------------------------------------------------- opening a file
    @Slot()
    def open_file(self, path: str | None = None, fmt: str | None = None, column: str | None = None,
                  split: str | None = None, max_rows: int | None = None) -> bool:
        """Reads a prompt file off the GUI thread, then shows it in the table; asks for the file and format
        where not given, and first whether the run shown may leave the pane (it stays under Runs). A path
        ending in ``#N`` (ms-swift's ``dataset#N``) reads the first N prompts."""
        if self._reading():
            return False
        path = path or QFileDialog.getOpenFileName(self, "Open a prompt file or dataset", "", PROMPT_FILE_FILTER)[0]
        if path:
            path, max_rows = split_row_limit(path, max_rows)
        if not path:
            return False
        if fmt is None:
            dialog = OpenPromptDialog(path, self, max_rows)
            dialog.finished.connect(dialog.deleteLater)  # one a file: none kept under the pane
            if not dialog.exec():
                return False
            (fmt, column), split, max_rows = dialog.chosen(), dialog.split(), dialog.max_rows()
        try:
            loader = PromptLoader(path, fmt, column, on_problem="ask", split=split, max_rows=max_rows)
        except (OSError, TableError) as exc:
            shown = self._shown_name()
            self.file_label.setText(f"Could not open {Path(path).name}: {str(exc).rstrip('.')}."
                                    + (f" Still shown: {shown}." if shown else ""))
            return False
        # asked last: a run going on is cancelled only for a file that opens and a format the user chose
        if not self._may_leave_run(Path(path).name):
            loader.close()
            return False
        self.loader, self.loader_run_id = loader, None
        self.problems.clear()
        self._show(None, BatchResults())  # the loader's rows are its thread's until it has read them
        self.file_label.setText(f"Reading {Path(path).name}…")
        self.load_progress.setValue(0)
        self.load_progress.show()
        self._read_on()
        self._update_controls()
        return True

    def _shown_name(self) -> str:
        """The file whose prompts the table shows ("" for none)."""
        if self.run is not None:
            return file_name(self.run)
        return self.loader.path.name if self.loader is not None and self.table_model.rowCount() else ""

    def _read_on(self) -> None:
        """Reads the loader off the GUI thread until the file ends or a line asks the user."""
        self.loading = create_worker(read_prompts, self.loader, _start_thread=False,
                                     _connect={"errored": self._on_loading_errored})
        self.loading.yielded.connect(lambda fraction: self.load_progress.setValue(int(fraction * 1000)))
        self.loading.returned.connect(self._on_loading_finished)
        self.loading.start()

    def _may_leave_run(self, new_name: str) -> bool:
        """Asks before the run shown leaves the pane: a run still going is cancelled first (or kept, and
        the file not opened); an ended one stays under Runs. True where nothing is asked."""
        if self.run is None:
            return True
        going = self.run.state in ("running", "paused")
        if not self.confirm(self, *leave_question(self.run, new_name)):
            return False
        if going:
            self.run.cancel()
        return True

    def _take_read_rows(self) -> PromptLoader:
        """The reading thread has ended: its rows and problems are the pane's to show."""
        self.loading = None
        self._list_problems()
        if self.run is None:
            self._show(None, self.loader.results)
        return self.loader

    def _on_loading_finished(self, _result=None) -> None:
        loader = self._take_read_rows()
        if loader.awaiting is not None:
            self._ask_about_problem(loader.awaiting)
            self._update_controls()
            return
        self.load_progress.hide()
        self.file_label.setText(loader.summary())
        self._update_controls()
        self._sync_runs()

    def _on_loading_errored(self, error: Exception) -> None:
        """The file could not be read on (gone, unreadable, not text): what was read stays shown."""
        loader = self._take_read_rows()
        self.load_progress.hide()
        self.file_label.setText(f"Could not read {loader.path.name} on after {loader.results.num_rows:,} prompts: "
                                f"{error}. Check the file, then open it again.")
        self._update_controls()

    def _list_problems(self) -> None:
        shown = self.problems.count()
        for problem in self.loader.problems[shown:MAX_PROBLEMS_LISTED]:
            self.problems.addItem(str(problem))
        self.problems.setVisible(bool(self.loader.problems))

    def _ask_about_problem(self, problem: LineProblem) -> None:
        box = QMessageBox(QMessageBox.Warning, f"Malformed {problem.unit}",
                          f"{problem.unit.capitalize()} {problem.line_no}: {problem.reason}",
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
        self._read_on()
        self._update_controls()

    # -------------------------------------------------------------- running
    @Slot()
    def start_run(self) -> BatchRun | None:
        if not self._can_run():
            return None
        run = self.model.new_batch_run(self.loader.results, self.settings.settings(),
                                       source=(str(self.loader.path), self.loader.fmt))
        self.run, self.loader_run_id = run, run.run_id
        run.start()
        self._on_timer_timeout()
        self._sync_runs()
        return run

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
        loaded = self._pending() and self.loader.done and self.loader.results.num_rows > 0
        another = any(run.state == "running" for run in self.model.batch_runs.values())
        free = self.model.engine.ready and not self.model.engine_hold  # a search's trials use it: not into them
        return loaded and self.run is None and free and not self._reading() and not another

    def _pending(self) -> bool:
        """A file read (or being read) that has not run yet."""
        return self.loader is not None and self.loader_run_id is None

    def _reading(self) -> bool:
        return self.loading is not None or self.problem_box is not None

    # -------------------------------------------------------------- the runs
    @Slot(str)
    def show_entry(self, key: str) -> None:
        """Shows a run of the model by its id, or (``PENDING``) the file read but not run yet."""
        if self._reading():
            self._sync_runs()
            return
        if key == PENDING:
            if self._pending():
                self._show(None, self.loader.results)
                self.file_label.setText(self.loader.summary())
            return
        run = self.model.batch_runs.get(key)
        if run is None:
            return
        self._show(run, run.results)
        when = "Restored from the last session" if key in self.restored_ids else f"Run {run.run_no}"
        self.file_label.setText(f"{when}: {run.results.num_rows:,} prompts of {file_name(run)}.")
        self._on_timer_timeout()

    def _show(self, run: BatchRun | None, results: BatchResults) -> None:
        """Puts ``results`` in the table with the progress line, the detail and the filters afresh."""
        self.run = run
        self.table_model.set_results(results)
        self._line_column_rows = 0
        self._fit_line_column()
        self.table.setColumnHidden(REFERENCE_COLUMN, results.num_references == 0)
        for column in IMAGE_COLUMNS:
            self.table.setColumnHidden(column, results.num_image_rows == 0)
        self.detail.clear()
        self.progress.setValue(0)
        self.progress_label.setText("")
        for combo in (self.status_filter, self.finish_filter):
            combo.blockSignals(True)
            combo.setCurrentIndex(0)
            combo.blockSignals(False)
        while self.finish_filter.count() > 1:
            self.finish_filter.removeItem(1)
        from_loader = run is None or run.run_id == self.loader_run_id
        self.problems.setVisible(from_loader and self.loader is not None and bool(self.loader.problems))
        self._sync_runs()
        self._update_controls()

    def _sync_runs(self) -> None:
        entries = [(run_id, run_title(run, run_id in self.restored_ids))
                   for run_id, run in self.model.batch_runs.items()]
        if self._pending():
            rows = self.loader.results.num_rows
            state = "reading…" if not self.loader.done else "not run yet"
            entries.append((PENDING, f"{Path(self.loader.path).name} · {rows:,} prompts · {state}"))
        self.runs.set_entries(entries, self.run.run_id if self.run is not None else PENDING)
        shown = self.run
        self.runs.remove_button.setEnabled(shown is not None and shown.state not in ("running", "paused"))

    def remove_run(self, run_id: str | None) -> bool:
        """Takes an ended run off the model (asks first); a run still going stays."""
        run = self.model.batch_runs.get(run_id or "")
        if run is None or run.state in ("running", "paused"):
            return False
        if not self.confirm(self, "Remove a batch run",
                            f"Remove {run_title(run)} from Runs? Its results leave this window; the rows that "
                            "ran stay in the session's record."):
            return False
        self.model.forget_batch_run(run_id)
        return True

    def _on_model_batch_runs_changed(self, _run_id: str) -> None:
        self._sync_runs()

    def _on_model_batch_run_removed(self, run_id: str) -> None:
        if self.run is not None and self.run.run_id == run_id:
            if self._pending():
                self.show_entry(PENDING)
            elif self.model.batch_runs:
                self.show_entry(list(self.model.batch_runs)[-1])
            else:
                self._show(None, BatchResults())
                self.file_label.setText("No prompt file open.")
        self._sync_runs()

    # -------------------------------------------------------------- exporting
    def _ask_export(self, kind: str) -> None:
        suffix = "csv" if kind == "csv" else "jsonl"
        path = QFileDialog.getSaveFileName(self, "Export results", f"batch-results.{suffix}", f"*.{suffix}")[0]
        if path:
            self.export_to(path, kind)

    def export_format(self, kind: str) -> str:
        """The writer for "jsonl" or "csv": an OpenAI batch input exports JSONL as vllm run-batch writes it."""
        fmt = self.run.source[1] if self.run is not None else self.loader.fmt if self.loader is not None else ""
        return "openai" if kind == "jsonl" and fmt == "openai" else kind

    def export_to(self, path: str, kind: str) -> GeneratorWorker | None:
        """Writes the results shown to ``path`` off the GUI thread, the progress bar counting rows."""
        if not self._exportable():
            return None
        info = self.model.engine.info
        model_name = info.model if info is not None else self.model.config.model
        results = self.table_model.results
        total = max(1, results.num_rows)
        self.export_progress.setMaximum(total)
        self.export_progress.show()
        self.exporting = create_worker(export_rows, results, path, self.export_format(kind), model_name,
                                       _start_thread=False,
                                       _connect={"errored": lambda error: self._on_export_ended(path, error)})
        self.exporting.yielded.connect(lambda written: self.export_progress.setValue(min(written, total)))
        self.exporting.returned.connect(lambda _: self._on_export_ended(path, None))
        self.exporting.start()
        self._update_controls()
        return self.exporting

    def _on_export_ended(self, path: str, error: Exception | None) -> None:
        self.exporting = None
        self.export_progress.hide()
        reason = (error.strerror or str(error)) if isinstance(error, OSError) else str(error)
        self.progress_label.setText(f"Exported to {path}" if error is None else
                                    f"The export to {path} failed: {reason}. The results are kept here: choose "
                                    "another folder (or free some space) and export again.")
        self._update_controls()

    # -------------------------------------------------------------- keeping up
    def _on_timer_timeout(self) -> None:
        for run in self.model.batch_runs.values():
            run.poll()  # rows whose images have been read go to the engine
        self.table_model.refresh()
        self._fit_line_column()
        self._sync_finish_filter()
        if self.run is not None:
            progress = self.run.progress()
            self.progress.setMaximum(max(1, progress.num_rows))
            self.progress.setValue(progress.num_finished - progress.num_cancelled)  # rows that ran
            self.progress_label.setText(progress_text(progress))
        self._sync_runs()
        self._update_controls()

    def _fit_line_column(self) -> None:
        """The Line column as wide as the largest line number shown (a file of 100,000 lines or more showed
        "100…"); it only widens, so the columns right of it do not move back and forth."""
        results = self.table_model.results
        if results.num_rows == self._line_column_rows:
            return  # the GUI timer's tick: nothing to do unless rows came
        self._line_column_rows = results.num_rows
        widest = self.table.fontMetrics().horizontalAdvance(str(int(results.column("line_no").max()))) + 16
        header = self.table.horizontalHeader()
        if widest > header.sectionSize(0):
            header.resizeSection(0, widest)

    def _sync_finish_filter(self) -> None:
        names = [n for n in self.table_model.results.finish_reason_names if n]
        if self.finish_filter.count() - 1 != len(names):
            for name in names[self.finish_filter.count() - 1:]:
                self.finish_filter.addItem(name, name)

    def _on_sort_reading(self, done: int, total: int) -> None:
        if total == 0:
            self.sort_progress.hide()
        elif done == 0:  # shown only for a sort that takes a while: a short one would flash it for a frame
            QTimer.singleShot(SORT_PROGRESS_AFTER_MS, self,
                              lambda: self.sort_progress.setVisible(self.table_model.sorting))
        self.sort_progress.setMaximum(max(total, 1))
        self.sort_progress.setValue(done)

    def _on_sort_failed(self, message: str) -> None:
        self.progress_label.setText(message)
        self.table.horizontalHeader().setSortIndicator(-1, Qt.AscendingOrder)  # the file's order, as shown

    def _on_filters_changed(self) -> None:
        self.table_model.set_filters(self.status_filter.currentData(), self.finish_filter.currentData())

    def _on_table_row_changed(self, current, _previous) -> None:
        if not current.isValid():
            return
        results, row = self.table_model.results, self.table_model.results_row(current.row())
        self.detail.setPlainText(detail_text(results, row))

    def _on_model_engine_changed(self, status) -> None:
        if status.ready and not self._in_flight_set:
            self._in_flight_set = True
            self.settings.max_in_flight.setValue(default_max_in_flight(self.model.config.max_num_seqs))
        self._update_controls()

    def _update_controls(self) -> None:
        state = self.run.state if self.run is not None else ""
        self.run_button.setEnabled(self._can_run())
        self.run_button.setToolTip(HELD_TIP if self.model.engine_hold else "")
        self.pause_button.setEnabled(state in ("running", "paused"))
        self.pause_button.setText("Resume" if state == "paused" else "Pause")
        self.cancel_button.setEnabled(state in ("running", "paused"))
        self.open_button.setEnabled(not self._reading())
        self.runs.combo.setEnabled(not self._reading())
        self.export_button.setEnabled(self._exportable())

    def _exportable(self) -> bool:
        """A run shown, or a file read whole with prompts in it, and no export going on."""
        shown = self.run is not None or (self._pending() and self.loader.done and self.loader.results.num_rows > 0)
        return shown and self.exporting is None

    def shutdown(self) -> None:
        """Stops the pane's timers (the window is closing)."""
        self.timer.stop()
        for job in (self.loading, self.exporting):
            if job is not None:
                job.quit()  # at its next chunk of lines or rows


def read_prompts(loader: PromptLoader):
    """Off the GUI thread: reads ``loader`` 500 lines (or 50 ms) at a time, yielding the fraction read, until
    the file ends or a malformed line waits for the user's decision (``loader.awaiting``)."""
    while loader.read(500):
        yield loader.fraction
        time.sleep(GIL_PAUSE_S)
    yield loader.fraction
