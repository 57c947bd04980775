"""The Help menu: About (the versions, the machine, the engine and the app's files, to copy into a bug
report) and the data folder opened in the file manager."""
from __future__ import annotations

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QAction, QDesktopServices, QFontDatabase, QGuiApplication
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QMainWindow, QPlainTextEdit, QVBoxLayout

from workbench.model.about_text import Places, about_text
from workbench.paths import config_dir, data_dir


def add_help_menu(window: QMainWindow) -> None:
    menu = window.menuBar().addMenu("&Help")
    about = QAction("About vLLM Workbench", window, menuRole=QAction.AboutRole)
    about.triggered.connect(lambda: open_about(window))
    menu.addAction(about)
    folder = QAction("Open data folder", window)
    folder.triggered.connect(open_data_folder)
    menu.addAction(folder)


def window_facts(window) -> dict:
    """The session's facts as its storage recorded them at the start, else read now (no database kept)."""
    storage = window.storage
    if storage is not None and storage.facts is not None:
        return storage.facts
    from workbench.telemetry.machine_facts import session_facts

    return session_facts()


def window_places(window) -> Places:
    storage = window.storage
    return Places(data=str(data_dir()), config=str(config_dir()),
                  database=str(storage.path) if storage is not None else "",
                  engine_log=window.model.engine.log_path)


def open_about(window) -> AboutDialog:
    dialog = AboutDialog(about_text(window_facts(window), window.model.engine, window_places(window)), window)
    dialog.show()
    return dialog


def open_data_folder() -> bool:
    return QDesktopServices.openUrl(QUrl.fromLocalFile(str(data_dir())))


class AboutDialog(QDialog):
    """The text, selectable, with Copy (the whole text to the clipboard) and Close."""

    def __init__(self, text: str, parent=None):
        super().__init__(parent, objectName="aboutDialog")
        self.setWindowTitle("About vLLM Workbench")
        self.setAttribute(Qt.WA_DeleteOnClose, True)
        heading = QLabel("A desktop workbench for the vLLM engine: its KV cache, memory and figures, live.")
        heading.setWordWrap(True)
        self.text = QPlainTextEdit(text, objectName="aboutText", readOnly=True)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))
        self.text.setLineWrapMode(QPlainTextEdit.NoWrap)
        lines = text.count("\n") + 1
        metrics = self.text.fontMetrics()
        widest = max(metrics.horizontalAdvance(line) for line in text.splitlines())
        self.text.setMinimumSize(min(widest + 40, 900), min(metrics.lineSpacing() * (lines + 2), 560))
        buttons = QDialogButtonBox(QDialogButtonBox.Close)
        self.copy_button = buttons.addButton("Copy details", QDialogButtonBox.ActionRole)
        self.copy_button.clicked.connect(self.copy)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(heading)
        layout.addWidget(self.text, 1)
        layout.addWidget(buttons)

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.text.toPlainText())
        self.copy_button.setText("Copied")
