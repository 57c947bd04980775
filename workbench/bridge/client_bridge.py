"""The bridge to an engine-client process: the engine loop runs in a process of its own
(``workbench.engine.client_process``), and this side feeds the window exactly what
:class:`~workbench.bridge.engine_host.LoopHost` feeds it from a thread.

:class:`ClientProcessHost` offers the host's face: ``post(command)``, the ``event_emitted`` signal
(delivered queued to ``ModelFeeder``), and the latest-only ``latest_snapshot`` / ``latest_stats``
mailboxes. Its parts, each a module: the process itself (``client_start``), the requests of one GUI
turn sent together (``outbox``), the benchmarks' calls into the client (``client_calls``), and the
receiver (``client_receiver``), on a QThread ("engine-client-receiver"), which reads the client's
batches and hands them here decoded; this host fills the mailboxes and emits the messages in order.
The client process is started by the first command after it is gone (a start, or a restart after it
died), on the thread that posts (the GUI thread: ``PDEATHSIG`` is tied to the thread that started a
process, so it must outlive the client).

A client that ends without being asked (killed, crashed) is reported as the engine's death: each
open request fails with the reason (their text so far stays in the window) and the engine is DIED,
so the window offers a restart, as after an engine-core crash.
"""
from __future__ import annotations

import subprocess

from PySide6.QtCore import QObject, QThread, QTimer, Signal, Slot

from workbench.bridge.client_calls import ClientCalls
from workbench.bridge.client_receiver import ClientReceiver
from workbench.bridge.client_start import ClientProcess
from workbench.bridge.outbox import Outbox
from workbench.bridge.engine_host import Mailboxes, HostThread
from workbench.engine.client_wire import Batch, CallInClient, Reply
from workbench.engine.commands import AdoptEngine, Shutdown, StartEngine, Submit, SubmitAll, SubmitScheduled
from workbench.engine.events import EngineReady, EngineState, RequestFailed, RequestFinished, StateChanged
from workbench.engine.loop import NOT_RUNNING
from workbench.engine.process_guard import child_pids, is_running, kill_processes


class ClientProcessHost(QObject, Mailboxes):
    """``LoopHost``'s face over an engine-client process: ``post`` from the GUI thread, the
    ``event_emitted`` signal and the two mailboxes filled from the receiver thread."""

    event_emitted = Signal(object)  # one of workbench.engine.events, immutable

    def __init__(self, check_with_scan: bool = False):
        QObject.__init__(self)
        Mailboxes.__init__(self)  # its lock also guards the current client
        self.check_with_scan = check_with_scan
        self._client: ClientProcess | None = None
        self._stopping = False
        self._gui_thread = QThread.currentThread()  # this object itself moves to the receiver's thread
        self._outbox = Outbox(lambda command: self._post_now(command))  # no parent: it stays on the GUI thread
        self.calls = ClientCalls(self.post, self._client_gone)
        self.receiver = ClientReceiver(self._decoded, self._ended)
        self.client_pid: int | None = None  # the running client's pid (benchmarks count its CPU)

    @property
    def snapshot_receipts(self):
        return self.receiver.snapshot_receipts

    # -------------------------------------------------------------- the host's face
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
            self._outbox.add(command)
            return
        if on_gui_thread:
            self._outbox.send()
        self._post_now(command)

    def _post_now(self, command) -> None:
        with self._lock:
            client = self._client
            if client is None or not client.running():
                if self._stopping or not isinstance(command, (StartEngine, CallInClient, Submit, SubmitAll,
                                                              SubmitScheduled)):
                    return
                if isinstance(command, (Submit, SubmitAll, SubmitScheduled)):  # told after the caller's own work
                    requests = (command.request,) if isinstance(command, Submit) else command.requests
                    for failed in [RequestFailed(r.request_id, NOT_RUNNING) for r in requests]:
                        QTimer.singleShot(0, lambda failed=failed: self.event_emitted.emit(failed))
                    return
                client = self._client = ClientProcess(self.check_with_scan)
                self.client_pid = client.pid
                self.receiver.clients.put(client)
            if isinstance(command, Submit):
                client.open.add(command.request.request_id)
            elif isinstance(command, (SubmitAll, SubmitScheduled)):
                client.open.update(r.request_id for r in command.requests)
            elif isinstance(command, StartEngine):
                client.start_id = command.start_id
            elif isinstance(command, Shutdown):
                client.asked_to_end = True
        client.send(command)

    def call(self, function, *args, timeout_s: float = 600.0):
        """Benchmarks only: runs ``function(loop, *args)`` in the client between steps; its result."""
        return self.calls.call(function, *args, timeout_s=timeout_s)

    def post_call(self, function, *args) -> int:
        return self.calls.post_call(function, *args)

    def wait_reply(self, call_id: int, timeout_s: float = 600.0):
        return self.calls.wait_reply(call_id, timeout_s)

    def _client_gone(self) -> bool:
        client = self._client
        return client is None or not client.running()

    # -------------------------------------------------------------- on the receiver thread
    @Slot()
    def run(self) -> None:
        self.receiver.run()

    def stop_receiving(self) -> None:
        self._stopping = True
        self.receiver.stop()

    def _decoded(self, client: ClientProcess, batch: Batch, snapshot, stats) -> None:
        with self._lock:
            if batch.snapshot_reset:
                self._latest = None
            if snapshot is not None:
                self._latest = snapshot
            if stats is not None:
                self._stats = stats
        for message in batch.messages:
            if isinstance(message, Reply):
                self.calls.replied(message)
                continue
            self._note(client, message)
            self.event_emitted.emit(message)

    def _ended(self, client: ClientProcess) -> None:
        if not client.asked_to_end and not self._stopping:
            self._report_death(client)
        self.calls.client_ended()

    def _note(self, client: ClientProcess, message) -> None:
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

    def _report_death(self, client: ClientProcess) -> None:
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


class ClientProcessThread(HostThread):
    """:class:`~workbench.bridge.engine_host.EngineThread`'s contract for the process client: :meth:`stop`
    shuts the engine down, waits for the client process, kills it if it hangs, and joins the receiver."""

    def __init__(self, check_with_scan: bool = False):
        super().__init__(ClientProcessHost(check_with_scan=check_with_scan), "engine-client-receiver")

    def stop(self, timeout_ms: int = 60_000) -> bool:
        if not self.thread.isRunning():
            return True
        self.host.post(Shutdown())
        ended = self.host.end_client(timeout_ms / 1e3)
        self.host.stop_receiving()
        self.thread.quit()
        return self.thread.wait(10_000) and ended
