"""The attached server's KV cache events, followed while it is attached: the data source of the
prefix-cache view, which only observes it.

A :class:`~workbench.remote.kv_events.KVEventsSubscriber` (a thread of its own) runs while the model
says a server is attached and ready and gave events endpoints; it stops when the server goes or
another engine starts, and when the window closes. No Qt.
"""
from __future__ import annotations

from psygnal import Signal

from workbench.model.app_model import AppModel
from workbench.remote.kv_events import EventsEndpoint, KVEventsSubscriber
from workbench.remote.kv_events_state import KVEventsState
from workbench.remote.spec import KVEventsEndpoint


class ServerKVEventsFeed:
    changed = Signal()  # attached or detached: ``attached`` and ``endpoints`` say which

    def __init__(self, model: AppModel):
        self.model = model
        self.subscriber: KVEventsSubscriber | None = None
        self.attached = False  # a server is attached and ready (with events endpoints or none)
        self.endpoints: tuple[KVEventsEndpoint, ...] = ()
        model.engine_changed.connect(self._follow)
        model.server_changed.connect(self._follow)

    def latest(self) -> KVEventsState | None:
        """The subscriber's latest snapshot; None while no server with events endpoints is attached."""
        return self.subscriber.latest() if self.subscriber is not None else None

    def close(self) -> None:
        """The window closes: the subscriber's thread ends."""
        self.model.engine_changed.disconnect(self._follow)
        self.model.server_changed.disconnect(self._follow)
        self._detach()

    def _follow(self, *_) -> None:
        """The server's endpoints come with its status, which may follow the engine's ready state."""
        engine = self.model.engine
        if not (engine.ready and engine.info is not None and engine.info.device == "server"):
            if self.attached:
                self._detach()
                self.changed.emit()
            return
        endpoints = self.model.server.kv_events_endpoints
        if self.attached and endpoints == self.endpoints:
            return
        self._detach()
        self.attached, self.endpoints = True, endpoints
        if endpoints:
            self.subscriber = KVEventsSubscriber([EventsEndpoint(e.publisher, e.replay, e.rank, listen=e.listen)
                                                  for e in endpoints]).start()
        self.changed.emit()

    def _detach(self) -> None:
        if self.subscriber is not None:
            self.subscriber.stop()
            self.subscriber = None
        self.attached, self.endpoints = False, ()
