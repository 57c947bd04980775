"""The band above the chat's input while the last question is edited: what Send will do, and Cancel edit."""
from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

EDITING = ("Editing your last question: Send asks it in place of the one above and its reply. "
           "What you were typing comes back after.")


class EditBar(QWidget):
    """Hidden until an edit begins; its ``cancel_button`` (Cancel edit) is the pane's to connect."""

    def __init__(self):
        super().__init__(objectName="editBar")
        self.note = QLabel(EDITING, objectName="editingNote", wordWrap=True)
        self.cancel_button = QPushButton("Cancel edit", objectName="cancelEditButton")
        self.cancel_button.setToolTip("Keep the question and its reply as they are (Esc)")
        row = QHBoxLayout(self)
        row.setContentsMargins(4, 2, 0, 2)
        row.addWidget(self.note, 1)
        row.addWidget(self.cancel_button)
        self.setStyleSheet("#editBar { background: #fff4ce; }")
        self.hide()
