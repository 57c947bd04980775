"""The engine loop: commands in between steps, text flushed every ~50 ms, KV snapshots at ~10 Hz.

Qt-free, so the GUI's worker thread, the benchmarks and a headless GPU machine run the same loop.
Commands are small frozen values put on a thread-safe queue; results leave through a listener.
"""
from __future__ import annotations

import queue
import time
from dataclasses import dataclass
from typing import Callable, Protocol

from workbench.engine.backend import Backend, ChatRequest, EngineInfo, PromptTooLongError, StreamEvent
from workbench.engine.engine_log import read_log, root_cause
from workbench.engine.kv_snapshot import KVSnapshot
from workbench.engine.process_guard import describe_exit
from workbench.engine.session import EngineConfig, EngineSession
from workbench.engine.start_phases import EngineStartError, StartProgress, progress_for
from workbench.engine.model_source import ModelNotFoundError

DEMO_MODEL = "demo"  # EngineConfig.model value meaning "the demo model, built on first use"


def starting_message(model: str) -> str:
    return f"Starting the engine on {model}…"


@dataclass(frozen=True)
class StartEngine:
    config: EngineConfig


@dataclass(frozen=True)
class StopEngine:
    pass


@dataclass(frozen=True)
class Submit:
    request: ChatRequest


@dataclass(frozen=True)
class Abort:
    request_id: str


@dataclass(frozen=True)
class Shutdown:
    pass


