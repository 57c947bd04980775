"""The bridge: a QThread that hosts the engine loop, and the one signal that carries its messages.

Commands reach the loop on its queue between steps. The loop's messages (``workbench.engine.events``:
text in ~50 ms batches per request, never a signal per token; finished and failed requests; engine
states) are emitted on the host's thread and delivered, queued, to :class:`ModelFeeder`, a
GUI-thread QObject that applies them to the application model. KV snapshots and the statistics'
series go to mailboxes (the latest of each only) that the GUI reads on its own timer.
"""
from __future__ import annotations

import threading
import traceback
from typing import Callable

from PySide6.QtCore import QObject, QThread, Signal, Slot

from workbench.bridge.backends import backend_for
from workbench.engine.commands import Shutdown
from workbench.engine.events import EngineReady
from workbench.engine.kv_snapshot import KVSnapshot
from workbench.engine.loop import EngineLoop
from workbench.engine.stats import EMPTY_STATS, StatsSeries
from workbench.engine.process_guard import child_pids, kill_processes


class Mailboxes:
    """The latest KV snapshot and the latest statistics series, each replaced whole by the side that
    receives them and read by the window's timer (latest only: a stale one is never drawn)."""

    def __init__(self):
        self._latest: KVSnapshot | None = None
        self._stats: StatsSeries = EMPTY_STATS
        self._lock = threading.Lock()

    def latest_snapshot(self) -> KVSnapshot | None:
        with self._lock:
            return self._latest

    def _store_snapshot(self, snapshot: KVSnapshot | None) -> None:
        with self._lock:
            self._latest = snapshot

    def latest_stats(self) -> StatsSeries:
        """The engine's statistics as series, as last published (empty before the first)."""
        with self._lock:
            return self._stats

    def _store_stats(self, series: StatsSeries) -> None:
        with self._lock:
            self._stats = series


class LoopHost(QObject, Mailboxes):
    event_emitted = Signal(object)  # one of workbench.engine.events, immutable

    def __init__(self, check_with_scan: bool = False):
        QObject.__init__(self)
        Mailboxes.__init__(self)
        self.loop = EngineLoop(_SignalListener(self), backend_factory=backend_for, check_with_scan=check_with_scan)

    def post(self, command) -> None:
        self.loop.post(command)

    @Slot()
    def run(self) -> None:
        self.loop.run()


class _SignalListener:
    """The loop's listener: messages become the host's signal, snapshots and series go to mailboxes."""

    def __init__(self, host: LoopHost):
        self.emit = host.event_emitted.emit
        self.store = host._store_snapshot
        self.stats_published = host._store_stats

    def publish(self, event) -> None:
        if isinstance(event, EngineReady):  # a new engine: the last one's block pool is gone
            self.store(None)
        self.emit(event)

    def snapshot_published(self, snapshot: KVSnapshot) -> None:
        self.store(snapshot)


class ModelFeeder(QObject):
    """Lives in the GUI thread: applies the loop's messages to the application model, in order."""

    def __init__(self, host: LoopHost, model):
        super().__init__()
        self.model = model
        host.event_emitted.connect(self._on_host_event_emitted)

    @Slot(object)
    def _on_host_event_emitted(self, event) -> None:
        self.model.apply(event)


class HostThread:
    """A host QObject (it hosts the engine loop, or talks to the process that does) on a QThread of its
    own, its ``run`` started with the thread."""

    def __init__(self, host: QObject, name: str):
        self.host = host
        self.thread = QThread()
        self.thread.setObjectName(name)
        self.host.moveToThread(self.thread)
        self.thread.started.connect(self.host.run)

    def start(self) -> None:
        self.thread.start()


class EngineThread(HostThread):
    """Owns the host thread; :meth:`stop` shuts the engine down and joins the thread."""

    def __init__(self, check_with_scan: bool = False):
        super().__init__(LoopHost(check_with_scan=check_with_scan), "engine-host")

    def stop(self, timeout_ms: int = 60_000) -> bool:
        if not self.thread.isRunning():
            return True
        self.host.post(Shutdown())
        self.thread.quit()
        if self.thread.wait(timeout_ms):
            return True
        kill_processes(sorted(child_pids()))  # a hung engine must not outlive the app
        return self.thread.wait(5_000)


class ShutdownBehind:
    """The app's stop after its window has gone: ``steps`` (the telemetry, the engine, the storage) run
    in order on a thread of their own, so the GUI thread never waits for an engine to stop. The thread
    is not a daemon: the process ends after it, whatever the event loop does."""

    def __init__(self, steps: list[Callable[[], object]]):
        self.steps = steps
        self.stopped_on: int | None = None  # the thread the steps ran on (threading.get_ident)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="app-shutdown")

    def start(self) -> ShutdownBehind:
        self._thread.start()
        return self

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Waits until every step has run; True when they have."""
        return self._done.wait(timeout_s)

    def _run(self) -> None:
        self.stopped_on = threading.get_ident()
        try:
            for step in self.steps:
                try:
                    step()
                except Exception:  # one step's failure must not keep the others (the database) from running
                    traceback.print_exc()
        finally:
            self._done.set()
