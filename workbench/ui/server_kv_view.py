"""The KV view of an attached server: the prefix cache as vLLM's KV cache events describe it.

A server shows no physical block layout, so the heatmap stands aside and this dock shows what the
bridge's :class:`~workbench.bridge.kv_events_feed.ServerKVEventsFeed` follows, on a GUI timer. Where
the server gave no events endpoint, the view says how to start one with events on.
"""
from __future__ import annotations

from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from workbench.bridge.kv_events_feed import ServerKVEventsFeed
from workbench.remote.kv_events_state import ENABLE_EVENTS_COMMAND
from workbench.ui.prefix_cache_view import PrefixCacheView

NO_ENDPOINT = ("This server was attached without a KV-events endpoint, so there is no prefix-cache view. "
               "Start the server with KV cache events on, then connect again giving its events address "
               f"(tcp://HOST:5557, one per data-parallel rank):\n{ENABLE_EVENTS_COMMAND}")


class ServerKVView(QWidget):
    """The dock's content: the prefix-cache view while a server with events is attached."""

    def __init__(self, feed: ServerKVEventsFeed):
        super().__init__(objectName="serverKvView")
        self.feed = feed
        self.view = PrefixCacheView(self)
        self.advice = QLabel(NO_ENDPOINT, objectName="serverKvAdvice", wordWrap=True)
        self.advice.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.advice)
        layout.addWidget(self.view, 1)
        feed.changed.connect(self._on_feed_changed)

    def _on_feed_changed(self) -> None:
        """Follows the feed while it has a subscriber; what was shown stays until the next attach."""
        feed = self.feed
        self.view.follow(feed.latest if feed.subscriber is not None else None)
        if feed.attached:
            self.advice.setVisible(not feed.endpoints)
            self.view.setVisible(bool(feed.endpoints))

    def close_view(self) -> None:
        self.feed.changed.disconnect(self._on_feed_changed)
        self.view.follow(None)
