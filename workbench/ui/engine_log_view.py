"""The engine's own log, as vLLM's processes printed it: read-only, searchable by eye, copyable."""
from __future__ import annotations

from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout

from workbench.engine.engine_log import read_log
from workbench.ui.window_layout import resize_within_screen


class EngineLogDialog(QDialog):
    def __init__(self, path: str, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Engine log")
        self.setObjectName("engineLogDialog")
        resize_within_screen(self, 1000, 640)
        self.path = path
        where = QLabel(f"vLLM's output for this engine start: {path}", objectName="engineLogPath")
        where.setWordWrap(True)
        self.text = QPlainTextEdit(objectName="engineLogText")
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        copy = QPushButton("Copy all", objectName="engineLogCopy")
        copy.clicked.connect(self.copy_all)
        reload_ = QPushButton("Reload", objectName="engineLogReload")
        reload_.clicked.connect(self.reload)
        close = QPushButton("Close")
        close.clicked.connect(self.accept)
        buttons = QHBoxLayout()
        buttons.addWidget(copy)
        buttons.addWidget(reload_)
        buttons.addStretch(1)
        buttons.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addWidget(where)
        layout.addWidget(self.text, 1)
        layout.addLayout(buttons)
        self.reload()

    def reload(self) -> None:
        text = read_log(self.path)
        self.text.setPlainText(text or f"The log file {self.path} is empty or was removed.")
        self.text.verticalScrollBar().setValue(self.text.verticalScrollBar().maximum())

    def copy_all(self) -> None:
        QGuiApplication.clipboard().setText(self.text.toPlainText())
