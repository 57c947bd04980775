"""The bridge to an engine-client process: the engine loop runs in a process of its own
(``workbench.engine.client_process``), and this side feeds the window exactly what
:class:`~workbench.bridge.worker.EngineWorker` feeds it from a thread.

:class:`ClientProcessWorker` offers the worker's face: ``post(command)``, the ``event_emitted`` signal
(delivered queued to ``ModelFeeder``), and the latest-only ``latest_snapshot`` / ``latest_stats``
mailboxes. Its receiver runs on a QThread ("engine-client-receiver"): it reads the client's batches
from the pipe, rebuilds snapshots and series from what changed (``engine.client_wire``), fills the
mailboxes and emits the messages in order. The client process is started by the first command
after it is gone (a start, or a restart after it died), on the thread that posts (the GUI thread:
``PDEATHSIG`` is tied to the thread that started a process, so it must outlive the client).

A client that ends without being asked (killed, crashed) is reported as the engine's death: each
open request fails with the reason (their text so far stays in the window) and the engine is DIED,
so the window offers a restart, as after an engine-core crash.
"""
from __future__ import annotations

import collections
import itertools
import os
import queue
import socket
import subprocess
import sys
import threading
import time
import traceback
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt, QThread, QTimer, Signal, Slot

from workbench.bridge.worker import Mailboxes, WorkerThread
from workbench.engine.client_wire import Batch, CallInClient, Reply, SnapshotDecoder, StatsDecoder
from workbench.engine.commands import AdoptEngine, Shutdown, StartEngine, Submit, SubmitAll
from workbench.engine.events import EngineReady, EngineState, RequestFailed, RequestFinished, StateChanged
from workbench.engine.loop import NOT_RUNNING
from workbench.engine.process_death import OomVerdict, OomWitness, ended
from workbench.engine.process_guard import CLIENT_PARENT_ENV, child_pids, is_running, kill_processes

BACKEND_FACTORY = "workbench.bridge.backends:backend_for"


class _Client:
    """One engine-client process and its end of the pipe."""

    def __init__(self, check_with_scan: bool):
        ours, theirs = socket.socketpair()
        env = {**os.environ, CLIENT_PARENT_ENV: str(os.getpid())}
        args = [sys.executable, "-m", "workbench.engine.client_process", str(theirs.fileno()), BACKEND_FACTORY]
        if check_with_scan:
            args.append("--check-with-scan")
        self.process = subprocess.Popen(args, pass_fds=(theirs.fileno(),), env=env)
        theirs.close()
        self.conn = Connection(ours.detach())
        self.witness = OomWitness.now()  # the kernel's count of out-of-memory kills, to compare at its death
        self.send_lock = threading.Lock()
        self.asked_to_end = False
        # What a report of its death needs: the requests it holds, its latest start, its engine's processes.
        self.open: set[str] = set()
        self.start_id = 0
        self.engine_pids: tuple[int, ...] = ()

    @property
    def pid(self) -> int:
        return self.process.pid

    def send(self, command) -> bool:
        with self.send_lock:
            try:
                self.conn.send(command)
                return True
            except (OSError, ValueError):
                return False

    def how_it_ended(self, timeout_s: float = 5.0) -> str:
        """Its end in words: the signal that killed it and what is known of who sent it; "still running"
        only of a process that still runs after ``timeout_s``."""
        who = f"the engine client process (pid {self.pid})"
        try:
            code = self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return f"{who} is still running but stopped answering"
        return ended(who, code, self.witness.verdict([self.pid]) if code < 0 else OomVerdict("unknown"))


_SEND_OUTBOX = QEvent.Type(QEvent.registerEventType())


class _OutboxSender(QObject):
    """Lives on the GUI thread and sends the requests posted in one turn of its event loop, from a
    high-priority posted event: Qt delivers it before the layout and paint events that the same turn
    posted (drawing the question just asked, a batch's rows), where a zero timer would come after
    them. The request leaves for the engine before the window draws anything of it."""

    def __init__(self, send):
        super().__init__()
        self._send = send

    def post(self) -> None:
        QCoreApplication.postEvent(self, QEvent(_SEND_OUTBOX), Qt.HighEventPriority.value)

    def event(self, event) -> bool:
        if event.type() == _SEND_OUTBOX:
            self._send()
            return True
        return super().event(event)


