"""The main window: assembles the panes and wires them to the engine host; no logic of its own."""
from __future__ import annotations

import logging
import time

from PySide6.QtCore import QTimer, Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLabel, QMainWindow, QTabWidget, QVBoxLayout, QWidget

from workbench.bridge.kv_events_feed import ServerKVEventsFeed
from workbench.bridge.series_keeper import SeriesKeeper
from workbench.bridge.engine_host import EngineThread, ModelFeeder
from workbench.engine.events import EngineState
from workbench.engine.spec import EngineConfig
from workbench.model.app_model import AppModel
from workbench.model.engine_commands import EngineCommands
from workbench.model.engine_status import EngineStatus
from workbench.storage.store import Storage
from workbench.telemetry.memory_service import MemoryService
from workbench.ui.batch_pane import BatchPane
from workbench.ui.chat_pane import ChatPane
from workbench.ui.engine_region import EngineRegion
from workbench.ui.engine_status import RESTART, START, EngineStatusBar
from workbench.ui.kv_heatmap import KVHeatmapView
from workbench.ui.live_plot import share_time_axis
from workbench.ui.memory_panel import MemoryPanel
from workbench.ui.preset_panel import PresetPanel
from workbench.ui.server_actions import ServerActions
from workbench.ui.stats_plots import StatsPlotsView
from workbench.ui.storage_notice import StorageNotice
from workbench.ui.tune_actions import TuneActions
from workbench.ui.window_layout import save_layout
from workbench.ui.window_regions import WindowRegions

HEATMAP_INTERVAL_MS = 100  # the GUI reads the latest snapshot, series and memory at 10 Hz to draw them
MEMORY_EVERY_TICKS = 7  # the memory panel drawn every 7th tick (1.4 Hz); a plot on each of the others


