"""The Sessions window: past runs of the app with their headline figures; one opened with its plots
drawn from the stored series; two engine runs (from one session or two) compared side by side with
their configurations as a diff; a session deleted after asking. The figures come from
``workbench.sessions`` (Qt-free); this window only shows them."""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView, QComboBox, QFormLayout, QHBoxLayout, QHeaderView, QLabel, QMessageBox, QProgressBar, QPushButton,
    QSplitter, QTableWidget, QTableWidgetItem, QTabWidget, QVBoxLayout, QWidget,
)

from workbench.sessions.compare import Comparison, compare_runs, format_argument, format_difference, format_value
from workbench.sessions.listing import SessionListing, read_listing
from workbench.sessions.stored import EngineRunRecord, SessionSummary, delete_session, open_read_only, session_series
from workbench.storage.series import MEMORY
from workbench.ui.memory_panel import MemoryPanel
from workbench.ui.live_plot import label_time_axis
from workbench.ui.stored_plots import TIME_LABEL, label_stored_time_axes, show_memory_series, show_series
from workbench.ui.engine_region import panel_area
from workbench.ui.latest_read import LatestRead
from workbench.ui.stats_plots import StatsPlotsView
from workbench.ui.window_layout import resize_within_screen

SESSION_COLUMNS = ("Started", "Model", "Engine runs", "Requests", "Output tok/s", "TTFT p50")
BETTER = QBrush(QColor("#2e7d32"))
WORSE = QBrush(QColor("#c62828"))
CHANGED = QBrush(QColor("#fff3c4"))


def _when(seconds: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds)) if seconds else "—"


def _table(headers: tuple[str, ...]) -> QTableWidget:
    table = QTableWidget(0, len(headers))
    table.setHorizontalHeaderLabels(headers)
    table.setEditTriggers(QAbstractItemView.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectRows)
    table.verticalHeader().hide()
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
    table.horizontalHeader().setStretchLastSection(True)
    return table


def _fill(table: QTableWidget, rows: list[list[str]]) -> None:
    table.setRowCount(len(rows))
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            table.setItem(r, c, QTableWidgetItem(text))


SIDE_BY_SIDE_PX = 1000  # the window's width from which the comparison's two tables fit side by side
OPEN_HINT = "Choose a session above and press Open (or double-click it) to draw its stored plots."


