"""Choose the model: the demo model, local folders and the Hugging Face cache."""
from __future__ import annotations

from PySide6.QtWidgets import (
    QDialog, QDialogButtonBox, QFileDialog, QLabel, QListWidget, QListWidgetItem, QPushButton, QVBoxLayout,
)

from workbench.engine.model_source import list_models


class ModelPickerDialog(QDialog):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Choose model")
        self.setObjectName("modelPicker")
        self.list = QListWidget(objectName="modelList")
        for choice in list_models():
            item = QListWidgetItem(f"{choice.name}   [{choice.origin}]  {choice.path}")
            item.setData(256, choice.path)
            self.list.addItem(item)
        self.list.setCurrentRow(0)
        browse = QPushButton("Local folder…", objectName="browseModelButton")
        browse.clicked.connect(self._browse)
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Models on this machine (the engine restarts with the one you choose):"))
        layout.addWidget(self.list)
        layout.addWidget(browse)
        layout.addWidget(buttons)

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Model folder (holds config.json)")
        if folder:
            item = QListWidgetItem(f"{folder}   [local]")
            item.setData(256, folder)
            self.list.addItem(item)
            self.list.setCurrentItem(item)

    def chosen_model(self) -> str | None:
        item = self.list.currentItem()
        return item.data(256) if item else None
