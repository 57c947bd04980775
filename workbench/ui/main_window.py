"""The main window: assembles the panes and wires them to the engine worker; no logic of its own."""
from __future__ import annotations

import logging
from dataclasses import replace

from PySide6.QtCore import QTimer, Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMainWindow, QSplitter, QTabWidget, QVBoxLayout, QWidget

from workbench.bridge.worker import EngineThread, ModelFeeder
from workbench.engine.commands import Abort, StartEngine, StopEngine, Submit
from workbench.engine.events import EngineState
from workbench.engine.spec import EngineConfig
from workbench.model.app_model import AppModel
from workbench.model.engine_status import EngineStatus
from workbench.ui.batch_pane import BatchPane
from workbench.ui.chat_pane import ChatPane
from workbench.ui.engine_status import EngineStatusBar
from workbench.storage.store import Storage
from workbench.ui.kv_heatmap import KVHeatmapView
from workbench.ui.storage_notice import StorageNotice

HEATMAP_INTERVAL_MS = 100  # the GUI reads the latest snapshot at 10 Hz


class MainWindow(QMainWindow):
    def __init__(self, engine: EngineThread, model: AppModel, storage: Storage | None = None):
        """``storage``: where the model's changes are kept (already restored into ``model``); None keeps nothing."""
        super().__init__()
        self.setWindowTitle("vLLM Workbench")
        self.engine = engine
        self.model = model
        self.storage = storage
        self.feeder = ModelFeeder(engine.worker, model)
        self._last_state = (model.engine.state, model.engine.start_id)
        self.chat = ChatPane(model)
        self.batch = BatchPane(model, engine.worker.post)  # the chat's engine runs the batch too
        self.heatmap = KVHeatmapView(owner_name=model.owner_label)
        self.status = EngineStatusBar(model)
        self.panes = QTabWidget(objectName="panes")
        self.panes.addTab(self.chat, "Chat")
        self.panes.addTab(self.batch, "Batch")
        splitter = QSplitter()
        splitter.addWidget(self.panes)
        splitter.addWidget(self.heatmap)
        splitter.setSizes([820, 480])
        central = QWidget()
        layout = QVBoxLayout(central)
        if storage is not None:
            self.storage_notice = StorageNotice(storage, model)
            layout.addWidget(self.storage_notice)
        layout.addWidget(self.status)
        layout.addWidget(splitter, 1)
        self.setCentralWidget(central)
        self._build_menus()
        self._wire()
        self.heatmap_timer = QTimer(self)
        self.heatmap_timer.timeout.connect(self._on_heatmap_timer)
        self.heatmap_timer.start(HEATMAP_INTERVAL_MS)

    def _build_menus(self) -> None:
        engine_menu = self.menuBar().addMenu("&Engine")
        for text, slot in (("Restart engine", self.restart_engine), ("Stop engine", self.stop_engine),
                           ("Show engine log", self.status.show_engine_log)):
            action = QAction(text, self)
            action.triggered.connect(slot)
            engine_menu.addAction(action)
        model_menu = self.menuBar().addMenu("&Model")
        choose = QAction("Choose model…", self)
        choose.triggered.connect(self.choose_model)
        model_menu.addAction(choose)
        tools_menu = self.menuBar().addMenu("&Tools")
        benchmark = QAction("Benchmark…", self)
        benchmark.triggered.connect(self.open_benchmark)
        tools_menu.addAction(benchmark)

    def _wire(self) -> None:
        self.model.engine_changed.connect(self._on_model_engine_changed)
        self.chat.request_submitted.connect(self._on_chat_request_submitted)
        self.chat.abort_requested.connect(self._on_chat_abort_requested)
        self.status.restart_requested.connect(self.restart_engine)

    # -------------------------------------------------------------- commands to the engine
    @Slot()
    def restart_engine(self) -> int:
        """Starts the engine on the model's configuration; returns the start's id (see EngineStatus.settled).
        Not while another instance holds the database: that one runs the engine (returns 0)."""
        if self.storage is not None and self.storage.locked:
            return 0
        start_id = self.model.next_start_id()
        self.engine.worker.post(StartEngine(self.model.config, start_id))
        return start_id

    def start_engine(self, config: EngineConfig) -> int:
        self.model.set_config(config)
        return self.restart_engine()

    @Slot()
    def stop_engine(self) -> None:
        self.engine.worker.post(StopEngine())

    def start_with_model(self, model: str) -> int:
        return self.start_engine(replace(self.model.config, model=model))

    @Slot()
    def choose_model(self) -> None:
        from workbench.ui.model_picker import ModelPickerDialog

        dialog = ModelPickerDialog(self)
        if dialog.exec() and dialog.chosen_model():
            self.start_with_model(dialog.chosen_model())

    @Slot()
    def open_benchmark(self, ask_to_stop=None):
        from workbench.ui.benchmark_view import BenchmarkView

        info = self.model.engine.info
        model = info.model if info is not None else self.model.config.model
        view = BenchmarkView(model, lambda: self.model.engine.ready, self.stop_engine, self, ask_to_stop)
        view.show()
        return view

    @Slot(object)
    def _on_chat_request_submitted(self, request) -> None:
        self.engine.worker.post(Submit(request))

    @Slot(str)
    def _on_chat_abort_requested(self, request_id: str) -> None:
        self.engine.worker.post(Abort(request_id))

    # -------------------------------------------------------------- what the model reports
    def _on_model_engine_changed(self, status: EngineStatus) -> None:
        if (status.state, status.start_id) == self._last_state:
            return  # start progress, the log's path or the engine's facts: the status bar shows those
        self._last_state = (status.state, status.start_id)
        first_line = status.message.splitlines()[0] if status.message else ""
        logging.getLogger("workbench").info("%s", first_line or f"engine {status.state.value}")
        if status.state is EngineState.READY and status.info is not None:
            info = status.info
            self.chat.sampling.show_chat_template(info.chat_template)
            self.setWindowTitle(f"vLLM Workbench — {info.model} (vLLM {info.vllm_version}, {info.device})")
        elif status.state is not EngineState.READY:
            self.heatmap.clear("Engine starting…" if status.state is EngineState.STARTING else "No engine running.")

    @Slot()
    def _on_heatmap_timer(self) -> None:
        snapshot = self.engine.worker.latest_snapshot()
        if snapshot is not None and self.model.engine.ready:
            self.heatmap.show_snapshot(snapshot)

    def closeEvent(self, event) -> None:
        self.heatmap_timer.stop()
        self.batch.shutdown()
        self.engine.stop()
        if self.storage is not None:  # after the engine: the replies it stopped are recorded too
            self.storage.close()
        super().closeEvent(event)