class LoopListener(Protocol):
    """Receives the loop's results on the loop's own thread."""

    def engine_state_changed(self, state: str, message: str) -> None: ...
    def start_progressed(self, progress: StartProgress) -> None: ...
    def engine_ready(self, info: EngineInfo) -> None: ...
    def text_flushed(self, chunks: dict[str, str]) -> None: ...
    def request_finished(self, event: StreamEvent) -> None: ...
    def request_failed(self, request_id: str, message: str) -> None: ...
    def snapshot_published(self, snapshot: KVSnapshot) -> None: ...
    def engine_log_opened(self, path: str) -> None: ...


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
        self.state = "stopped"
        self._pending_text: dict[str, list[str]] = {}
        self._last_flush = self._last_snapshot = 0.0
        self._snapshot_due = self._snapshot_pending = False

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
            if self.backend is not None and self.backend.has_work():
                self._guarded(self._step)
            now = time.monotonic()
            if now - self._last_flush >= self.flush_interval_s:
                self._flush_text()
            if self._snapshot_pending:
                self._guarded(self._publish_snapshot)
            elif self._snapshot_due and now - self._last_snapshot >= self.snapshot_interval_s:
                self._guarded(self._request_snapshot)
        return True

    def adopt(self, backend: Backend) -> None:
        """Takes over an engine that is already running (the benchmarks share one)."""
        self.backend, self.state, self._snapshot_due, self._snapshot_pending = backend, "ready", True, False

    def _handle_commands(self) -> bool:
        """Runs queued commands; waits for one only when the engine is idle. False on Shutdown."""
        busy = self.backend is not None and self.backend.has_work()
        if busy:
            wait_s = 0.0
        elif self._snapshot_pending:
            wait_s = 0.002
        else:
            wait_s = self.snapshot_interval_s if self._snapshot_due else 0.25
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

    def _dispatch(self, command) -> None:
        if isinstance(command, StartEngine):
            self._start_engine(command.config)
        elif isinstance(command, StopEngine):
            self._stop_engine()
            self._set_state("stopped", "Engine stopped.")
        elif isinstance(command, Submit):
            self._submit(command.request)
        elif isinstance(command, Abort):
            self._abort(command.request_id)

    # -------------------------------------------------------------- commands
    def _start_engine(self, config: EngineConfig) -> None:
        self._stop_engine()
        self._set_state("starting", starting_message(config.model))
        backend = None
        try:
            if config.model == DEMO_MODEL:
                config = self._with_demo_model(config)
            backend = self.backend_factory(config)
            backend.start(self.listener.start_progressed)
        except (EngineStartError, ModelNotFoundError) as exc:
            self._announce_log(backend)
            self._set_state("failed", str(exc))
            return
        except Exception as exc:  # anything else that stops a start still leaves a usable window
            self._announce_log(backend)
            self._set_state("failed", f"The engine did not start: {type(exc).__name__}: {exc}")
            return
        self.backend = backend
        self._announce_log(backend)
        self.listener.engine_ready(self.backend.info())
        self._set_state("ready", f"Engine ready: {config.model}")
        self._snapshot_due = True

    def _announce_log(self, backend: Backend | None) -> None:
        path = getattr(backend, "log_path", None)
        if path is not None:
            self.listener.engine_log_opened(str(path))

    def _with_demo_model(self, config: EngineConfig) -> EngineConfig:
        from dataclasses import replace

        from workbench.engine.demo_model import ensure_demo_model

        def report(label: str, fraction: float) -> None:
            self.listener.start_progressed(progress_for("model", label, fraction))

        path = ensure_demo_model(report)
        return replace(config, model=str(path))

    def _stop_engine(self) -> None:
        backend, self.backend = self.backend, None
        if backend is not None:
            backend.shutdown()
        self._pending_text.clear()
        self._snapshot_due = self._snapshot_pending = False

    def _submit(self, request: ChatRequest) -> None:
        if self.backend is None or not self.backend.running:
            self.listener.request_failed(request.request_id,
                                         "The engine is not running. Start it (Engine > Restart engine) and send again.")
            return
        try:
            self.backend.submit(request)
        except PromptTooLongError as exc:
            self.listener.request_failed(request.request_id, str(exc))
        except Exception as exc:  # vLLM's own validation of a request
            self.listener.request_failed(request.request_id, f"vLLM refused the request: {exc}")
        else:
            self._snapshot_due = True

    def _abort(self, request_id: str) -> None:
        if self.backend is None:
            return
        event = self.backend.abort(request_id)
        if event is not None:
            self._flush_text()
            self.listener.request_finished(event)
            self._snapshot_due = True

    # -------------------------------------------------------------- stepping and publishing
    def _step(self) -> None:
        texts, finished = self.backend.step()
        pending = self._pending_text
        for request_id, text in texts.items():
            if request_id in pending:
                pending[request_id].append(text)
            else:
                pending[request_id] = [text]
        if finished:
            self._flush_text()
            for event in finished:
                self.listener.request_finished(event)
        self._snapshot_due = True

    def _flush_text(self) -> None:
        self._last_flush = time.monotonic()
        if self._pending_text:
            chunks = {rid: "".join(parts) for rid, parts in self._pending_text.items()}
            self._pending_text.clear()
            self.listener.text_flushed(chunks)

    def _request_snapshot(self) -> None:
        """Snapshots are asked for without waiting: the answer is picked up on a later iteration."""
        self._last_snapshot = time.monotonic()
        self._snapshot_due = self.backend.has_work()
        self.backend.request_kv_snapshot(self.check_with_scan)
        self._snapshot_pending = True

    def _publish_snapshot(self) -> None:
        snapshot = self.backend.poll_kv_snapshot()
        if snapshot is not None:
            self._snapshot_pending = False
            self.listener.snapshot_published(snapshot)

    def _guarded(self, action: Callable[[], None]) -> None:
        """Runs a backend action; an engine that died is reported, and the loop carries on."""
        try:
            action()
        except Exception as exc:
            self._engine_died(exc)

    def _engine_died(self, exc: Exception) -> None:
        backend = self.backend
        pids = list(getattr(backend, "engine_pids", []))
        live = list(getattr(backend, "live", {}))
        self._flush_text()
        exit_status = describe_exit(pids)
        self._stop_engine()
        cause = root_cause(read_log(getattr(backend, "log_path", None) or ""))
        said = f"\n\nvLLM said (in its {cause.process or 'client'} process): {cause.exception}" if (
            cause and cause.exception) else ""
        message = (f"The engine stopped during a reply: {exit_status} ({type(exc).__name__}: {exc}). "
                   "What was streamed so far is kept. Restart the engine (Engine > Restart engine); if it "
                   "happens again, lower max_num_seqs or max_model_len, or choose a smaller model. "
                   f"The engine log has the details (Engine > Show engine log).{said}")
        for request_id in live:
            self.listener.request_failed(request_id, message)
        self._set_state("died", message)

    def _set_state(self, state: str, message: str) -> None:
        self.state = state
        self.listener.engine_state_changed(state, message)
