"""The search space as a table: one row an engine argument by vLLM's name, a tick to search it, its
range (``low – high``) or choices (``32, 64, 128``) editable in place, and a note. Arguments that may
change the model's outputs (fp8 KV cache, speculative decoding) come unticked and marked; ticked,
each trial's greedy outputs are compared with trial 0's. A range that does not read, or a value vLLM
refuses (the search's check before it starts), is named on its row and below the table; the text the
user typed stays."""
from __future__ import annotations

import re
from dataclasses import replace

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from workbench.tune.values import SearchParameter, SearchSpace

COLUMNS = ("Search", "vLLM argument", "Range or choices", "Note")
CHANGES_OUTPUTS = "changes outputs: off unless ticked; trials' outputs compared with the defaults'"
CHANGES_COLOUR, PROBLEM_COLOUR = "#fff3c4", "#fde2e2"
NUMBER = re.compile(r"[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?")
ERROR_STYLE = "color: #9b1c1c;"
GPU_ONLY_STYLE = "color: #5f6368;"
SPACE_WORDS = ("Search space",)  # how the search's checks begin a message about the space


class SpaceProblem(ValueError):
    """A row's text that does not read; ``name`` is its argument."""

    def __init__(self, name: str, message: str):
        super().__init__(message)
        self.name = name


def range_text(parameter: SearchParameter) -> str:
    if parameter.kind == "bool":
        return "off, on"
    if parameter.kind == "choice":
        return ", ".join(str(choice) for choice in parameter.choices)
    cast = int if parameter.kind == "int" else float
    text = f"{cast(parameter.low):g} – {cast(parameter.high):g}"
    if parameter.step:
        text += f" step {parameter.step:g}"
    return text + (" (log)" if parameter.log else "")


def read_range(parameter: SearchParameter, text: str) -> SearchParameter:
    """``parameter`` with the range or choices ``text`` says; SpaceProblem naming the fix if it does not read."""
    if parameter.kind == "bool":
        return parameter
    if parameter.kind == "choice":
        return replace(parameter, choices=_read_choices(parameter, text))
    numbers = NUMBER.findall(text.split("step")[0])
    step = NUMBER.findall(text.split("step")[1]) if "step" in text else []
    if len(numbers) != 2:
        raise SpaceProblem(parameter.name, f"{parameter.name}: “{text}” is not a range; write it as "
                                           f"“{range_text(parameter)}” (lowest – highest).")
    cast = int if parameter.kind == "int" else float
    try:
        low, high = (cast(float(n)) if cast is float else int(n) for n in numbers)
    except ValueError:
        raise SpaceProblem(parameter.name, f"{parameter.name}: whole numbers only (“{text}”).") from None
    if low > high:
        raise SpaceProblem(parameter.name, f"{parameter.name}: the lowest ({low:g}) is above the highest ({high:g}); "
                                           "swap them.")
    if parameter.log and low <= 0:
        raise SpaceProblem(parameter.name, f"{parameter.name}: a log-scale range starts above 0, not at {low:g}.")
    return replace(parameter, low=low, high=high, step=float(step[0]) if step else parameter.step)


def _read_choices(parameter: SearchParameter, text: str) -> tuple:
    words = [w.strip() for w in text.split(",") if w.strip()]
    if not words:
        raise SpaceProblem(parameter.name, f"{parameter.name}: name at least one choice, commas between "
                                           f"(“{range_text(parameter)}”).")
    kinds = {type(choice) for choice in parameter.choices}
    if kinds and kinds <= {int}:
        if not all(re.fullmatch(r"\d+", w) for w in words):
            raise SpaceProblem(parameter.name, f"{parameter.name}: whole numbers only, commas between (“{text}”).")
        return tuple(int(w) for w in words)
    if kinds and kinds <= {int, float}:
        if not all(NUMBER.fullmatch(w) for w in words):
            raise SpaceProblem(parameter.name, f"{parameter.name}: numbers only, commas between (“{text}”).")
        return tuple(float(w) for w in words)
    return tuple(words)


