"""The question asked before a preset is saved under a name that is taken: nothing the user saved is replaced
unasked."""
from __future__ import annotations

from PySide6.QtWidgets import QMessageBox, QWidget

from workbench.presets import store


def taken_names(names: list[str]) -> list[tuple[str, str]]:
    """``(name, what it would replace)`` for each of ``names`` that is taken (see ``store.taken_by``)."""
    return [(name, taken) for name in names if (taken := store.taken_by(name))]


def replace_question(taken: list[tuple[str, str]]) -> str:
    lines = []
    for name, what in taken:
        lines.append(f"“{name}” is a shipped preset: saving under its name replaces it with this one (Reset brings "
                     "the shipped one back)." if what == "shipped" else
                     f"A preset named “{name}” exists: saving replaces it, and its settings are lost.")
    return "\n".join(lines) + "\n\nReplace, or Cancel and choose another name?"


def ask_replace(parent: QWidget, names: list[str]) -> bool:
    """True when none of ``names`` is taken, or the user chose Replace."""
    taken = taken_names(names)
    if not taken:
        return True
    box = QMessageBox(QMessageBox.Warning, "Replace the preset?", replace_question(taken), parent=parent)
    replace = box.addButton("Replace", QMessageBox.DestructiveRole)
    box.addButton(QMessageBox.Cancel)
    box.setDefaultButton(QMessageBox.Cancel)
    box.exec()
    return box.clickedButton() is replace
