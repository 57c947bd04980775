"""The engine's state above the panes: start progress by phase, faults in words, the engine log, Restart."""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

from workbench.engine.events import EngineState
from workbench.engine.start_failure import retry_label
from workbench.model.app_model import AppModel
from workbench.model.engine_status import EngineStatus

STATE_STYLES = {
    EngineState.FAILED: "background: #fde8e8; color: #9b1c1c; padding: 6px;",
    EngineState.DIED: "background: #fde8e8; color: #9b1c1c; padding: 6px;",
    EngineState.READY: "background: #e7f6ec; color: #03543f; padding: 6px;",
}


class ElidedProgressBar(QProgressBar):
    """A progress bar whose text, a label and the percentage, always fits: the label is elided to the
    bar's width (the whole of it in the tooltip), the percentage kept."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.setRange(0, 100)
        self.label = ""

    def show_progress(self, label: str, fraction: float) -> None:
        self.label = label
        self.setToolTip(label)
        self.setValue(int(round(fraction * 100)))
        self.update()

    def text(self) -> str:
        percent = f"{self.value()}%"
        if not self.label:
            return percent
        metrics = self.fontMetrics()
        room = self.contentsRect().width() - metrics.horizontalAdvance(" " + percent) - 2 * metrics.averageCharWidth()
        return f"{metrics.elidedText(self.label, Qt.ElideRight, max(room, 0))} {percent}".strip()


START, RESTART = "Start engine", "Restart engine"


class EngineStatusBar(QWidget):
    """Shows the model's engine status; holds no state of its own."""

    restart_requested = Signal()
    retry_requested = Signal(object)  # the engine arguments to change ((name, value) pairs)

    def __init__(self, model: AppModel):
        super().__init__()
        self.model = model
        self.log_dialog = None
        self.message = QLabel("Engine not started.", objectName="engineMessage")
        self.message.setWordWrap(True)
        self.progress = ElidedProgressBar(objectName="engineProgress")
        self.progress.setMinimumWidth(240)
        self.progress.hide()
        self.restart_button = QPushButton(RESTART, objectName="restartButton")
        self.restart_button.clicked.connect(self.restart_requested)
        # as wide for either word, so that the bar does not shift as a search stops and starts engines
        width = max(self.restart_button.fontMetrics().horizontalAdvance(text) for text in (START, RESTART))
        self.restart_button.setMinimumWidth(width + 24)
        self.log_button = QPushButton("Show engine log", objectName="showEngineLogButton")
        self.log_button.clicked.connect(self.show_engine_log)
        self.log_button.hide()
        self.retry_button = QPushButton(objectName="retryButton")
        self.retry_button.clicked.connect(lambda: self.retry_requested.emit(self.model.engine.retry))
        self.retry_button.hide()
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.addWidget(self.message, 1)
        layout.addWidget(self.progress)
        layout.addWidget(self.retry_button)
        layout.addWidget(self.log_button)
        layout.addWidget(self.restart_button)
        model.engine_changed.connect(self._on_model_engine_changed)
        self._on_model_engine_changed(model.engine)

    def _on_model_engine_changed(self, status: EngineStatus) -> None:
        starting = status.state is EngineState.STARTING
        self.message.setText(status.message)
        self.message.setStyleSheet(STATE_STYLES.get(status.state, "padding: 6px;"))
        self.progress.setVisible(starting)
        if starting:
            progress = status.progress
            self.progress.show_progress(progress.label if progress else "", progress.fraction if progress else 0.0)
        self.restart_button.setEnabled(not starting)
        # no engine to restart: none started yet, or one stopped (Engine > Stop engine); it starts one all the same
        self.restart_button.setText(START if status.state is EngineState.STOPPED else RESTART)
        failed = status.state is EngineState.FAILED and bool(status.retry)
        self.retry_button.setVisible(failed)
        if failed:
            self.retry_button.setText(retry_label(status.retry))
        self.log_button.setVisible(status.state in (EngineState.FAILED, EngineState.DIED) and bool(status.log_path))

    def show_stopping(self) -> None:
        """The window is closing: says so at once, before the engine stops behind it."""
        self.message.setText("Stopping the engine…")
        self.message.setStyleSheet("padding: 6px;")
        for widget in (self.progress, self.retry_button, self.log_button):
            widget.hide()
        self.restart_button.setEnabled(False)
        self.message.repaint()

    @Slot()
    def show_engine_log(self):
        """Opens the log of the latest engine start (a message when there is none yet)."""
        from workbench.ui.engine_log_view import EngineLogDialog

        if not self.model.engine.log_path:
            self.message.setText(self.message.text() + "\n(No engine has been started yet, so there is no log.)")
            return None
        if self.log_dialog is not None:
            self.log_dialog.close()
        self.log_dialog = EngineLogDialog(self.model.engine.log_path, self.window())
        self.log_dialog.show()
        return self.log_dialog
