"""Connect to server and Serve: the two ways to put a vLLM server behind the panes."""
from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFormLayout, QLabel, QLineEdit, QMessageBox, QSpinBox,
    QVBoxLayout,
)

from workbench.engine.spec import EngineConfig
from workbench.remote.recent import recent_servers
from workbench.remote.serve import free_port
from workbench.remote.spec import KVEventsEndpoint, ServeOptions, ServerSpec, check_url, needs_plain_http_confirmation

TLS_WARNING = ("Certificate checks off: anyone between you and this server can read and change what is sent, "
               "the API key included. Turn this off only for a server you control.")


class ConnectDialog(QDialog):
    """Base URL, optional API key, optional KV-events endpoint; recent servers offered (without key)."""

    def __init__(self, parent=None, recent: list[ServerSpec] | None = None):
        super().__init__(parent)
        self.setWindowTitle("Connect to server")
        self.setObjectName("connectDialog")
        self.recent = recent if recent is not None else recent_servers()
        self.url = QComboBox(editable=True, objectName="serverUrl")
        self.url.addItems([s.api_root for s in self.recent])
        self.url.setCurrentText(self.recent[0].api_root if self.recent else "http://127.0.0.1:8000")
        self.url.currentIndexChanged.connect(self._on_url_recent_chosen)
        self.key = QLineEdit(objectName="serverKey", echoMode=QLineEdit.EchoMode.Password)
        self.key.setPlaceholderText("none (the server's --api-key, if it has one)")
        self.kv_events = QLineEdit(objectName="serverKvEvents")
        self.kv_events.setPlaceholderText("optional, e.g. tcp://host:5557 (the server's --kv-events-config endpoint)")
        self.verify = QCheckBox("Verify TLS certificates", objectName="serverVerifyTls", checked=True)
        self.tls_warning = QLabel(TLS_WARNING, objectName="serverTlsWarning", wordWrap=True)
        self.tls_warning.setStyleSheet("color: #b45309;")
        self.tls_warning.setVisible(False)
        self.verify.toggled.connect(lambda on: self.tls_warning.setVisible(not on))
        form = QFormLayout()
        form.addRow("Base URL", self.url)
        form.addRow("API key", self.key)
        form.addRow("KV events", self.kv_events)
        form.addRow("", self.verify)
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.button(QDialogButtonBox.Ok).setText("Connect")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.tls_warning)
        layout.addWidget(buttons)
        self._spec: ServerSpec | None = None
        self._on_url_recent_chosen(0 if self.recent else -1)  # the last server's settings, but never its key

    def _on_url_recent_chosen(self, index: int) -> None:
        if 0 <= index < len(self.recent):
            chosen = self.recent[index]
            self.verify.setChecked(chosen.verify_tls)
            self.kv_events.setText(chosen.kv_events_endpoints[0].publisher if chosen.kv_events_endpoints else "")

    def spec_or_problem(self) -> tuple[ServerSpec | None, str]:
        """The server as filled in, or (None, what is wrong with it)."""
        try:
            url = check_url(self.url.currentText())
        except ValueError as exc:
            return None, str(exc)
        events = self.kv_events.text().strip()
        if events and not events.startswith(("tcp://", "ipc://")):
            return None, (f"'{events}' is not a ZMQ endpoint: write it as tcp://host:port, as in the server's "
                          "--kv-events-config endpoint.")
        endpoints = (KVEventsEndpoint(events),) if events else ()
        return ServerSpec(url, api_key=self.key.text().strip(), kv_events_endpoints=endpoints,
                          verify_tls=self.verify.isChecked()), ""

    def accept(self) -> None:
        spec, problem = self.spec_or_problem()
        if spec is None:
            QMessageBox.warning(self, "Connect to server", problem)
            return
        if needs_plain_http_confirmation(spec.api_root) and not confirm_plain_http(self, spec.api_root):
            return
        self._spec = spec
        super().accept()

    def spec(self) -> ServerSpec | None:
        return self._spec


def confirm_plain_http(parent, url: str) -> bool:
    answer = QMessageBox.question(
        parent, "Unencrypted connection",
        f"{url} is plain http to another machine: prompts, replies and the API key travel unencrypted. "
        "Connect anyway?", QMessageBox.Yes | QMessageBox.No, QMessageBox.No)
    return answer == QMessageBox.Yes


class ServeDialog(QDialog):
    """Serve the current preset: vLLM's API server on a port the user picks, KV events on loopback."""

    def __init__(self, config: EngineConfig, preset_name: str, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Serve the current preset")
        self.setObjectName("serveDialog")
        self.config = config
        self.port = QSpinBox(objectName="servePort", minimum=1024, maximum=65535, value=free_port())
        about = QLabel(f"Starts vLLM's own OpenAI-compatible server on {config.model} with the "
                       f"{preset_name or 'current'} preset's engine arguments, on 127.0.0.1, with Prometheus "
                       "metrics and KV cache events on loopback, and attaches the workbench to it. The local "
                       "engine stops first, so the two do not share this machine's memory.", wordWrap=True)
        form = QFormLayout()
        form.addRow("Port", self.port)
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.button(QDialogButtonBox.Ok).setText("Serve")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(about)
        layout.addLayout(form)
        layout.addWidget(buttons)

    def options(self) -> ServeOptions:
        return serve_options(self.config, self.port.value())


def serve_options(config: EngineConfig, port: int) -> ServeOptions:
    """The preset served on ``port``, KV events and their replay on two free loopback ports."""
    return ServeOptions(config, port, free_port(), free_port())
