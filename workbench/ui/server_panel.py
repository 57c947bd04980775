"""The server panel: connection state, the endpoint ready to copy, the server's log, every engine's
figures from its /metrics and their sum. It observes ``AppModel.server_changed``."""
from __future__ import annotations

import math

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QHBoxLayout, QHeaderView, QLabel, QLineEdit, QPushButton, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget,
)

from workbench.model.app_model import AppModel
from workbench.model.server_status import ServerStatus
from workbench.remote.prometheus import EngineMetrics

COLUMNS = ("engine", "running", "waiting", "KV usage %", "prompt tok", "generated tok", "prefix hit %", "preempted")
STATE_TEXT = {"connected": "Connected", "reconnecting": "Connection lost: reconnecting", "closed": "Closed",
              "": "No server attached (Server > Connect to server… or Serve current preset…)"}


def engine_row(engine: EngineMetrics) -> list[str]:
    g, c = engine.gauges, engine.counters

    def gauge(name: str, scale: float = 1.0, digits: int = 0) -> str:
        return "not available" if name not in g or math.isnan(g[name]) else f"{g[name] * scale:.{digits}f}"

    queries = c.get("prefix_queries", 0.0)
    hit = f"{c.get('prefix_hits', 0.0) / queries * 100:.1f}" if queries else "—"
    return [engine.engine, gauge("num_running"), gauge("num_waiting"), gauge("kv_usage", 100, 1),
            f"{c.get('prompt_tokens', 0):,.0f}", f"{c.get('generation_tokens', 0):,.0f}", hit,
            f"{c.get('preemptions', 0):,.0f}"]


class ServerPanel(QWidget):
    def __init__(self, model: AppModel, show_log):
        super().__init__()
        self.setObjectName("serverPanel")
        self.state = QLabel(objectName="serverState", wordWrap=True)
        self.endpoint = QLineEdit(objectName="serverEndpoint", readOnly=True)
        self.copy = QPushButton("Copy", objectName="serverCopy")
        self.copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(self.endpoint.text()))
        self.log = QPushButton("Show server log", objectName="serverLog")
        self.log.clicked.connect(show_log)
        self.kv_events = QLabel(objectName="serverKvEvents", wordWrap=True)
        self.problem = QLabel(objectName="serverMetricsProblem", wordWrap=True)
        self.problem.setStyleSheet("color: #b45309;")
        self.table = QTableWidget(0, len(COLUMNS), objectName="serverEngines")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        # the columns share the panel's width (a narrow engine region too): a header's words wrap onto a second
        # line rather than being cut at both ends ("enerated to"), figures fit
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.Stretch)
        header.setMinimumSectionSize(36)
        header.setDefaultAlignment(Qt.AlignCenter | Qt.TextWordWrap)
        header.setMinimumHeight(2 * header.fontMetrics().lineSpacing() + 8)  # room for the second line
        self.table.setWordWrap(True)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        for column, name in enumerate(COLUMNS):
            self.table.horizontalHeaderItem(column).setToolTip(name)
        row = QHBoxLayout()
        row.addWidget(QLabel("Endpoint"))
        row.addWidget(self.endpoint, 1)
        row.addWidget(self.copy)
        row.addWidget(self.log)
        layout = QVBoxLayout(self)
        layout.addWidget(self.state)
        layout.addLayout(row)
        layout.addWidget(self.kv_events)
        layout.addWidget(self.problem)
        layout.addWidget(self.table, 1)
        model.server_changed.connect(self.show_status)
        self.show_status(model.server)

    def show_status(self, status: ServerStatus) -> None:
        text = STATE_TEXT.get(status.state, status.state)
        if status.state == "reconnecting":
            wait = f", next try in {status.retry_in_s:g} s" if status.retry_in_s is not None else ""
            text += f" (attempt {status.attempt}{wait}). {status.message}"
        elif status.state == "connected" and status.served:
            text += " to the server this workbench started (it stops with the workbench)."
        self.state.setText(text)
        self.endpoint.setText(f"{status.base_url}/v1" if status.base_url and status.state else "")
        self.copy.setEnabled(bool(self.endpoint.text()))
        self.log.setEnabled(status.log_path is not None and bool(status.state))
        self.kv_events.setText(self._kv_text(status))
        self.problem.setText(status.metrics_problem)
        self.problem.setVisible(bool(status.metrics_problem))
        self._show_metrics(status)

    @staticmethod
    def _kv_text(status: ServerStatus) -> str:
        if not status.state:
            return ""
        if not status.kv_events_endpoints:
            return "KV cache events: none given (no prefix-cache view for this server)."
        parts = [e.publisher + (f" (replay {e.replay})" if e.replay else "") for e in status.kv_events_endpoints]
        return "KV cache events: " + ", ".join(parts)

    def _show_metrics(self, status: ServerStatus) -> None:
        metrics = status.metrics if status.state else None
        rows = [] if metrics is None else [engine_row(e) for e in metrics.engines]
        if metrics is not None and len(metrics.engines) > 1:
            rows.append(engine_row(metrics.total()))
        self.table.setRowCount(len(rows))
        for r, values in enumerate(rows):
            for c, value in enumerate(values):
                item = self.table.item(r, c)
                if item is None:
                    self.table.setItem(r, c, QTableWidgetItem(value))
                elif item.text() != value:
                    item.setText(value)