class MainWindow(QMainWindow):
    def __init__(self, engine: EngineThread, model: AppModel, memory: MemoryService, storage: Storage | None = None):
        """``storage``: where the model's changes are kept (already restored into ``model``); None keeps nothing."""
        super().__init__()
        self.setWindowTitle("vLLM Workbench")
        self.engine = engine
        self.model = model
        self.memory_service = memory
        self.storage = storage
        self.feeder = ModelFeeder(engine.host, model)
        self.kv_events = ServerKVEventsFeed(model)  # an attached server's KV cache events, while attached
        # the plotted series kept in storage, on the keeper's own timer (the paint timer only draws)
        self.series_keeper = SeriesKeeper(engine.host, memory, storage, self) if storage else None
        self._last_state = (model.engine.state, model.engine.start_id)
        self.commands = EngineCommands(model, engine.host.post)  # the one owner of engine commands
        self.chat = ChatPane(model, self.commands)
        self.batch = BatchPane(model)  # the chat's engine runs the batch too, through self.commands
        self.heatmap = KVHeatmapView(owner_name=model.owner_label, image_names=model.requests.image_names)
        time_origin = time.monotonic()  # one time axis for every plot: seconds since the window opened
        self.plots = StatsPlotsView(time_origin)
        self.memory = MemoryPanel(time_origin)
        share_time_axis(self.plots.time_plot, self.memory.plot)
        self.status = EngineStatusBar(model)
        self.panes = QTabWidget(objectName="panes")  # the work region: Chat, Batch
        self.panes.addTab(self.chat, "Chat")
        self.panes.addTab(self.batch, "Batch")
        self.engine_region = EngineRegion(self.heatmap, self.plots, self.memory)
        self.regions = WindowRegions(self.panes, self.engine_region)
        central = QWidget()
        layout = QVBoxLayout(central)
        if storage is not None:
            self.storage_notice = StorageNotice(storage, model)
            layout.addWidget(self.storage_notice)
        layout.addWidget(self.status)
        self.download_notice = QLabel(objectName="downloadNotice", visible=False)
        self.download_notice.linkActivated.connect(lambda _link: (self.download_notice.hide(), self.get_model()))
        layout.addWidget(self.download_notice)
        self._offer_unfinished_downloads()
        self.tune = TuneActions(self)  # Tools > Tune…: the Tune tab, and an unfinished search offered
        layout.addWidget(self.tune.notice)
        self.tune.offer_unfinished()
        layout.addWidget(self.regions, 1)
        self.setCentralWidget(central)
        self.presets = PresetPanel(model, self.commands.abort, self.restart_engine, self.tune.take_engine)
        self.engine_region.add_panel("Presets", self.presets)
        self.server = ServerActions(self)  # Server menu and panel: attach to a server, or serve the preset
        self._build_menus()
        self._wire()
        self._tick = 0
        self._shared_out = False
        self.layout_restored = False  # set by window_layout.restore_layout when the user's layout came back
        self.draw_plots = True  # False: the plots and the memory panel left alone (attribution runs)
        self.remember_layout = False  # True (the app, not tests): the layout is kept on close (window_layout)
        self.heatmap_timer = QTimer(self)
        self.heatmap_timer.timeout.connect(self._on_heatmap_timer)
        self.heatmap_timer.start(HEATMAP_INTERVAL_MS)

    def _build_menus(self) -> None:
        from workbench.ui.file_menu import add_file_menu
        from workbench.ui.help_menu import add_help_menu

        add_file_menu(self)  # export the session or a conversation; past sessions
        view_menu = self.menuBar().addMenu("&View")
        self.regions.add_actions(view_menu)
        engine_menu = self.menuBar().addMenu("&Engine")
        presets = QAction("Presets", self)
        presets.triggered.connect(lambda: self.show_panel("Presets"))
        engine_menu.addAction(presets)
        # Start or Restart as the status bar's button says, greyed while starting; Stop while an engine runs
        self.restart_action = engine_menu.addAction(RESTART, self.restart_engine)
        self.stop_action = engine_menu.addAction("Stop engine", self.stop_engine)
        engine_menu.addAction("Show engine log", self.status.show_engine_log)
        self._show_engine_actions(self.model.engine.state)
        model_menu = self.menuBar().addMenu("&Model")
        choose = QAction("Choose model…", self)
        choose.triggered.connect(self.choose_model)
        model_menu.addAction(choose)
        get = QAction("Get a model…", self)
        get.triggered.connect(lambda: self.get_model())
        model_menu.addAction(get)
        self.server.add_menu(self.menuBar())
        tools_menu = self.menuBar().addMenu("&Tools")
        benchmark = QAction("Benchmark…", self)
        benchmark.triggered.connect(self.open_benchmark)
        tools_menu.addAction(benchmark)
        self.tune.add_menu_action(tools_menu)
        add_help_menu(self)

    def _show_engine_actions(self, state: EngineState) -> None:
        self.restart_action.setText(START if state is EngineState.STOPPED else RESTART)
        self.restart_action.setEnabled(state is not EngineState.STARTING)
        self.stop_action.setEnabled(state is EngineState.READY)  # a start runs to its end before a stop is taken

    def show_panel(self, title: str) -> None:
        """The engine region's panel ``title`` in front, the region shown if the work region had the window."""
        if self.regions.whole_window is self.panes:
            self.regions.show_both()
        self.engine_region.show_panel(title)

    def showEvent(self, event) -> None:
        """A first window (no layout kept) shares its width and the engine tab's height out once."""
        super().showEvent(event)
        if not self._shared_out:
            self._shared_out = True
            if not self.layout_restored:
                self.regions.share_width(self.regions.width())
                self.engine_region.share_heights()

    def _wire(self) -> None:
        self.model.engine_changed.connect(self._on_model_engine_changed)
        self.status.restart_requested.connect(self.restart_engine)
        self.status.retry_requested.connect(self.retry_with)
        # the heatmap's "Follow chat" follows the selected conversation's requests
        self.model.conversation_selected.connect(self._follow_conversation)
        self.model.messages_changed.connect(self._follow_conversation)
        self.model.conversation_changed.connect(self._follow_conversation)
        self._follow_conversation(self.model.selected_conversation_id)

    # -------------------------------------------------------------- commands to the engine
    # Each of these asks first while a search's trials use the engine (``TuneActions.take_engine``); 0 or False
    # where the user let the search run.
    @Slot()
    def restart_engine(self) -> int:
        """Starts the engine on the model's configuration; returns the start's id (see EngineStatus.settled).
        Not while another instance holds the database: that one runs the engine (returns 0)."""
        return self.tune.take_engine("restart the engine", self._start) or 0

    def _start(self) -> int:
        if self.storage is not None and self.storage.locked:
            return 0
        return self.commands.start()

    def start_engine(self, config: EngineConfig, doing: str = "start the engine on other settings") -> int:
        def start() -> int:
            self.model.set_config(config)
            return self._start()

        return self.tune.take_engine(doing, start) or 0

    @Slot(object)
    def retry_with(self, changes) -> int:
        """Starts again with the change that a failed start's advice names."""
        return self.start_engine(self.model.config.with_changes(changes), "start the engine again with that change")

    @Slot()
    def stop_engine(self) -> bool:
        return bool(self.tune.take_engine("stop the engine", lambda: self.commands.stop() or True))

    def start_with_model(self, model: str) -> int:
        return self.start_engine(self.model.config.with_model(model), f"start the engine on {model}")

    @Slot()
    def choose_model(self) -> None:
        from workbench.ui.model_picker import GET_A_MODEL, ModelPickerDialog

        dialog = ModelPickerDialog(self)
        if dialog.exec() and dialog.chosen_model():
            if dialog.chosen_model() == GET_A_MODEL:
                self.get_model()
            else:
                self.start_with_model(dialog.chosen_model())

    def _offer_unfinished_downloads(self) -> None:
        """A download the app did not finish (it was closed, killed or crashed): offered again."""
        from workbench.hub.download import unfinished

        names = [plan.repo_id for plan in unfinished()]
        if names:
            self.download_notice.setText(f"The download of {', '.join(names)} did not finish. "
                                         "<a href='resume'>Resume it</a> (Model > Get a model…).")
            self.download_notice.show()

    def get_model(self, show: bool = True):
        """Model > Get a model…: search the Hub, size a model up, download it; "Use" starts the engine on it."""
        from workbench.ui.hub_dialog import GetModelDialog

        dialog = GetModelDialog(self.model, self.start_with_model, self)
        if show:
            dialog.show()
        return dialog

    @Slot()
    def open_benchmark(self, ask_to_stop=None):
        from workbench.ui.benchmark_view import BenchmarkView

        info = self.model.engine.info
        model = info.model if info is not None else self.model.config.model
        view = BenchmarkView(model, lambda: self.model.engine.ready, self.stop_engine, self, ask_to_stop)
        view.show()
        return view

    # -------------------------------------------------------------- what the model reports
    def _on_model_engine_changed(self, status: EngineStatus) -> None:
        if (status.state, status.start_id) == self._last_state:
            return  # start progress, the log's path or the engine's facts: the status bar shows those
        was_ready = self._last_state[0] is EngineState.READY
        self._last_state = (status.state, status.start_id)
        self._show_engine_actions(status.state)
        first_line = status.message.splitlines()[0] if status.message else ""
        logging.getLogger("workbench").info("%s", first_line or f"engine {status.state.value}")
        if status.state is EngineState.READY and status.info is not None:
            info = status.info
            self.chat.sampling.show_chat_template(info)  # the one writer of the template (and its name)
            self.setWindowTitle(f"vLLM Workbench — {info.model} (vLLM {info.vllm_version}, {info.device})")
            client = getattr(self.engine.host, "client_pid", None)  # the engine-client process, if any
            self.memory_service.watch(info, (client,) if client else ())
        elif status.state is not EngineState.READY:
            self.heatmap.clear("Engine starting…" if status.state is EngineState.STARTING else "No engine running.")
            if was_ready:  # the plots keep what they drew, its last figures too, marked where the engine ended
                ended_at = time.monotonic()
                if self.draw_plots:
                    self.plots.show_stats_whole(self.engine.host.latest_stats())
                self.plots.mark_engine_end(status, ended_at)
                self.memory.mark_engine_end(status, ended_at)
            self.memory_service.watch(None)

    def _follow_conversation(self, conversation_id: str) -> None:
        """The heatmap is told the selected conversation's requests (another one's changes are not its)."""
        model = self.model
        if conversation_id != model.selected_conversation_id:
            return
        conversation = model.conversations.get(conversation_id)
        if conversation is None:
            self.heatmap.set_followed("", ())
        else:
            self.heatmap.set_followed(conversation.title, model.request_ids_of(conversation_id))

    @Slot()
    def _on_heatmap_timer(self) -> None:
        host = self.engine.host
        stats = host.latest_stats()
        snapshot = host.latest_snapshot()
        ready = self.model.engine.ready
        if snapshot is not None and ready:
            self.heatmap.show_snapshot(snapshot)
        # The plots (one plot a tick, in turn) and the memory panel (every MEMORY_EVERY_TICKS-th tick)
        # share the ticks: a tick paints the heatmap and at most one plot, so no single pause of the
        # event loop holds every paint and the receiver thread is never kept from the GIL for all seven
        # plots at once (nor, with the thread client, the engine loop that steps vLLM here).
        self._tick = (self._tick + 1) % MEMORY_EVERY_TICKS
        if not self.draw_plots:
            return
        if self._tick and ready:
            self.plots.show_stats(stats)
        elif self._tick == 0:
            self.memory.show_memory(self.memory_service.latest())

    def closeEvent(self, event) -> None:
        """The window goes at once, "Stopping the engine…" shown first; the telemetry, the engine and the
        database stop behind it (``self.shutdown``, a ``ShutdownBehind``; the app's process ends after it)."""
        if getattr(self, "shutdown", None) is not None:  # closed already: stopping behind
            super().closeEvent(event)
            return
        from workbench.bridge.engine_host import ShutdownBehind
        from workbench.presets import check_process

        if self.remember_layout:
            save_layout(self)
        self.status.show_stopping()
        self.chat.keep_draft()  # what was typed in the last second is kept with the rest
        self.heatmap_timer.stop()
        if self.series_keeper is not None:
            self.series_keeper.stop()
        self.server.close()
        self.kv_events.close()
        self.batch.shutdown()
        steps = [self.model.downloads.cancel_all, self.memory_service.stop, check_process.shutdown, self.engine.stop]
        if self.storage is not None:  # last: the lock is let go once the engine's memory is free
            self.storage.mark_stopping()  # a new instance waits for this one rather than refusing
            steps.append(self.storage.close)
        self.shutdown = ShutdownBehind(steps).start()
        super().closeEvent(event)
