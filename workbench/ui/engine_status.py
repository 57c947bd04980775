"""The engine's state above the panes: start progress by phase, faults in words, Restart."""
from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

STATE_STYLES = {
    "failed": "background: #fde8e8; color: #9b1c1c; padding: 6px;",
    "died": "background: #fde8e8; color: #9b1c1c; padding: 6px;",
    "ready": "background: #e7f6ec; color: #03543f; padding: 6px;",
}


class EngineStatusBar(QWidget):
    restart_requested = Signal()

    def __init__(self):
        super().__init__()
        self.state = "stopped"
        self.log_path = ""  # the engine's own log of its latest start
        self.log_dialog = None
        self.message = QLabel("Engine not started.", objectName="engineMessage")
        self.message.setWordWrap(True)
        self.progress = QProgressBar(objectName="engineProgress")
        self.progress.setRange(0, 100)
        self.progress.setMinimumWidth(240)
        self.progress.hide()
        self.restart_button = QPushButton("Restart engine", objectName="restartButton")
        self.restart_button.clicked.connect(self.restart_requested)
        self.log_button = QPushButton("Show engine log", objectName="showEngineLogButton")
        self.log_button.clicked.connect(self.show_engine_log)
        self.log_button.hide()
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.addWidget(self.message, 1)
        layout.addWidget(self.progress)
        layout.addWidget(self.log_button)
        layout.addWidget(self.restart_button)

    @Slot(str)
    def on_worker_engine_log_opened(self, path: str) -> None:
        self.log_path = path

    @Slot()
    def show_engine_log(self):
        """Opens the log of the latest engine start (a message when there is none yet)."""
        from workbench.ui.engine_log_view import EngineLogDialog

        if not self.log_path:
            self.message.setText(self.message.text() + "\n(No engine has been started yet, so there is no log.)")
            return None
        if self.log_dialog is not None:
            self.log_dialog.close()
        self.log_dialog = EngineLogDialog(self.log_path, self.window())
        self.log_dialog.show()
        return self.log_dialog

    @Slot(object)
    def on_worker_start_progressed(self, progress) -> None:
        self.progress.show()
        self.progress.setValue(int(progress.fraction * 100))
        self.progress.setFormat(f"{progress.label} %p%")

    @Slot(str, str)
    def on_worker_state_changed(self, state: str, message: str) -> None:
        self.state = state
        self.message.setText(message)
        self.message.setStyleSheet(STATE_STYLES.get(state, "padding: 6px;"))
        self.progress.setVisible(state == "starting")
        if state == "starting":
            self.progress.setValue(0)
        self.restart_button.setEnabled(state != "starting")
        self.log_button.setVisible(state in ("failed", "died") and bool(self.log_path))
