"""The preset's engine values as a table: the value written (edited in place, within its range), the
value it resolves to here, and the running engine's; rows that would change are marked."""
from __future__ import annotations

from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView, QCheckBox, QDoubleSpinBox, QLineEdit, QSpinBox, QTableWidget, QTableWidgetItem,
)

from workbench.presets.checks import RANGES, for_platform
from workbench.presets.resolve import ResolvedPreset

CHANGED = QColor("#fff3c4")
COLUMNS = ("argument", "preset", "here", "running")


def _text(value) -> str:
    return "default" if value is None else str(value)


class PresetValuesTable(QTableWidget):
    """One row per engine argument the preset sets; ``on_edit(key, value)`` is called on each edit."""

    def __init__(self, on_edit):
        super().__init__(0, len(COLUMNS), objectName="presetValues")
        self.on_edit = on_edit
        self.setHorizontalHeaderLabels(["Argument", "Preset", "Here", "Running"])
        self.verticalHeader().hide()
        self.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.horizontalHeader().setStretchLastSection(True)

    def show_preset(self, resolved: ResolvedPreset, running: dict, platform: str | tuple[str, ...]) -> None:
        self.clearContents()  # the previous preset's editors go with their rows
        self.setRowCount(0)
        self.setRowCount(len(resolved.values))
        for row, item in enumerate(resolved.values):
            here = running.get(item.key, None)
            changed = item.value is not None and item.value != here
            self.setItem(row, 0, QTableWidgetItem(item.key))
            self.setCellWidget(row, 1, self._editor(item.key, for_platform(item.written, platform)))
            resolved_item = QTableWidgetItem(_text(item.value))
            resolved_item.setToolTip(item.note)
            self.setItem(row, 2, resolved_item)
            self.setItem(row, 3, QTableWidgetItem(_text(here)))
            for column in (0, 2, 3):
                if changed:
                    self.item(row, column).setBackground(CHANGED)
        self.resizeColumnsToContents()

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
        line = QLineEdit(str(value))
        line.editingFinished.connect(lambda: self.on_edit(key, _parse(line.text())))
        return line


def _parse(text: str):
    """A typed-in value: a number or a word, as TOML would read it."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.strip().lower(), text.strip())
