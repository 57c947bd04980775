"""The KV view of an attached server: the prefix cache as vLLM's KV cache events describe it.

A server shows no physical block layout, so the heatmap stands aside and this dock follows a
:class:`~workbench.remote.kv_events.KVEventsSubscriber` (its own thread) on a GUI timer. Where the
server gave no events endpoint, the view says how to start one with events on.
"""
from __future__ import annotations

from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from workbench.remote.kv_events import EventsEndpoint, KVEventsSubscriber
from workbench.remote.kv_events_state import ENABLE_EVENTS_COMMAND
from workbench.remote.spec import KVEventsEndpoint
from workbench.ui.prefix_cache_view import PrefixCacheView

NO_ENDPOINT = ("This server was attached without a KV-events endpoint, so there is no prefix-cache view. "
               "Start the server with KV cache events on, then connect again giving its events address "
               f"(tcp://HOST:5557, one per data-parallel rank):\n{ENABLE_EVENTS_COMMAND}")


class ServerKVView(QWidget):
    """The dock's content: the prefix-cache view while a server with events is attached."""

    def __init__(self):
        super().__init__(objectName="serverKvView")
        self.view = PrefixCacheView(self)
        self.advice = QLabel(NO_ENDPOINT, objectName="serverKvAdvice", wordWrap=True)
        self.advice.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.advice)
        layout.addWidget(self.view, 1)
        self.subscriber: KVEventsSubscriber | None = None
        self._endpoints: tuple[KVEventsEndpoint, ...] = ()
        self._attached = False

    def attach(self, endpoints: tuple[KVEventsEndpoint, ...]) -> None:
        """Follows ``endpoints`` (the same ones again: nothing changes)."""
        if self._attached and endpoints == self._endpoints:
            return
        self.detach()
        self._attached, self._endpoints = True, endpoints
        self.advice.setVisible(not endpoints)
        self.view.setVisible(bool(endpoints))
        if endpoints:
            self.subscriber = KVEventsSubscriber([EventsEndpoint(e.publisher, e.replay, e.rank, listen=e.listen)
                                                  for e in endpoints]).start()
            self.view.follow(self.subscriber.latest)

    def detach(self) -> None:
        """Stops following (the subscriber's thread ends); what was shown stays until the next attach."""
        self.view.follow(None)
        if self.subscriber is not None:
            self.subscriber.stop()
            self.subscriber = None
        self._attached, self._endpoints = False, ()