class SessionsView(QWidget):
    """Reads the database at ``db_path`` through a connection of its own; ``current_session``: this
    run of the app (not deleted from here). The sessions and a comparison are read off the GUI thread:
    ``read_done`` and ``compare_done`` say when they are shown."""

    read_done = Signal()
    compare_done = Signal()

    def __init__(self, db_path: Path, current_session: str | None = None, parent: QWidget | None = None):
        super().__init__(parent, Qt.Window)
        self.setObjectName("sessionsView")
        self.setWindowTitle("Sessions — vLLM Workbench")
        self.db_path, self.current_session = Path(db_path), current_session
        self.sessions: list[SessionSummary] = []
        self.runs: list[tuple[SessionSummary, int, EngineRunRecord]] = []
        # the sessions and a comparison of two runs, each read on a worker, the latest ask winning
        self.listing_read = LatestRead(self, self._on_listing_read, self._on_listing_failed, self._reading_ended)
        self.comparison_read = LatestRead(self, self._on_compared, self._on_compare_failed, self.compare_done.emit)
        self.compared, self.config_lines = [], []
        self.session_table = _table(SESSION_COLUMNS)
        # Open, Export and Delete act on one session: a Ctrl- or Shift-click chooses another, never a second
        self.session_table.setSelectionMode(QAbstractItemView.SingleSelection)
        self.session_table.itemSelectionChanged.connect(self._on_session_table_selection_changed)
        self.session_table.cellDoubleClicked.connect(lambda _row, _column: self.open_selected())
        self.session_table.setToolTip("Double-click a session to draw its stored plots and memory.")
        self.open_button = QPushButton("Open")
        self.open_button.clicked.connect(self.open_selected)
        self.delete_button = QPushButton("Delete…")
        self.delete_button.clicked.connect(self.delete_selected)
        self.export_button = QPushButton("Export…")
        self.export_button.clicked.connect(self.export_selected)
        self.problem = QLabel(objectName="sessionsProblem", wordWrap=True)
        self.problem.hide()
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.clicked.connect(self.refresh)
        self.reading_note = QLabel(objectName="sessionsReading")
        self.reading_bar = QProgressBar(objectName="sessionsReadingBar", minimum=0, maximum=0, visible=False)
        self.reading_bar.setMaximumWidth(160)
        # its seven plots made a turn of the event loop each, once the window shows: made at once, they held
        # the window 150 ms before it could show
        self.plots = StatsPlotsView(time.time(), made_at_once=False)
        self.plots.built.connect(lambda: label_stored_time_axes(self.plots))
        self.plots.paused.hide()
        self.plots.follow.hide()
        self.plots.totals.setText(OPEN_HINT)
        self.tabs = QTabWidget()
        self.plots_area = panel_area(self.plots)  # the plots keep their least height and scroll down
        self.plots_area.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.tabs.addTab(self.plots_area, "Plots")
        self.memory = MemoryPanel(time.time())  # the memory panel's stored series
        self.memory.paused.hide()
        self.memory.text.setText("Open a session to draw the memory its engine runs used.")
        label_time_axis(self.memory.plot, TIME_LABEL)
        self.tabs.addTab(self.memory, "Memory")
        self.tabs.addTab(self._build_compare(), "Compare")
        buttons = QHBoxLayout()
        for button in (self.open_button, self.export_button, self.delete_button, self.refresh_button):
            buttons.addWidget(button)
        buttons.addWidget(self.reading_bar)
        buttons.addWidget(self.reading_note, 1)
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.addWidget(self.problem)
        top_layout.addWidget(self.session_table)
        top_layout.addLayout(buttons)
        splitter = QSplitter(Qt.Vertical)
        splitter.addWidget(top)
        splitter.addWidget(self.tabs)
        splitter.setSizes([220, 620])
        QVBoxLayout(self).addWidget(splitter)
        resize_within_screen(self, 1200, 860)
        self._on_session_table_selection_changed()  # Open, Export and Delete greyed until a session is read and chosen
        self.refresh()

    def _build_compare(self) -> QWidget:
        self.run_a, self.run_b = QComboBox(), QComboBox()
        for combo in (self.run_a, self.run_b):
            combo.currentIndexChanged.connect(self.compare)
        choose = QFormLayout()
        choose.addRow("A", self.run_a)
        choose.addRow("B", self.run_b)
        self.figure_table = _table(("Figure", "A", "B", "Difference (B − A)"))
        self.config_table = _table(("Engine argument", "A", "B"))
        # A and B share the width, a long value (a model's path) shortened in its middle, whole in its tooltip:
        # B is never pushed out of sight by A
        for column in (1, 2):
            self.config_table.horizontalHeader().setSectionResizeMode(column, QHeaderView.Stretch)
        self.config_table.setTextElideMode(Qt.ElideMiddle)
        self.config_table.setWordWrap(False)
        self.compare_note = QLabel()
        self.compare_tables = QSplitter(Qt.Horizontal)  # side by side; one above the other in a narrow window
        self.compare_tables.addWidget(self.figure_table)
        self.compare_tables.addWidget(self.config_table)
        self.compare_tables.setSizes([560, 560])
        widget = QWidget()
        layout = QVBoxLayout(widget)
        layout.addLayout(choose)
        layout.addWidget(self.compare_note)
        layout.addWidget(self.compare_tables, 1)
        return widget

    def resizeEvent(self, event) -> None:
        """The comparison's two tables side by side where both fit whole, else one above the other: in a
        narrow window each kept its columns past the right edge, B and the difference out of sight."""
        super().resizeEvent(event)
        side_by_side = event.size().width() >= SIDE_BY_SIDE_PX
        orientation = Qt.Horizontal if side_by_side else Qt.Vertical
        if self.compare_tables.orientation() != orientation:
            self.compare_tables.setOrientation(orientation)
            self.compare_tables.setSizes([560, 560])

    @property
    def reading(self):
        """The worker reading the sessions (None: none reads)."""
        return self.listing_read.worker

    @property
    def comparing(self):
        """The worker comparing two runs (None: none compares)."""
        return self.comparison_read.worker

    # ------------------------------------------------------------------ sessions
    def refresh(self) -> None:
        """Reads the sessions again, off the GUI thread (a large session takes seconds); the table is
        filled when they come, ``read_done`` then emitted."""
        self.refresh_button.setEnabled(False)
        self.reading_note.setText(f"Reading the sessions in {self.db_path}…")
        self.reading_bar.show()
        self.listing_read.ask(read_listing, self.db_path)

    def _reading_ended(self) -> None:
        self.refresh_button.setEnabled(True)
        self.reading_bar.hide()
        self.reading_note.setText("")
        self.read_done.emit()

    def _on_listing_failed(self, error: Exception) -> None:
        # a damaged or missing file: said, and nothing is shown
        self.sessions, self.runs = [], []
        reason = error if isinstance(error, sqlite3.Error) else f"{type(error).__name__}: {error}"
        self.problem.setText(f"The sessions in {self.db_path} cannot be read ({reason}). The band above the "
                             "main window's panes says what to do with the database.")
        self.problem.show()
        _fill(self.session_table, [])
        self._on_session_table_selection_changed()

    def _on_listing_read(self, listing: SessionListing) -> None:
        self.problem.hide()
        chosen = self.selected()
        self.sessions = [line.summary for line in listing.lines]
        _fill(self.session_table, [[_when(line.summary.started_s),
                                    ", ".join(Path(m).name for m in line.summary.models) or "—",
                                    str(len(line.summary.runs)), f"{line.summary.num_requests:,}",
                                    format_value(line.output_tokens_per_s, "tok/s"),
                                    format_value(line.ttft_ms_p50, "ms")] for line in listing.lines])
        if self.sessions:  # the session chosen before a refresh, else the newest: Open and Export at hand
            ids = [summary.session_id for summary in self.sessions]
            self.session_table.selectRow(ids.index(chosen.session_id) if chosen and chosen.session_id in ids else 0)
        self.runs = list(listing.runs)
        labels = [f"{_when(s.started_s)} · run {n} · {Path(run.model).name} · max_num_seqs "
                  f"{run.resolved_config().get('max_num_seqs')}" for s, n, run in self.runs]
        for combo in (self.run_a, self.run_b):
            combo.blockSignals(True)
            combo.clear()
            combo.addItems(labels)
            combo.blockSignals(False)
        if len(labels) >= 2:
            self.choose_runs(len(labels) - 2, len(labels) - 1)  # the two latest runs, the older as A
        self._on_session_table_selection_changed()

    def selected(self) -> SessionSummary | None:
        rows = self.session_table.selectionModel().selectedRows()
        return self.sessions[rows[0].row()] if rows else None

    def _on_session_table_selection_changed(self) -> None:
        chosen = self.selected()
        self.open_button.setEnabled(chosen is not None)
        self.export_button.setEnabled(chosen is not None)
        self.delete_button.setEnabled(chosen is not None and chosen.session_id != self.current_session)

    def open_session(self, session_id: str) -> None:
        """Draws the session's stored series (every engine run, one after the other)."""
        summary = next(s for s in self.sessions if s.session_id == session_id)
        self.plots.make_the_rest()  # asked for within the window's first moments
        connection = open_read_only(self.db_path)
        try:
            series = session_series(connection, list(summary.runs))
            memory = session_series(connection, list(summary.runs), MEMORY)
        finally:
            connection.close()
        self.plots.time_origin = self.memory.time_origin = summary.started_s
        show_series(self.plots, series)
        show_memory_series(self.memory, memory)
        self.tabs.setCurrentWidget(self.plots_area)

    def open_selected(self) -> None:
        chosen = self.selected()
        if chosen is not None:
            self.open_session(chosen.session_id)

    def delete_selected(self, confirm=None) -> bool:
        """Deletes the selected session after asking (``confirm``: the question, for tests)."""
        chosen = self.selected()
        if chosen is None or chosen.session_id == self.current_session:
            return False
        question = (f"Delete the session of {_when(chosen.started_s)} with its {len(chosen.runs)} engine runs and "
                    "their plotted series? Its conversations and batch runs stay in the Chat and Batch panes.")
        ask = confirm or (lambda text: QMessageBox.question(self, "Delete session", text) == QMessageBox.Yes)
        if not ask(question):
            return False
        delete_session(self.db_path, chosen.session_id)
        self.refresh()
        return True

    def export_selected(self) -> None:
        """Exports the selected session (its plots drawn from the stored series; no heatmap: it is past)."""
        from PySide6.QtWidgets import QFileDialog

        from workbench.ui.session_export_action import start_session_export, tell_export_done

        chosen = self.selected()
        parent = QFileDialog.getExistingDirectory(self, "Export the session into a new folder in…") if chosen else ""
        if parent:
            stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(chosen.started_s))
            self._export = start_session_export(self, self.db_path, chosen.session_id,
                                                Path(parent) / f"workbench-session-{stamp}",
                                                on_done=lambda folder, error: tell_export_done(self, folder, error),
                                                storage=getattr(self.parentWidget(), "storage", None))

    # ------------------------------------------------------------------ comparing two engine runs
    def choose_runs(self, a: int, b: int) -> None:
        for combo, index in ((self.run_a, a), (self.run_b, b)):
            combo.blockSignals(True)
            combo.setCurrentIndex(index)
            combo.blockSignals(False)
        self.compare()

    def compare(self) -> None:
        """Compares the two runs chosen, off the GUI thread (every request of both is read); the tables are
        filled when the figures come, ``compare_done`` then emitted."""
        a, b = self.run_a.currentIndex(), self.run_b.currentIndex()
        if a < 0 or b < 0:
            return
        self.compare_note.setText("Reading both runs' requests…")
        self.comparison_read.ask(compare_runs, self.db_path, self.runs[a][2].run_key, self.runs[b][2].run_key)

    def _on_compare_failed(self, error: Exception) -> None:
        self.compare_note.setText(f"The two runs cannot be read ({type(error).__name__}: {error}).")

    def _on_compared(self, comparison: Comparison) -> None:
        self.compared = comparison.figures
        _fill(self.figure_table, [[row.label, format_value(row.a, row.unit), format_value(row.b, row.unit),
                                   format_difference(row)] for row in self.compared])
        for index, row in enumerate(self.compared):
            if row.better:
                self.figure_table.item(index, 3).setForeground(BETTER if row.better == "b" else WORSE)
        self.config_lines = comparison.config_lines
        _fill(self.config_table, [[line.key, format_argument(line.a), format_argument(line.b)]
                                  for line in self.config_lines])
        for row in range(self.config_table.rowCount()):
            for column in (1, 2):
                item = self.config_table.item(row, column)
                item.setToolTip(item.text())
        for index, line in enumerate(self.config_lines):
            if line.changed:
                for column in range(3):
                    self.config_table.item(index, column).setBackground(CHANGED)
        changed = sum(line.changed for line in self.config_lines)
        differ = ("No engine argument differs." if changed == 0 else
                  f"{changed} engine {'argument differs' if changed == 1 else 'arguments differ'} (highlighted, "
                  "listed first).")
        self.compare_note.setText(f"{differ} Green: B is better; red: B is worse.")
