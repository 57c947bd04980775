"""Choose the model: the demo model, local folders and the Hugging Face cache.

The folders and the cache are scanned off the GUI thread (reading a large cache takes seconds); the
list says "Scanning…" until the results are applied, on the GUI thread.
"""
from __future__ import annotations

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import (
    QDialog, QDialogButtonBox, QFileDialog, QLabel, QListWidget, QListWidgetItem, QPushButton, QVBoxLayout,
)
from superqt.utils import create_worker

from workbench.engine.model_source import ModelChoice, list_models

MODEL_PATH_ROLE = Qt.UserRole
GET_A_MODEL = "get-a-model"  # the entry that opens Model > Get a model… instead


class ModelPickerDialog(QDialog):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Choose model")
        self.setObjectName("modelPicker")
        self.list = QListWidget(objectName="modelList")
        self.scanning = QListWidgetItem("Scanning…")
        self.scanning.setFlags(Qt.NoItemFlags)
        self.list.addItem(self.scanning)
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
        self.scan_worker = create_worker(list_models, _connect={"returned": self._on_scan_returned,
                                                                "errored": self._on_scan_errored})

    @Slot(object)
    def _on_scan_returned(self, choices: list[ModelChoice]) -> None:
        row = self.list.row(self.scanning)
        self.list.takeItem(row)
        for offset, choice in enumerate(choices):  # before any folder browsed to meanwhile
            item = QListWidgetItem(f"{choice.name}   [{choice.origin}]  {choice.path}")
            item.setData(MODEL_PATH_ROLE, choice.path)
            self.list.insertItem(row + offset, item)
        get = QListWidgetItem("Get a model from the Hugging Face Hub…")
        get.setData(MODEL_PATH_ROLE, GET_A_MODEL)
        self.list.insertItem(row + len(choices), get)
        if self.list.currentItem() is None:
            self.list.setCurrentRow(0)

    @Slot(object)
    def _on_scan_errored(self, error: Exception) -> None:
        self.scanning.setText(f"The model folders could not be read: {type(error).__name__}: {error}")

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Model folder (holds config.json)")
        if folder:
            item = QListWidgetItem(f"{folder}   [local]")
            item.setData(MODEL_PATH_ROLE, folder)
            self.list.addItem(item)
            self.list.setCurrentItem(item)

    def chosen_model(self) -> str | None:
        item = self.list.currentItem()
        return item.data(MODEL_PATH_ROLE) if item else None
