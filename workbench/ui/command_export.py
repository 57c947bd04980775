"""Export as…: the preset being looked at as a ``vllm serve`` line, vLLM's YAML config, an ``LLM(...)``
call or ms-swift arguments, in a read-only box one Copy away."""
from __future__ import annotations

from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import QComboBox, QDialog, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout

from workbench.presets.command_out import FORMS, export_command
from workbench.ui.window_layout import resize_within_screen


class CommandExportDialog(QDialog):
    """Shows ``deployment`` (a ``command_out.Deployment``) in the form chosen; holds nothing else."""

    def __init__(self, deployment, preset_name: str, parent=None):
        super().__init__(parent, objectName="commandExportDialog", windowTitle=f"Export {preset_name} as…")
        self.deployment = deployment
        self.form = QComboBox(objectName="exportForm")
        self.form.addItems(FORMS)
        self.form.currentTextChanged.connect(self._on_form_changed)
        self.text = QPlainTextEdit(objectName="exportText", readOnly=True)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))
        self.copy_button = QPushButton("Copy", objectName="exportCopyButton")
        self.copy_button.clicked.connect(self.copy)
        close = QPushButton("Close")
        close.clicked.connect(self.accept)
        top = QHBoxLayout()
        top.addWidget(QLabel("Export as"))
        top.addWidget(self.form, 1)
        buttons = QHBoxLayout()
        buttons.addWidget(QLabel("Only values that differ from vLLM's defaults; '# resolved for this machine' marks "
                                 "what this machine decided.", wordWrap=True), 1)
        buttons.addWidget(self.copy_button)
        buttons.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.text, 1)
        layout.addLayout(buttons)
        resize_within_screen(self, 760, 420)
        self._on_form_changed(self.form.currentText())

    def choose(self, form: str) -> None:
        self.form.setCurrentText(form)

    def _on_form_changed(self, form: str) -> None:
        self.text.setPlainText(export_command(self.deployment, form))

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.text.toPlainText())
        self.copy_button.setText("Copied")
