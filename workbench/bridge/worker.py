"""The bridge: a QThread that hosts the engine loop, and the signals that carry its results.

Commands reach the loop on its queue between steps. Text arrives in ~50 ms batches per request
(never a signal per token); KV snapshots go to a mailbox that the GUI reads on its own timer.
Signals are emitted on the worker thread and delivered, queued, to slots of GUI-thread QObjects.
"""
from __future__ import annotations

import threading

from PySide6.QtCore import QObject, QThread, Signal, Slot

from workbench.engine.kv_snapshot import KVSnapshot
from workbench.engine.loop import EngineLoop, Shutdown
from workbench.engine.process_guard import child_pids, kill_processes


class EngineWorker(QObject):
    state_changed = Signal(str, str)  # state, message
    start_progressed = Signal(object)  # StartProgress
    engine_ready = Signal(object)  # EngineInfo
    text_flushed = Signal(object)  # dict: request id -> new text (a fresh dict each flush; no Qt map copy)
    request_finished = Signal(object)  # StreamEvent with figures
    request_failed = Signal(str, str)  # request id, message
    engine_log_opened = Signal(str)  # path of the engine's own log for its latest start

    def __init__(self, check_with_scan: bool = False):
        super().__init__()
        self.loop = EngineLoop(_SignalListener(self), check_with_scan=check_with_scan)
        self._latest: KVSnapshot | None = None
        self._lock = threading.Lock()

    def post(self, command) -> None:
        self.loop.post(command)

    def latest_snapshot(self) -> KVSnapshot | None:
        with self._lock:
            return self._latest

    def _store_snapshot(self, snapshot: KVSnapshot) -> None:
        with self._lock:
            self._latest = snapshot

    @Slot()
    def run(self) -> None:
        self.loop.run()


class _SignalListener:
    """The loop's listener: turns results into signals (and snapshots into the mailbox)."""

    def __init__(self, worker: EngineWorker):
        self.worker = worker

    def engine_state_changed(self, state: str, message: str) -> None:
        self.worker.state_changed.emit(state, message)

    def start_progressed(self, progress) -> None:
        self.worker.start_progressed.emit(progress)

    def engine_ready(self, info) -> None:
        self.worker.engine_ready.emit(info)

    def text_flushed(self, chunks: dict) -> None:
        self.worker.text_flushed.emit(chunks)

    def request_finished(self, event) -> None:
        self.worker.request_finished.emit(event)

    def request_failed(self, request_id: str, message: str) -> None:
        self.worker.request_failed.emit(request_id, message)

    def snapshot_published(self, snapshot: KVSnapshot) -> None:
        self.worker._store_snapshot(snapshot)

    def engine_log_opened(self, path: str) -> None:
        self.worker.engine_log_opened.emit(path)


class EngineThread:
    """Owns the worker thread; :meth:`stop` shuts the engine down and joins the thread."""

    def __init__(self, check_with_scan: bool = False):
        self.worker = EngineWorker(check_with_scan=check_with_scan)
        self.thread = QThread()
        self.thread.setObjectName("engine-worker")
        self.worker.moveToThread(self.thread)
        self.thread.started.connect(self.worker.run)

    def start(self) -> None:
        self.thread.start()

    def stop(self, timeout_ms: int = 60_000) -> bool:
        if not self.thread.isRunning():
            return True
        self.worker.post(Shutdown())
        self.thread.quit()
        if self.thread.wait(timeout_ms):
            return True
        kill_processes(sorted(child_pids()))  # a hung engine must not outlive the app
        return self.thread.wait(5_000)
