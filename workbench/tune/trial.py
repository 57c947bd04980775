"""One trial: an engine start on the trial's configuration through the one owner of engine commands, then
the workload sent through the engine loop at its arrival times, measured from vLLM's figures. A start that
fails, an engine that dies or is replaced, ends the trial with its error: a result, never a crash."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from workbench.engine.backend import StreamEvent
from workbench.engine.events import EngineState
from workbench.engine.requests import Owner
from workbench.engine.spec import EngineConfig
from workbench.model.app_model import AppModel
from workbench.model.engine_commands import EngineCommands
from workbench.model.engine_status import EngineStatus
from workbench.tune.measure import TrialMeasure
from workbench.tune.values import Goal, TrialFigures
from workbench.tune.workload import Workload

STOPPED = "stopped before it finished (Stop)"


@dataclass(frozen=True)
class TrialLimits:
    """How long a trial may take before it is ended as failed: its engine's start, and its requests after
    the workload's last arrival (a hung start or a request that never ends costs a trial, not the search)."""

    start_s: float
    overrun_s: float
    start_why: str = ""  # how each was set, for the trial's error
    overrun_why: str = ""


@dataclass(frozen=True)
class TrialOutcome:
    figures: TrialFigures | None  # None: nothing measured (the engine did not start)
    error: str = ""
    texts: dict = field(default_factory=dict)  # request index -> its greedy output
    engine_start_s: float | None = None
    batch_limits: dict = field(default_factory=dict)  # max_num_batched_tokens, max_num_seqs as the engine ran


BATCH_LIMITS = ("max_num_batched_tokens", "max_num_seqs")


