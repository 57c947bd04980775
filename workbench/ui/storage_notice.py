"""The storage's notice: a band above the panes that says what is wrong with the database, if anything.

The writer thread reports a failed write (a full disk) through ``problem_reported``, a queued Qt
signal, so the band is only touched on the GUI thread. For a damaged database the band offers to
move it aside and start a new one; the old file is kept.
"""
from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton

from workbench.model.app_model import AppModel
from workbench.storage.database import CORRUPTED, StorageProblem
from workbench.storage.store import Storage


class StorageNotice(QFrame):
    problem_reported = Signal(object)  # StorageProblem or None, from any thread

    def __init__(self, storage: Storage, model: AppModel):
        super().__init__(objectName="storageNotice")
        self.storage, self.model = storage, model
        self.setStyleSheet("#storageNotice { background: #fff4ce; border: 1px solid #e0b000; }")
        self.label = QLabel(objectName="storageMessage", wordWrap=True)
        self.move_aside_button = QPushButton("Move it aside and start a new one", objectName="storageMoveAside")
        self.move_aside_button.clicked.connect(self.move_aside)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.move_aside_button)
        self.problem_reported.connect(self._on_storage_problem_reported)
        storage.on_problem = self.problem_reported.emit  # called on the storage thread
        self.show_problem(storage.problem)

    def show_problem(self, problem: StorageProblem | None) -> None:
        self.label.setText(problem.message if problem is not None else "")
        self.move_aside_button.setVisible(problem is not None and problem.kind == CORRUPTED)
        self.setVisible(problem is not None)

    @Slot(object)
    def _on_storage_problem_reported(self, problem: StorageProblem | None) -> None:
        self.show_problem(problem)

    @Slot()
    def move_aside(self) -> None:
        aside = self.storage.move_aside_and_start_new(self.model)
        self.show_problem(self.storage.problem)
        if aside is not None and self.storage.problem is None:
            self.label.setText(f"The damaged database was kept as {aside}; a new one was started at "
                               f"{self.storage.path}.")
            self.setVisible(True)
