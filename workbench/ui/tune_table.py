"""The search's table of trials: one row a trial (its number, state, the settings it tried, what it
measured, why it failed), a running trial's row replaced when it ends, the best trial in bold and
vLLM's defaults (trial 0) in grey. A search has tens of trials, a long one on a GPU a thousand (most of them
settings refused before their start): a list, its columns sized on the rows in view."""
from __future__ import annotations

from functools import cache

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView

from workbench.tune.values import TrialResult

# (key, header, format): keys are TrialResult's flat names; the settings' columns follow them
FIGURE_COLUMNS = (("goal_value", "Goal", "goal"), ("output_tokens_per_s", "Output tok/s", "{:,.1f}"),
                  ("goodput_tokens_per_s", "Goodput tok/s", "{:,.1f}"), ("ttft_p50_s", "TTFT p50 s", "{:.3f}"),
                  ("ttft_p99_s", "TTFT p99 s", "{:.3f}"), ("itl_p99_ms", "TPOT p99 ms", "{:.1f}"),
                  ("gap_p99_ms", "ITL p99 ms", "{:.1f}"),
                  ("num_requests_done", "Done", "{:,}"), ("duration_s", "Took s", "{:.1f}"),
                  ("engine_start_s", "Start s", "{:.1f}"), ("output_agreement", "Same outputs", "{:.0%}"))
STATE_COLOURS = {"failed": "#9b1c1c", "running": "#1d4ed8"}
DEFAULTS_COLOUR = "#6b7280"


def param_text(value) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def settings_text(params: dict) -> str:
    return ", ".join(f"{name}={param_text(value)}" for name, value in params.items()) or "vLLM's defaults"


