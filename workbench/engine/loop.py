"""The engine loop: commands in between steps, text flushed every ~50 ms, KV snapshots at ~10 Hz.

Qt-free, so the bridge's host thread, the benchmarks and a headless GPU machine run the same loop.
Commands arrive as small frozen values on a thread-safe queue (``workbench.engine.commands``); what
happens leaves as immutable messages (``workbench.engine.events``) through the listener, and KV
snapshots and the engine's statistics as series (``workbench.engine.stats``, a point every 0.25 s)
through the listener's mailboxes.
"""
from __future__ import annotations

import queue
import time
from functools import singledispatchmethod
from typing import Callable, Protocol

from workbench.engine.backend import (Backend, ChatRequest, EngineGoneError, ImagesRefusedError, PromptTooLongError,
                                      StreamEvent)
from workbench.engine.commands import (AdoptEngine, Abort, ReleaseEngine, Shutdown, StartEngine, StopEngine, Submit,
                                       SubmitAll, SubmitScheduled)
from workbench.engine.engine_log import read_log, root_cause
from workbench.engine.events import (
    EngineLogOpened, EngineReady, EngineState, RequestFailed, RequestFinished, RequestsTaken, StartProgressed,
    StateChanged, TextFlushed,
)
from workbench.engine.kv_snapshot import KVSnapshot
from workbench.engine.model_source import ModelNotFoundError
from workbench.engine.process_death import is_signal_death
from workbench.engine.schedule import RequestSchedule
from workbench.engine.session import EngineSession
from workbench.engine.spec import EngineConfig
from workbench.engine.start_phases import EngineStartError, StartProgress, progress_for
from workbench.engine.stats import StatsRecorder, StatsSeries, StepStats


NOT_RUNNING = "The engine is not running. Start it (Engine > Restart engine) and send again."


def starting_message(model: str) -> str:
    return f"Starting the engine on {model}…"


def stopping_message(model: str) -> str:
    return f"Stopping the engine in use, then starting on {model}…"


class LoopListener(Protocol):
    """Receives the loop's messages on the loop's own thread."""

    def publish(self, event) -> None: ...
    def snapshot_published(self, snapshot: KVSnapshot) -> None: ...
    # Optional: def stats_published(self, series: StatsSeries) -> None (listeners without it get none)