class ClientProcessWorker(QObject, Mailboxes):
    """``EngineWorker``'s face over an engine-client process: ``post`` from the GUI thread, the
    ``event_emitted`` signal and the two mailboxes filled by :meth:`run` on the receiver thread."""

    event_emitted = Signal(object)  # one of workbench.engine.events, immutable

    def __init__(self, check_with_scan: bool = False):
        QObject.__init__(self)
        Mailboxes.__init__(self)  # its lock also guards the current client
        self.check_with_scan = check_with_scan
        self._clients: queue.Queue = queue.Queue()  # clients for the receiver to read, None: stop
        self._client: _Client | None = None
        self._stopping = False
        self._gui_thread = QThread.currentThread()  # this object itself moves to the receiver's thread
        self._outbox: list[Submit] = []  # requests posted in this turn of the GUI's event loop
        self._outbox_sender = _OutboxSender(self._send_outbox)  # no parent: it stays on the GUI thread
        self._replies: dict[int, Reply] = {}
        self._replied = threading.Condition()
        self._call_ids = itertools.count(1)
        self.client_pid: int | None = None  # the running client's pid (benchmarks count its CPU)
        # Per batch that brought a KV snapshot: (bytes, ms to unpickle and rebuild it) on the receiver thread.
        self.snapshot_receipts: collections.deque = collections.deque(maxlen=100_000)

    # -------------------------------------------------------------- the worker's face
    def post(self, command) -> None:
        """Sends a command to the client; a start (or a benchmark's call) starts a client first where
        none runs. Without a client, a request fails at once, as the loop fails it with no engine.

        Requests posted on the GUI thread go together at the end of the event loop's turn (one
        :class:`SubmitAll`): the engine gets a batch's top-up, or a benchmark's streams, before its
        next step rather than over several. Any other command sends them first, so order is kept."""
        if isinstance(command, AdoptEngine):
            raise TypeError("AdoptEngine hands over an engine object, which cannot cross to the engine-client "
                            "process; the benchmarks share its engine through workbench.bench.client_bench")
        on_gui_thread = QThread.currentThread() == self._gui_thread
        if isinstance(command, Submit) and on_gui_thread:
            self._outbox.append(command)
            if len(self._outbox) == 1:
                self._outbox_sender.post()
            return
        if on_gui_thread:
            self._send_outbox()
        self._post_now(command)

    def _send_outbox(self) -> None:
        submits, self._outbox = self._outbox, []
        if len(submits) == 1:
            self._post_now(submits[0])
        elif submits:
            self._post_now(SubmitAll(tuple(s.request for s in submits)))

    def _post_now(self, command) -> None:
        with self._lock:
            client = self._client
            if client is None or client.process.poll() is not None:
                if self._stopping or not isinstance(command, (StartEngine, CallInClient, Submit, SubmitAll)):
                    return
                if isinstance(command, (Submit, SubmitAll)):  # told after the caller's own work, as queued
                    requests = command.requests if isinstance(command, SubmitAll) else (command.request,)
                    for failed in [RequestFailed(r.request_id, NOT_RUNNING) for r in requests]:
                        QTimer.singleShot(0, lambda failed=failed: self.event_emitted.emit(failed))
                    return
                client = self._client = _Client(self.check_with_scan)
                self.client_pid = client.pid
                self._clients.put(client)
            if isinstance(command, Submit):
                client.open.add(command.request.request_id)
            elif isinstance(command, SubmitAll):
                client.open.update(r.request_id for r in command.requests)
            elif isinstance(command, StartEngine):
                client.start_id = command.start_id
            elif isinstance(command, Shutdown):
                client.asked_to_end = True
        client.send(command)

    def call(self, function, *args, timeout_s: float = 600.0):
        """Benchmarks only: runs ``function(loop, *args)`` in the client between steps; its result."""
        return self.wait_reply(self.post_call(function, *args), timeout_s)

    def post_call(self, function, *args) -> int:
        call_id = next(self._call_ids)
        self.post(CallInClient(call_id, function, args))
        return call_id

    def wait_reply(self, call_id: int, timeout_s: float = 600.0):
        with self._replied:
            if not self._replied.wait_for(lambda: call_id in self._replies or self._client_gone(), timeout_s):
                raise TimeoutError(f"the engine client did not answer call {call_id} in {timeout_s:.0f} s")
            reply = self._replies.pop(call_id, None)
        if reply is None:
            raise RuntimeError("the engine client process ended before it answered")
        if reply.error is not None:
            raise RuntimeError(f"in the engine client: {reply.error}")
        return reply.value

    def _client_gone(self) -> bool:
        client = self._client
        return client is None or client.process.poll() is not None

    # -------------------------------------------------------------- the receiver thread
    @Slot()
    def run(self) -> None:
        while (client := self._clients.get()) is not None:
            snapshots, series = SnapshotDecoder(), StatsDecoder()
            while True:
                try:
                    data = client.conn.recv_bytes()
                except (EOFError, OSError):
                    break
                received = time.perf_counter()
                try:
                    message = ForkingPickler.loads(data)
                except Exception:  # a message this process cannot read: said on the console, the rest go on
                    traceback.print_exc()
                    continue
                if isinstance(message, Batch):
                    self._apply(client, message, snapshots, series, len(data), received)
            client.conn.close()
            if not client.asked_to_end and not self._stopping:
                self._report_death(client)
            with self._replied:
                self._replied.notify_all()

    def stop_receiving(self) -> None:
        self._stopping = True
        self._clients.put(None)

    def _apply(self, client: _Client, batch: Batch, snapshots: SnapshotDecoder, series: StatsDecoder,
               num_bytes: int, received: float) -> None:
        snapshot = snapshots.decode(batch.snapshot) if batch.snapshot is not None else None
        if snapshot is not None:
            self.snapshot_receipts.append((num_bytes, (time.perf_counter() - received) * 1e3))
        stats = series.decode(batch.stats) if batch.stats is not None else None
        with self._lock:
            if batch.snapshot_reset:
                self._latest = None
            if snapshot is not None:
                self._latest = snapshot
            if stats is not None:
                self._stats = stats
        for message in batch.messages:
            if isinstance(message, Reply):
                with self._replied:
                    self._replies[message.call_id] = message
                    self._replied.notify_all()
                continue
            self._note(client, message)
            self.event_emitted.emit(message)

    def _note(self, client: _Client, message) -> None:
        """What a dying client's report needs: open requests, the start, the engine's processes."""
        if isinstance(message, (RequestFinished, RequestFailed)):
            request_id = message.event.request_id if isinstance(message, RequestFinished) else message.request_id
            with self._lock:
                client.open.discard(request_id)
        elif isinstance(message, EngineReady):
            client.engine_pids = tuple(message.info.engine_pids)
        elif isinstance(message, StateChanged):
            client.start_id = message.start_id
            if message.state is not EngineState.READY:
                client.engine_pids = ()

    def _report_death(self, client: _Client) -> None:
        how = client.how_it_ended()
        kill_processes([pid for pid in client.engine_pids if is_running(pid)])  # die with it (PDEATHSIG too)
        ended_too = "; the engine's processes ended with it" if client.engine_pids else ""
        message = (f"The engine stopped: {how}{ended_too}. What was streamed so far is kept. Restart the engine "
                   "(Engine > Restart engine); if it happens again, the engine log has the details "
                   "(Engine > Show engine log).")
        with self._lock:
            open_requests, client.open = sorted(client.open), set()
            if self._client is client:  # not a new client's snapshot
                self._latest = None
        for request_id in open_requests:
            self.event_emitted.emit(RequestFailed(request_id, message))
        self.event_emitted.emit(StateChanged(EngineState.DIED, message, client.start_id))

    # -------------------------------------------------------------- ending
    def end_client(self, timeout_s: float) -> bool:
        """Asks the client to shut down and waits for it; kills it (and what it started) if it hangs."""
        client = self._client
        if client is None:
            return True
        try:
            client.process.wait(timeout_s)
            return True
        except subprocess.TimeoutExpired:
            kill_processes(sorted({client.pid} | child_pids(pid=client.pid)))  # a hung client or engine must not outlive the app
            client.process.poll()
            return client.process.returncode is not None


class ClientProcessThread(WorkerThread):
    """:class:`~workbench.bridge.worker.EngineThread`'s contract for the process client: :meth:`stop`
    shuts the engine down, waits for the client process, kills it if it hangs, and joins the receiver."""

    def __init__(self, check_with_scan: bool = False):
        super().__init__(ClientProcessWorker(check_with_scan=check_with_scan), "engine-client-receiver")

    def stop(self, timeout_ms: int = 60_000) -> bool:
        if not self.thread.isRunning():
            return True
        self.worker.post(Shutdown())
        ended = self.worker.end_client(timeout_ms / 1e3)
        self.worker.stop_receiving()
        self.thread.quit()
        return self.thread.wait(10_000) and ended