class TrialRun:
    """Runs once: :meth:`begin`, then the model's engine states and the requests' messages are handed in
    (``engine_changed``, and the request sink's three methods); ``on_done`` hears the outcome once."""

    def __init__(self, model: AppModel, commands: EngineCommands, config: EngineConfig, workload: Workload,
                 prefix: str, label: str, goal: Goal, on_done: Callable[[TrialOutcome], None],
                 on_phase: Callable[[str], None] = lambda text: None, clock: Callable[[], float] = time.monotonic,
                 limits: TrialLimits | None = None):
        self.model, self.commands, self.config, self.workload = model, commands, config, workload
        self.limits = limits
        self.prefix, self.label, self.goal = prefix, label, goal
        self.on_done, self.on_phase, self.clock = on_done, on_phase, clock
        self.measure = TrialMeasure(workload.offsets_s, prefix)
        self.state = "new"  # "starting", "measuring", "done"
        self.start_id = 0
        self.began_s = 0.0  # the caller's clock when the trial began (its engine asked for, or its workload sent)
        self.engine_start_s: float | None = None
        self.batch_limits: dict = {}

    def begin(self) -> None:
        self.state = "starting"
        self.began_s = self.clock()
        self.on_phase(f"{self.label}: starting the engine")
        self.start_id = self.commands.start_on(self.config)

    def measure_now(self) -> None:
        """Sends the workload to the engine running now, which must be ready on this trial's configuration
        (a rate search probes one engine at several rates): no start."""
        self.began_s = self.clock()
        self.start_id = self.model.engine.start_id
        self._read_batch_limits(self.model.engine)
        self._send()

    def _read_batch_limits(self, status: EngineStatus) -> None:
        """The batch limits vLLM resolved for this trial's engine (those it left open are vLLM's choice)."""
        resolved = status.info.resolved if status.info is not None else {}
        self.batch_limits = {name: resolved[name] for name in BATCH_LIMITS if resolved.get(name) is not None}

    # ------------------------------------------------------------------ the engine
    def engine_changed(self, status: EngineStatus) -> None:
        if self.state not in ("starting", "measuring"):
            return
        if status.start_id > self.start_id:
            self._end("another engine start replaced this trial's engine")
        elif status.start_id < self.start_id:
            return  # the engine before this trial's: its last words
        elif status.state is EngineState.READY and self.state == "starting":
            self.engine_start_s = self.clock() - self.began_s
            self._read_batch_limits(status)
            self._send()
        elif status.state is EngineState.FAILED:
            said = status.message
            self._end(said if said.lower().startswith("the engine did not start") else
                      f"The engine did not start: {said}")
        elif status.state in (EngineState.DIED, EngineState.STOPPED):
            self._end(f"the engine stopped during the trial: {status.message}")

    def _send(self) -> None:
        self.state = "measuring"
        requests = self.workload.requests(self.prefix)
        for index, request in enumerate(requests):
            self.model.requests.add(request.request_id, Owner("tune", self.prefix, str(index),
                                                              f"{self.label} · request {index + 1}"))
        self.measure.started_s = self.clock()
        self.commands.submit_scheduled(requests, self.workload.offsets_s, self.workload.concurrency)
        self._phase_requests()

    def _phase_requests(self) -> None:
        self.on_phase(f"{self.label}: {self.measure.num_ended} of {self.workload.num_requests} requests done")

    # ------------------------------------------------------------------ the requests (the model's sink)
    def text_arrived(self, request_id: str, text: str) -> None:
        index = self.measure.index_of(request_id)
        if index is not None:
            self.measure.text_arrived(index, text)

    def request_finished(self, event: StreamEvent) -> None:
        index = self.measure.index_of(event.request_id)
        if index is None or self.state != "measuring":
            return
        if event.text:
            self.measure.text_arrived(index, event.text)
        self.measure.finished(index, event.figures, event.finish_reason == "aborted", self.clock(), event.gaps_s)
        self._after_request()

    def request_failed(self, request_id: str, message: str) -> None:
        index = self.measure.index_of(request_id)
        if index is None or self.state != "measuring":
            return
        self.measure.failed(index, message, self.clock())
        self._after_request()

    def _after_request(self) -> None:
        self._phase_requests()
        if self.measure.done:
            failed = self.measure.errors  # a trial measured on part of the workload compares with none
            error = "" if not failed else (f"{len(failed)} of {self.workload.num_requests} requests failed; "
                                           f"the first: {next(iter(failed.values()))}")
            self._end(error)

    # ------------------------------------------------------------------ the time it takes
    def check_time(self) -> None:
        """Ends the trial, failed, once it is past its limits (see :class:`TrialLimits`)."""
        limits = self.limits
        if limits is None or self.state not in ("starting", "measuring"):
            return
        now = self.clock()
        if self.state == "starting" and now - self.began_s > limits.start_s:
            self._end(f"The engine did not start within {limits.start_s:.0f} s ({limits.start_why}); "
                      "the trial was ended")
        elif self.state == "measuring":
            last_arrival_s = max(self.workload.offsets_s, default=0.0)
            overrun_s = now - self.measure.started_s - last_arrival_s
            if overrun_s > limits.overrun_s:
                out = self._take_back()
                self._end(f"{out} of {self.workload.num_requests} requests were still running {overrun_s:.0f} s "
                          f"after the workload's last arrival (the limit: {limits.overrun_why}): they were aborted")

    # ------------------------------------------------------------------ the end
    def stop(self) -> None:
        """Takes back the requests still out; what they measured so far is kept."""
        self._take_back()
        self._end(STOPPED)

    def _take_back(self) -> int:
        """Aborts the requests still out (while measuring); how many there were."""
        if self.state != "measuring":
            return 0
        out = [index for index in range(self.workload.num_requests)
               if index not in self.measure.figures and index not in self.measure.errors]
        for index in out:
            self.commands.abort(f"{self.prefix}-{index}")
        return len(out)

    def _end(self, error: str) -> None:
        if self.state == "done":
            return
        measured = self.state == "measuring"
        self.state = "done"
        for index in range(self.workload.num_requests):
            self.model.requests.discard(f"{self.prefix}-{index}")
        figures = self.measure.result(self.goal) if measured else None
        texts = {i: self.measure.text_of(i) for i in self.measure.figures}
        self.on_done(TrialOutcome(figures, error, texts, self.engine_start_s, self.batch_limits))
