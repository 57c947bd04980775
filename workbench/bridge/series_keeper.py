"""Keeps the plots' and the memory panel's series in storage as the engine and the telemetry publish
them, on a timer of its own: the window's paint timer only draws.

Each tick hands storage the latest statistics series and the latest memory state (from the engine's start
on: weights loading); storage keeps the points it has not kept yet. It files a series' points under the
engine run of the start that the series names: an engine's last bin comes as it stops, and stays in the
mailbox for a moment after the next engine is ready.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Slot

from workbench.storage.store import Storage
from workbench.telemetry.memory_service import MemoryService

KEEP_INTERVAL_MS = 250  # the plots' own pace (the statistics are binned at 0.25 s or coarser)


class SeriesKeeper(QObject):
    def __init__(self, mailboxes, memory: MemoryService, storage: Storage, parent: QObject | None = None,
                 interval_ms: int = KEEP_INTERVAL_MS):
        """``mailboxes``: the bridge's engine host (its ``latest_stats``)."""
        super().__init__(parent)
        self.mailboxes, self.memory, self.storage = mailboxes, memory, storage
        self.timer = QTimer(self)
        self.timer.timeout.connect(self.keep)
        self.timer.start(interval_ms)

    @Slot()
    def keep(self) -> None:
        self.storage.record_stats(self.mailboxes.latest_stats())
        self.storage.record_memory(self.memory.latest())

    def stop(self) -> None:
        """No more points (the window closes; storage closes behind it)."""
        self.timer.stop()
