"""The main window: assembles the panes and wires them to the engine worker; no logic of its own."""
from __future__ import annotations

import logging
from dataclasses import replace

from PySide6.QtCore import QTimer, Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMainWindow, QSplitter, QVBoxLayout, QWidget

from workbench.bridge.worker import EngineThread
from workbench.engine.loop import Abort, StartEngine, StopEngine, Submit, starting_message
from workbench.engine.session import EngineConfig
from workbench.ui.chat_pane import ChatPane
from workbench.ui.engine_status import EngineStatusBar
from workbench.ui.kv_heatmap import KVHeatmapView

HEATMAP_INTERVAL_MS = 100  # the GUI reads the latest snapshot at 10 Hz


class MainWindow(QMainWindow):
    def __init__(self, engine: EngineThread, config: EngineConfig, system_prompt: str = ""):
        super().__init__()
        self.setWindowTitle("vLLM Workbench")
        self.engine = engine
        self.config = config
        self.engine_model = ""  # the resolved model folder of the running engine
        self.chat = ChatPane(system_prompt)
        self.heatmap = KVHeatmapView(owner_name=self.chat.owner_of)
        self.status = EngineStatusBar()
        splitter = QSplitter()
        splitter.addWidget(self.chat)
        splitter.addWidget(self.heatmap)
        splitter.setSizes([820, 480])
        central = QWidget()
        layout = QVBoxLayout(central)
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
        worker = self.engine.worker
        worker.state_changed.connect(self.status.on_worker_state_changed)
        worker.state_changed.connect(self._on_worker_state_changed)
        worker.start_progressed.connect(self.status.on_worker_start_progressed)
        worker.engine_log_opened.connect(self.status.on_worker_engine_log_opened)
        worker.engine_ready.connect(self._on_worker_engine_ready)
        worker.text_flushed.connect(self.chat.on_worker_text_flushed)
        worker.request_finished.connect(self.chat.on_worker_request_finished)
        worker.request_failed.connect(self.chat.on_worker_request_failed)
        self.chat.request_submitted.connect(self._on_chat_request_submitted)
        self.chat.abort_requested.connect(self._on_chat_abort_requested)
        self.status.restart_requested.connect(self.restart_engine)

    # -------------------------------------------------------------- commands to the engine
    @Slot()
    def restart_engine(self) -> None:
        self.status.on_worker_state_changed("starting", starting_message(self.config.model))
        self.engine.worker.post(StartEngine(self.config))

    @Slot()
    def stop_engine(self) -> None:
        self.engine.worker.post(StopEngine())

    def start_with_model(self, model: str) -> None:
        self.config = replace(self.config, model=model)
        self.restart_engine()

    @Slot()
    def choose_model(self) -> None:
        from workbench.ui.model_picker import ModelPickerDialog

        dialog = ModelPickerDialog(self)
        if dialog.exec() and dialog.chosen_model():
            self.start_with_model(dialog.chosen_model())

    @Slot()
    def open_benchmark(self, ask_to_stop=None):
        from workbench.ui.benchmark_view import BenchmarkView

        model = self.engine_model or self.config.model
        view = BenchmarkView(model, lambda: self.status.state == "ready", self.stop_engine, self, ask_to_stop)
        view.show()
        return view

    @Slot(object)
    def _on_chat_request_submitted(self, request) -> None:
        self.engine.worker.post(Submit(request))

    @Slot(str)
    def _on_chat_abort_requested(self, request_id: str) -> None:
        self.engine.worker.post(Abort(request_id))

    # -------------------------------------------------------------- results
    @Slot(object)
    def _on_worker_engine_ready(self, info) -> None:
        self.engine_model = info.model
        self.chat.sampling.show_chat_template(info.chat_template)
        self.setWindowTitle(f"vLLM Workbench — {info.model} (vLLM {info.vllm_version}, {info.device})")

    @Slot(str, str)
    def _on_worker_state_changed(self, state: str, message: str) -> None:
        logging.getLogger("workbench").info("engine %s: %s", state, message.splitlines()[0] if message else "")
        if state in ("stopped", "failed", "died", "starting"):
            self.heatmap.clear({"starting": "Engine starting…"}.get(state, "No engine running."))

    @Slot()
    def _on_heatmap_timer(self) -> None:
        snapshot = self.engine.worker.latest_snapshot()
        if snapshot is not None and self.status.state == "ready":
            self.heatmap.show_snapshot(snapshot)

    def closeEvent(self, event) -> None:
        self.heatmap_timer.stop()
        self.engine.stop()
        super().closeEvent(event)
