"""The preset's engine values as a table: the value written (edited in place, within its range), the
value it resolves to here, and the running engine's; rows that would change are marked. A value left
to vLLM says so with vLLM's own default ("vLLM default: 2048"), never "None"."""
from __future__ import annotations

import json

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView, QCheckBox, QDoubleSpinBox, QHeaderView, QLineEdit, QSpinBox, QTableWidget, QTableWidgetItem,
)

from workbench.presets.checks import RANGES, for_platform
from workbench.presets.resolve import ResolvedPreset

CHANGED = QColor("#fff3c4")
COLUMNS = ("argument", "preset", "here", "running")


NOT_READ = object()  # vLLM's defaults not read yet in this process


def value_text(value, default=NOT_READ) -> str:
    """An engine argument's value for the user: as set, or vLLM's default for it (``default``: the
    value vLLM gives it, None where vLLM decides as the engine starts, NOT_READ before they are read)."""
    if value is not None:
        return json.dumps(value) if isinstance(value, dict) else str(value)
    if default is NOT_READ:
        return "vLLM default"
    return "vLLM default (set as the engine starts)" if default is None else f"vLLM default: {default}"


def running_value(key: str, running: dict, resolved: dict, defaults: dict | None):
    """The running engine's value of ``key`` where it is known: as the app set it, else as vLLM resolved it for
    that engine, else vLLM's default (None where vLLM decides it as the engine starts)."""
    if running.get(key) is not None:
        return running[key]
    if resolved.get(key) is not None:
        return resolved[key]
    return defaults.get(key) if defaults is not None else None


def running_text(key: str, running: dict, resolved: dict, defaults: dict | None) -> str:
    """The running engine's value of ``key``: as the app set it, else as vLLM resolved it for that
    engine (``resolved``, from the engine itself), else vLLM's default."""
    if running.get(key) is not None:
        return str(running[key])
    if resolved.get(key) is not None:
        return f"vLLM default: {resolved[key]}"
    return value_text(None, defaults.get(key) if defaults is not None else NOT_READ)


class PresetValuesTable(QTableWidget):
    """One row per engine argument the preset sets; ``on_edit(key, value)`` is called on each edit."""

    def __init__(self, on_edit):
        super().__init__(0, len(COLUMNS), objectName="presetValues")
        self.on_edit = on_edit
        self.verticalHeader().hide()
        self.setEditTriggers(QAbstractItemView.NoEditTriggers)
        # The columns share the panel's width: the argument and its editor as wide as they need, the
        # resolved and running values the rest, elided where long (the whole value in the tooltip).
        header = self.horizontalHeader()
        for column, mode in enumerate((QHeaderView.ResizeToContents, QHeaderView.ResizeToContents,
                                       QHeaderView.Stretch, QHeaderView.Stretch)):
            header.setSectionResizeMode(column, mode)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.setTextElideMode(Qt.ElideRight)
        self._label_columns("Running")

    def show_preset(self, resolved: ResolvedPreset, running: dict, platform: str | tuple[str, ...],
                    defaults: dict | None = None,
                    running_resolved: dict | None = None, running_header: str = "Running") -> None:
        """``running``: the engine arguments the app gives the engine it compares with; ``defaults``:
        vLLM's defaults (None: not read yet); ``running_resolved``: what vLLM resolved for the running
        engine ({} with none running)."""
        self.clearContents()  # the previous preset's editors go with their rows
        self.setRowCount(0)
        self.setRowCount(len(resolved.values))
        self._label_columns(running_header)
        for column in (1, 2):
            self.setColumnHidden(column, False)
        for row, item in enumerate(resolved.values):
            here = running_value(item.key, running, running_resolved or {}, defaults)
            changed = item.value is not None and item.value != here  # vLLM's default written out is no change
            self.setItem(row, 0, QTableWidgetItem(item.key))
            self.setCellWidget(row, 1, self._editor(item.key, for_platform(item.written, platform)))
            unused = item.value is None and item.note.startswith("not used")
            text = "not used here" if unused else \
                value_text(item.value, defaults.get(item.key) if defaults is not None else NOT_READ)
            resolved_item = QTableWidgetItem(text)
            resolved_item.setToolTip(f"{text}\n{item.note}" if item.note else text)
            self.setItem(row, 2, resolved_item)
            running_item = QTableWidgetItem(running_text(item.key, running, running_resolved or {}, defaults))
            running_item.setToolTip(running_item.text())
            self.setItem(row, 3, running_item)
            for column in (0, 2, 3):
                if changed:
                    self.item(row, column).setBackground(CHANGED)

    def show_engine(self, running: dict, defaults: dict | None, running_resolved: dict,
                    running_header: str = "Running") -> None:
        """No preset chosen: the engine's own arguments, as the app sets them and as vLLM resolved them for
        the running engine (``running_resolved``, {} with none running), one row each; no preset columns."""
        self.clearContents()
        keys = sorted(key for key in set(running) | set(running_resolved)
                      if running.get(key) is not None or running_resolved.get(key) is not None)
        self.setRowCount(len(keys))
        self._label_columns(running_header)
        for column in (1, 2):
            self.setColumnHidden(column, True)
        for row, key in enumerate(keys):
            self.setItem(row, 0, QTableWidgetItem(key))
            value = QTableWidgetItem(running_text(key, running, running_resolved, defaults))
            value.setToolTip(value.text())
            self.setItem(row, 3, value)

    def _label_columns(self, running_header: str) -> None:
        self.setHorizontalHeaderLabels(["Argument", "Preset", "Here", running_header])
        self.horizontalHeaderItem(2).setToolTip("The value the preset resolves to on this machine")
        self.horizontalHeaderItem(3).setToolTip("The running engine's value")

    def _editor(self, key: str, value):
        if isinstance(value, bool):
            box = QCheckBox()
            box.setChecked(value)
            box.toggled.connect(lambda checked: self.on_edit(key, checked))
            return box
        low, high = RANGES.get(key, (None, None))
        if isinstance(value, int) and low is not None:
            box = QSpinBox(minimum=int(low), maximum=int(min(high, 2**31 - 1)), value=value)
            box.editingFinished.connect(lambda: self.on_edit(key, box.value()))
            return box
        if isinstance(value, float) and low is not None:
            box = QDoubleSpinBox(minimum=low, maximum=high, value=value, singleStep=0.05)
            box.editingFinished.connect(lambda: self.on_edit(key, box.value()))
            return box
        if value is None:  # a row the preset does not set (the CPU's KV budget): empty until the user types one
            line = QLineEdit(placeholderText="not set: auto")
            line.editingFinished.connect(lambda: line.text().strip() and self.on_edit(key, _parse(line.text())))
            return line
        line = QLineEdit(json.dumps(value) if isinstance(value, dict) else str(value))
        line.editingFinished.connect(lambda: self.on_edit(key, _parse(line.text())))
        return line


def _parse(text: str):
    """A typed-in value: a table as JSON (``{"image": 5}``), a number or a word, as TOML would read it; text
    that is none of these stays as typed, and the checks say what it should be."""
    if text.strip().startswith("{"):
        try:
            return json.loads(text)
        except ValueError:
            return text.strip()
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.strip().lower(), text.strip())
