"""The Server menu and panel: connect to a vLLM server, serve the current preset as one, disconnect.

A server takes the local engine's place behind the panes: the start command carries a
``ServerSpec`` instead of an ``EngineConfig``, and the engine loop runs it through the same backend
interface. The model's configuration stays the local preset's, so Engine > Restart engine goes back
to the local engine.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, Slot
from PySide6.QtGui import QAction

from workbench.engine.events import EngineState
from workbench.remote.recent import remember
from workbench.remote.serve import kv_endpoints
from workbench.remote.spec import ServeOptions, ServerSpec
from workbench.ui.server_kv_view import ServerKVView
from workbench.ui.server_panel import ServerPanel

NO_BLOCK_LAYOUT = ("A server shows no physical block layout: its KV view is the prefix cache as vLLM's KV "
                   "cache events describe it.")


class ServerActions(QObject):
    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.panel = ServerPanel(window.model, window.status.show_engine_log)
        window.engine_region.add_panel("Server", self.panel)  # a tab beside the presets
        # the server's prefix cache, from its KV cache events: in the heatmap's place while attached
        self.kv_view = ServerKVView(window.kv_events)
        window.model.engine_changed.connect(self._on_model_engine_changed)
        window.kv_events.changed.connect(self._on_kv_events_changed)

    def add_menu(self, menu_bar) -> None:
        menu = menu_bar.addMenu("&Server")
        for text, slot in (("Server panel", lambda: self.window.show_panel("Server")),
                           ("Connect to server…", self.ask_connect), ("Serve current preset…", self.ask_serve)):
            action = QAction(text, self.window)
            action.triggered.connect(slot)
            menu.addAction(action)
        self.disconnect_action = QAction("Disconnect", self.window)
        self.disconnect_action.triggered.connect(self.disconnect)
        menu.addAction(self.disconnect_action)
        self._show_disconnect(self.window.model.server)
        self.window.model.server_changed.connect(self._show_disconnect)

    def _show_disconnect(self, server) -> None:
        """Disconnect is offered only where a server is in use (it would do nothing otherwise)."""
        self.disconnect_action.setEnabled(bool(server.state))

    # -------------------------------------------------------------- commands
    def connect(self, spec: ServerSpec) -> int:
        """Attaches to ``spec`` (the local engine stops first); returns the start's id. The server is
        remembered without its key."""
        if self._locked():
            return 0
        doing = "serve the preset" if spec.serve is not None else f"connect to {spec.base_url}"
        start_id = self.window.tune.take_engine(doing, lambda: self.window.commands.start_on(spec))
        if not start_id:  # a search keeps the engine
            return 0
        if spec.serve is None:
            remember(spec)
        self.window.show_panel("Server")  # its tab in front of the presets'
        return start_id

    def serve(self, options: ServeOptions) -> int:
        """Starts vLLM's API server on ``options`` and attaches to it; returns the start's id at once.
        The demo model, where it is not built yet, is built by the start on the engine's thread, its
        progress in the status bar, the window free meanwhile."""
        spec = ServerSpec(f"http://{options.host}:{options.port}", serve=options,
                          kv_events_endpoints=kv_endpoints(options))
        return self.connect(spec)

    @Slot()
    def disconnect(self) -> None:
        """Stops using the server (a served one is stopped too); the window has no engine until the next start."""
        if self.window.model.server.state:
            self.window.commands.stop()

    @Slot()
    def ask_connect(self) -> None:
        from workbench.ui.server_dialogs import ConnectDialog

        dialog = ConnectDialog(self.window)
        if dialog.exec() and dialog.spec() is not None:
            self.connect(dialog.spec())

    @Slot()
    def ask_serve(self) -> None:
        from workbench.ui.server_dialogs import ServeDialog

        model = self.window.model
        dialog = ServeDialog(model.config, model.preset_name, self.window)
        if dialog.exec():
            self.serve(dialog.options())

    def _locked(self) -> bool:
        storage = self.window.storage
        return storage is not None and storage.locked

    def close(self) -> None:
        """The window closes: the view stops following (the bridge's feed stops its subscriber)."""
        self.kv_view.close_view()

    def _on_kv_events_changed(self) -> None:
        region = self.window.engine_region
        if self.window.kv_events.attached and region.heat_area.currentWidget() is not self.kv_view:
            region.show_in_heat_area(self.kv_view)

    def _on_model_engine_changed(self, status) -> None:
        if status.state is EngineState.READY and status.info is not None and status.info.device == "server":
            self.window.heatmap.clear(NO_BLOCK_LAYOUT)
        elif status.state is EngineState.READY:
            self.window.engine_region.show_in_heat_area(None)  # a local engine: its blocks again