class SpaceTable(QWidget):
    """:meth:`space` reads the table back as a :class:`SearchSpace` (SpaceProblem for a row that does
    not read); :meth:`show_problems` puts the search's refusals on their rows."""

    def __init__(self, space: SearchSpace, gpu_only: tuple[str, ...] = ()):
        super().__init__(objectName="tuneSpace")
        self.table = QTableWidget(0, len(COLUMNS), objectName="tuneSpaceTable")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().hide()
        self.table.setSelectionMode(QAbstractItemView.NoSelection)
        self.table.setEditTriggers(QAbstractItemView.DoubleClicked | QAbstractItemView.EditKeyPressed
                                   | QAbstractItemView.SelectedClicked | QAbstractItemView.AnyKeyPressed)
        header = self.table.horizontalHeader()
        for column in range(3):
            header.setSectionResizeMode(column, QHeaderView.ResizeToContents)
        header.setStretchLastSection(True)
        self.problem = QLabel(objectName="tuneSpaceProblem", wordWrap=True, styleSheet=ERROR_STYLE, visible=False)
        self.elsewhere = QLabel("Searched on a GPU only: " + ", ".join(gpu_only) + ".", objectName="tuneSpaceGpuOnly",
                                wordWrap=True, styleSheet=GPU_ONLY_STYLE, visible=bool(gpu_only))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.elsewhere)
        layout.addWidget(self.problem)
        self.parameters: tuple[SearchParameter, ...] = ()
        self.set_space(space)

    def set_space(self, space: SearchSpace) -> None:
        self.parameters = space.parameters
        self.table.setRowCount(len(space.parameters))
        for row, parameter in enumerate(space.parameters):
            tick = QTableWidgetItem()
            tick.setFlags(Qt.ItemIsUserCheckable | Qt.ItemIsEnabled)
            tick.setCheckState(Qt.Checked if parameter.enabled else Qt.Unchecked)
            name = QTableWidgetItem(parameter.name)
            name.setFlags(Qt.ItemIsEnabled)
            values = QTableWidgetItem(range_text(parameter))
            values.setFlags(Qt.ItemIsEnabled | (Qt.ItemIsEditable if parameter.kind != "bool" else Qt.NoItemFlags))
            note = QTableWidgetItem("; ".join(x for x in (CHANGES_OUTPUTS if parameter.changes_outputs else "",
                                                          parameter.note) if x))
            note.setFlags(Qt.ItemIsEnabled)
            note.setToolTip(note.text())
            for column, item in enumerate((tick, name, values, note)):
                if parameter.changes_outputs:
                    item.setBackground(QBrush(QColor(CHANGES_COLOUR)))
                self.table.setItem(row, column, item)
        self.show_problems([])

    def row_of(self, name: str) -> int | None:
        return next((r for r, p in enumerate(self.parameters) if p.name == name), None)

    def set_ticked(self, name: str, ticked: bool) -> None:
        self.table.item(self.row_of(name), 0).setCheckState(Qt.Checked if ticked else Qt.Unchecked)

    def set_range_text(self, name: str, text: str) -> None:
        self.table.item(self.row_of(name), 2).setText(text)

    def space(self) -> SearchSpace:
        """The table as a space: ticks as ``enabled``, the edited ranges read (SpaceProblem if one does not)."""
        parameters = []
        for row, parameter in enumerate(self.parameters):
            ticked = self.table.item(row, 0).checkState() == Qt.Checked
            read = read_range(parameter, self.table.item(row, 2).text()) if ticked else parameter
            parameters.append(replace(read, enabled=ticked))
        return SearchSpace(tuple(parameters))

    def show_problems(self, messages: list[str]) -> list[str]:
        """Marks the rows whose argument a message names, and lists below the table those and the ones
        about the space as a whole; returns them (the rest are the caller's)."""
        named = []
        for row, parameter in enumerate(self.parameters):
            own = [m for m in messages if re.search(rf"\b{re.escape(parameter.name)}\b", m)]
            named += own
            item = self.table.item(row, 2)
            colour = PROBLEM_COLOUR if own else CHANGES_COLOUR if parameter.changes_outputs else ""
            item.setBackground(QBrush(QColor(colour)) if colour else QBrush())
            item.setToolTip("\n".join(own))
        named = list(dict.fromkeys(named + [m for m in messages if m.startswith(SPACE_WORDS)]))
        self.problem.setText("\n".join(named))
        self.problem.setVisible(bool(named))
        return named