class EngineLoop:
    """Owns the backend; every backend call happens on the thread that runs :meth:`run`."""

    def __init__(self, listener: LoopListener, backend_factory: Callable[[EngineConfig], Backend] = EngineSession,
                 snapshot_interval_s: float = 0.1, flush_interval_s: float = 0.05, check_with_scan: bool = False):
        self.listener = listener
        self.backend_factory = backend_factory
        self.snapshot_interval_s = snapshot_interval_s
        self.flush_interval_s = flush_interval_s
        self.check_with_scan = check_with_scan
        self.commands: queue.Queue = queue.Queue()
        self.backend: Backend | None = None
        self._adopted = False  # the backend belongs to someone else: released, never shut down
        self._probe = None  # the backend's KV probe, where it has one
        self.state = EngineState.STOPPED
        self.start_id = 0
        self._open: set[str] = set()  # requests submitted and not yet ended
        self._schedules: list[RequestSchedule] = []  # requests held until due (SubmitScheduled)
        self._pending_text: dict[str, list[str]] = {}
        self._last_flush = self._last_snapshot = 0.0
        self._snapshot_due = self._snapshot_pending = False
        self._stats: StatsRecorder | None = None  # while an engine with live statistics runs
        self._tick_on_push = False  # a server's statistics: a point per scrape, not per 0.25 s
        self._stats_out: Callable[[StatsSeries], None] | None = getattr(listener, "stats_published", None)
        self._send_now: Callable[[], None] | None = getattr(listener, "send_now", None)  # a batching listener

    def post(self, command) -> None:
        """Thread-safe: queue a command for the loop."""
        self.commands.put(command)

    # -------------------------------------------------------------- the loop
    def run(self) -> None:
        """Runs until a Shutdown command, then stops the engine."""
        try:
            self.run_until(lambda: False)
        finally:
            self._stop_engine()

    def run_until(self, done: Callable[[], bool]) -> bool:
        """Runs loop iterations until ``done()``; False if a Shutdown came first. Keeps the engine."""
        while not done():
            if not self._handle_commands():
                return False
            if self._schedules:
                self._submit_due()
            working = self.backend is not None and self.backend.has_work()
            if working:
                self._guarded(self._advance)
            now = time.monotonic()
            if self._stats is not None and not self._tick_on_push and self._stats.tick(now, idle=not working):
                self._stats_out(self._stats.publish())
            if now - self._last_flush >= self.flush_interval_s:
                self._flush_text()
            if self._snapshot_pending:
                self._guarded(self._publish_snapshot)
            elif self._snapshot_due and now - self._last_snapshot >= self.snapshot_interval_s:
                self._guarded(self._request_snapshot)
        return True

    def adopt(self, backend: Backend) -> None:
        """Takes over an engine that is already running (the benchmarks share one); call it on the
        thread that runs the loop, or post :class:`AdoptEngine` from any other."""
        self._stop_engine()
        self.backend, self.state, self._probe = backend, EngineState.READY, backend.kv_probe()
        self._adopted = True
        self._snapshot_due, self._snapshot_pending = self._probe is not None, False
        self._begin_stats(backend)
        backend.connect(self)

    def _handle_commands(self) -> bool:
        """Runs queued commands; waits for one only when the engine is idle. False on Shutdown."""
        if self.backend is not None and self.backend.has_work():
            wait_s = 0.0
        elif self._snapshot_pending:
            wait_s = 0.002
        else:
            wait_s = self.snapshot_interval_s if self._snapshot_due else 0.25
        if wait_s and self._schedules:  # wake when the next scheduled request is due
            now = time.monotonic()
            wait_s = min([wait_s] + [w for s in self._schedules if (w := s.wait_s(now)) is not None])
        try:
            command = self.commands.get(timeout=wait_s) if wait_s else self.commands.get_nowait()
        except queue.Empty:
            return True
        while True:
            if isinstance(command, Shutdown):
                return False
            self._dispatch(command)
            try:
                command = self.commands.get_nowait()
            except queue.Empty:
                return True

    @singledispatchmethod
    def _dispatch(self, command) -> None:
        """One handler a command type (as ``AppModel.apply`` has one an event type); others are ignored."""

    @_dispatch.register
    def _(self, command: StartEngine) -> None:
        self._start_engine(command.config, command.start_id)

    @_dispatch.register
    def _(self, command: StopEngine) -> None:
        if self.backend is not None:  # said before the engine stops (seconds): never "ready" meanwhile
            self._publish_last_stats()
            self._set_state(EngineState.STOPPED, "Stopping the engine…")
        self._stop_engine()
        self._set_state(EngineState.STOPPED, "Engine stopped.")

    @_dispatch.register
    def _(self, command: Submit) -> None:
        self._submit_all((command.request,))

    @_dispatch.register
    def _(self, command: SubmitAll) -> None:
        self._submit_all(command.requests)

    @_dispatch.register
    def _(self, command: SubmitScheduled) -> None:
        self._schedules.append(RequestSchedule(command.requests, command.offsets_s, command.concurrency,
                                               time.monotonic()))
        self._submit_due()

    @_dispatch.register
    def _(self, command: Abort) -> None:
        self._abort(command.request_id)

    @_dispatch.register
    def _(self, command: AdoptEngine) -> None:
        self._adopt_engine(command.backend, command.start_id)

    @_dispatch.register
    def _(self, command: ReleaseEngine) -> None:
        self._release_engine()

    def _submit_all(self, requests) -> None:
        death = ""
        for request in requests:
            if death:  # the engine died while these were being queued: each fails with its death
                self.request_failed(request.request_id, death)
            else:
                death = self._submit(request)
        taken = tuple(r.request_id for r in requests if r.request_id in self._open)
        if taken:
            self.listener.publish(RequestsTaken(taken))
            if self._send_now is not None:  # a batching listener: the window hears it now, not in 25 ms
                self._send_now()

    def _submit_due(self) -> None:
        now = time.monotonic()
        for schedule in self._schedules:
            due = schedule.due(now)
            if due:
                self._submit_all(due)
        self._schedules = [s for s in self._schedules if s]

    # -------------------------------------------------------------- commands
    def _start_engine(self, config: EngineConfig, start_id: int) -> None:
        self.start_id = start_id
        if self.backend is not None:  # said before the engine in use stops (seconds): never "ready" meanwhile
            self._publish_last_stats()
            self._set_state(EngineState.STARTING, stopping_message(config.model))
            self._report_progress(progress_for("stopping"))
        self._stop_engine()
        self._set_state(EngineState.STARTING, starting_message(config.model))
        backend = None
        try:
            backend = self.backend_factory(config)
            backend.connect(self)
            backend.start(self._report_progress)
        except (EngineStartError, ModelNotFoundError) as exc:
            self._announce_log(backend)
            self._set_state(EngineState.FAILED, str(exc), getattr(exc, "retry", ()))
            return
        except Exception as exc:  # anything else that stops a start still leaves a usable window
            self._announce_log(backend)
            self._set_state(EngineState.FAILED, f"The engine did not start: {type(exc).__name__}: {exc}")
            return
        self.backend, self._probe = backend, backend.kv_probe()
        self._begin_stats(backend)
        self._announce_log(backend)
        info = backend.info()
        self.listener.publish(EngineReady(info))
        self._set_state(EngineState.READY, f"Engine ready: {info.model}")
        self._snapshot_due = self._probe is not None

    def _publish_last_stats(self) -> None:
        """The engine's figures up to now (its last bin closed early), for the window to draw before it marks the
        engine's end."""
        if self._stats is not None and not self._tick_on_push:
            working = self.backend is not None and self.backend.has_work()
            if self._stats.tick(time.monotonic(), idle=not working, early=True):
                self._stats_out(self._stats.publish())

    def _begin_stats(self, backend: Backend) -> None:
        """A fresh series for a new engine: its totals count from here, as vLLM's own counters do.
        A server's statistics come a scrape at a time: one point per scrape (its bin size), no tokens
        stored figure (no block pool to read)."""
        live = backend.capabilities.live_stats != "none" and self._stats_out is not None
        self._tick_on_push = backend.capabilities.live_stats == "prometheus"
        bin_s = getattr(backend, "stats_bin_s", None) if self._tick_on_push else None
        options = {"bin_s": bin_s} if bin_s else {}
        self._stats = StatsRecorder(time.monotonic(), start_id=self.start_id, **options) if live else None
        if self._stats is not None and backend.capabilities.kv_blocks != "physical":
            self._stats.note_token_occupancy(float("nan"))

    def _report_progress(self, progress: StartProgress) -> None:
        self.listener.publish(StartProgressed(progress))

    def _announce_log(self, backend: Backend | None) -> None:
        path = getattr(backend, "log_path", None)
        if path is not None:
            self.listener.publish(EngineLogOpened(str(path)))

    def _adopt_engine(self, backend: Backend, start_id: int) -> None:
        self.start_id = start_id
        self.adopt(backend)
        info = backend.info()
        self.listener.publish(EngineReady(info))
        self._set_state(EngineState.READY, f"Engine ready: {info.model} (adopted)")

    def _release_engine(self) -> None:
        if self.backend is None or not self._adopted:
            return
        model = self.backend.info().model
        self._stop_engine()
        self._set_state(EngineState.STOPPED, f"Engine released: {model} runs on without this loop.")

    def _stop_engine(self) -> None:
        """Shuts down the engine the loop started; an adopted one is released, its open requests aborted."""
        backend, self.backend, self._probe = self.backend, None, None
        adopted, self._adopted = self._adopted, False
        if backend is not None and adopted:
            self._abort_open(backend)
        elif backend is not None:
            backend.shutdown()
        self._pending_text.clear()
        self._open.clear()
        self._schedules.clear()
        self._snapshot_due = self._snapshot_pending = False
        self._stats = None

    def _submit(self, request: ChatRequest) -> str:
        """Queues one request, or fails it with the reason; the engine's death message where queueing it
        found the engine dead (then every open request has failed with it), else ""."""
        if self.backend is None or not self.backend.running:
            self.request_failed(request.request_id, NOT_RUNNING)
            return ""
        try:
            self.backend.submit(request)
        except EngineGoneError as exc:  # not this request's fault: the engine is gone
            self._open.add(request.request_id)
            return self._engine_died(exc)
        except (PromptTooLongError, ImagesRefusedError) as exc:
            self.request_failed(request.request_id, str(exc))
        except Exception as exc:  # vLLM's own validation of a request
            self.request_failed(request.request_id, f"vLLM refused the request: {exc}")
        else:
            self._open.add(request.request_id)
            self._snapshot_due = self._probe is not None
        return ""

    def _abort(self, request_id: str) -> None:
        if any(schedule.take(request_id) for schedule in self._schedules):
            self.request_failed(request_id, "taken back before it was due")
        elif self.backend is not None:
            self.backend.abort(request_id)  # the backend pushes the request's final event

    def _abort_open(self, backend: Backend) -> None:
        """Aborts this loop's open requests in an engine that runs on without it."""
        for request_id in sorted(self._open):
            try:
                backend.abort(request_id)
            except Exception:  # an engine that has died holds no requests
                break

    # -------------------------------------------------------------- what the backend pushes (BackendEvents)
    def texts_arrived(self, texts: dict[str, str]) -> None:
        """New text of each request that produced some in one step (DELTA)."""
        pending = self._pending_text
        for request_id, text in texts.items():
            if request_id in pending:
                pending[request_id].append(text)
            else:
                pending[request_id] = [text]

    def request_finished(self, event: StreamEvent) -> None:
        self._flush_text()
        self._open.discard(event.request_id)
        for schedule in self._schedules:
            schedule.ended(event.request_id)
        self.listener.publish(RequestFinished(event))
        if not self._open and self._send_now is not None:
            self._send_now()  # the last one: nothing more is coming to batch it with

    def request_failed(self, request_id: str, message: str) -> None:
        self._open.discard(request_id)
        for schedule in self._schedules:
            schedule.ended(request_id)
        self.listener.publish(RequestFailed(request_id, message))

    def stats_recorded(self, step: StepStats) -> None:
        if self._stats is not None:
            self._stats.add(step)
            if self._tick_on_push and self._stats.tick(time.monotonic()):
                self._stats_out(self._stats.publish())

    def backend_reported(self, event) -> None:
        """A backend's own message (a server's connection state, its metrics), published as it is."""
        self.listener.publish(event)

    # -------------------------------------------------------------- stepping and publishing
    def _advance(self) -> None:
        self.backend.advance()
        self._snapshot_due = self._probe is not None

    def _flush_text(self) -> None:
        self._last_flush = time.monotonic()
        if self._pending_text:
            chunks = {rid: "".join(parts) for rid, parts in self._pending_text.items()}
            self._pending_text.clear()
            self.listener.publish(TextFlushed.of(chunks))

    def _request_snapshot(self) -> None:
        """Snapshots are asked for without waiting: the answer is picked up on a later iteration."""
        self._last_snapshot = time.monotonic()
        self._snapshot_due = self.backend.has_work()
        self._probe.request_snapshot(self.check_with_scan)
        self._snapshot_pending = True

    def _publish_snapshot(self) -> None:
        snapshot = self._probe.poll_snapshot()
        if snapshot is not None:
            self._snapshot_pending = False
            if self._stats is not None:
                self._stats.note_token_occupancy(snapshot.pool_token_occupancy)
            self.listener.snapshot_published(snapshot)

    def _guarded(self, action: Callable[[], None]) -> None:
        """Runs a backend action; an engine that died is reported, and the loop carries on."""
        try:
            action()
        except Exception as exc:
            self._engine_died(exc)

    def _engine_died(self, exc: Exception) -> str:
        """Fails every open and scheduled request with the engine's death message, which it returns."""
        backend = self.backend
        open_requests = sorted(self._open) + [rid for s in self._schedules for rid in s.pending_ids()]
        self._flush_text()
        self._publish_last_stats()  # its figures since the last point (a reply that ended just before) are kept
        how = backend.describe_end() if backend is not None else "it is gone"
        self._stop_engine()
        message = death_message(how, exc, read_log(getattr(backend, "log_path", None) or ""), bool(open_requests))
        for request_id in open_requests:
            self.request_failed(request_id, message)
        self._set_state(EngineState.DIED, message)
        return message

    def _set_state(self, state: EngineState, message: str, retry: tuple = ()) -> None:
        self.state = state
        self.listener.publish(StateChanged(state, message, self.start_id, retry))


def death_message(how: str, exc: Exception, log_text: str, during_reply: bool = True) -> str:
    """The message of an engine that died in use (``during_reply``: with requests open; else idle). ``how``:
    its processes' end in words (the backend's ``describe_end``). A process killed by a signal is the cause:
    the client's exception (EngineDeadError) and the engine core's ("RuntimeError: cancelled") are only its
    consequences."""
    if is_signal_death(how):
        what, said = how, ""
    else:
        cause = root_cause(log_text)
        what = f"{how} ({type(exc).__name__}: {exc})"
        said = (f"\n\nvLLM said (in its {cause.process or 'client'} process): {cause.exception}"
                if cause and cause.exception else "")
    when, kept = ("during a reply", " What was streamed so far is kept.") if during_reply else ("while idle", "")
    return (f"The engine stopped {when}: {what}.{kept} Restart the engine "
            f"(Engine > Restart engine). The engine log has the details (Engine > Show engine log).{said}")