def goal_text(value: float) -> str:
    """A goal's figure whatever its unit: tok/s in whole numbers, seconds to three figures."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


SIZED_BY_ROWS = 0  # the rows a column's width is measured on: 0, those in view (Qt's default: the first 1,000)
DISPLAY, TOOLTIP, FOREGROUND, FONT, ALIGNMENT = (int(role.value) for role in (
    Qt.DisplayRole, Qt.ToolTipRole, Qt.ForegroundRole, Qt.FontRole, Qt.TextAlignmentRole))
RIGHT_ALIGNED = int((Qt.AlignRight | Qt.AlignVCenter).value)


class TrialTableModel(QAbstractTableModel):
    """Trials by number; ``param_names`` are the searched settings' columns (a trial that did not set
    one, trial 0 for instance, shows "default")."""

    def __init__(self):
        super().__init__()
        self.trials: list[TrialResult] = []
        self.param_names: list[str] = []
        self.best_number: int | None = None
        self._headers: list[str] | None = None  # read for every cell: made once per set of columns

    def headers(self) -> list[str]:
        if self._headers is None:
            self._headers = ["#", "State", *(header for _, header, _ in FIGURE_COLUMNS), *self.param_names, "Error"]
        return self._headers

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.trials)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.headers())

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if role == Qt.DisplayRole and orientation == Qt.Horizontal:
            return self.headers()[section]
        return None

    def data(self, index, role=DISPLAY):
        # asked for every role of every cell drawn or measured: roles compared as ints (a Qt enum's compare costs
        # microseconds, the table's sizing asks some 20,000 times)
        if not index.isValid():
            return None
        trial = self.trials[index.row()]
        if role == DISPLAY:
            return self.cell(trial, index.column())
        if role == TOOLTIP:  # its settings (and why it failed) wherever the pointer is on its row
            said = f"Trial {trial.number} failed: {trial.error}" if trial.error else f"Trial {trial.number}"
            return f"{said}\n{settings_text(trial.params)}"
        if role == FOREGROUND:
            colour = STATE_COLOURS.get(trial.state) or (DEFAULTS_COLOUR if trial.number == 0 else None)
            return _brush(colour) if colour else None
        if role == FONT and trial.number == self.best_number:
            return _bold()
        if role == ALIGNMENT and 0 < index.column() < self.columnCount() - 1 and index.column() != 1:
            return RIGHT_ALIGNED
        return None

    def cell(self, trial: TrialResult, column: int) -> str:
        """The text of ``trial``'s cell in ``column`` (the tests read the table through this)."""
        if column == 0:
            return str(trial.number) + (" (defaults)" if trial.number == 0 else "")
        if column == 1:
            return trial.shown_state
        if column == self.columnCount() - 1:
            return trial.error.splitlines()[0] if trial.error else ""
        if column >= 2 + len(FIGURE_COLUMNS):
            name = self.param_names[column - 2 - len(FIGURE_COLUMNS)]
            return param_text(trial.params[name]) if name in trial.params else "default"
        key, _, pattern = FIGURE_COLUMNS[column - 2]
        value = getattr(trial, key)
        timing = key in ("engine_start_s", "duration_s")  # a failed trial's too, where it got that far
        if value is None or (timing and not value) or (not timing and trial.state != "complete"):
            return ""  # nothing measured
        return goal_text(value) if pattern == "goal" else pattern.format(value)

    def set_param_names(self, names: list[str]) -> None:
        self.beginResetModel()
        self.param_names, self._headers = list(names), None
        self.endResetModel()

    def set_trials(self, trials: list[TrialResult], best_number: int | None = None) -> None:
        self.beginResetModel()
        self.trials = sorted(trials, key=lambda t: t.number)
        self.best_number = best_number
        self._add_param_names(trials)
        self.endResetModel()

    def put(self, trial: TrialResult) -> None:
        """A trial started or ended: its row added, or replaced where it was running."""
        row = next((i for i, t in enumerate(self.trials) if t.number == trial.number), None)
        if row is not None and not self._add_param_names([trial]):
            self.trials[row] = trial
            self.dataChanged.emit(self.index(row, 0), self.index(row, self.columnCount() - 1))
            return
        self.set_trials([t for t in self.trials if t.number != trial.number] + [trial], self.best_number)

    def set_best(self, number: int | None) -> None:
        if number != self.best_number:
            self.best_number = number
            if self.trials:
                self.dataChanged.emit(self.index(0, 0), self.index(len(self.trials) - 1, self.columnCount() - 1))

    def _add_param_names(self, trials: list[TrialResult]) -> bool:
        """Settings a trial set that no column shows yet get one; True if any did."""
        new = [name for t in trials for name in t.params if name not in self.param_names]
        self.param_names.extend(dict.fromkeys(new))
        self._headers = None
        return bool(new)

    def row_of(self, number: int) -> int | None:
        return next((i for i, t in enumerate(self.trials) if t.number == number), None)


@cache
def _brush(colour: str) -> QBrush:
    """One brush a colour (asked for at every cell drawn or measured)."""
    return QBrush(QColor(colour))


@cache
def _bold() -> QFont:
    font = QFont()
    font.setBold(True)
    return font


def columns_for_goal(goal_kind: str) -> dict[str, bool]:
    """Which figure columns a goal shows (header -> shown): the goal's own figure where it is not one of
    the others (goodput under limits), goodput where limits make it differ from output tok/s."""
    goodput = goal_kind == "goodput"
    return {"Goal": goodput, "Goodput tok/s": goodput}


def trials_view(model: TrialTableModel) -> QTableView:
    table = QTableView(objectName="tuneTrials")
    table.setModel(model)
    table.setSelectionBehavior(QAbstractItemView.SelectRows)
    table.setSelectionMode(QAbstractItemView.SingleSelection)
    table.setEditTriggers(QAbstractItemView.NoEditTriggers)
    table.verticalHeader().hide()
    table.verticalHeader().setSectionResizeMode(QHeaderView.Fixed)
    table.verticalHeader().setDefaultSectionSize(22)
    table.setWordWrap(False)
    header = table.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeToContents)
    # columns sized on the rows in view: Qt's default, the first 1,000 rows, read every cell of a long search
    # (1,217 trials, 500,000 reads of data(), took 10 s on the GUI thread at each new row)
    header.setResizeContentsPrecision(SIZED_BY_ROWS)
    header.setStretchLastSection(True)
    return table
