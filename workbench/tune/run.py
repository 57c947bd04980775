"""A search as the window drives it (``TuneControls``): trials one after another on the app's engine, told
to Optuna, until the time budget is spent; then the verdict's reruns; then the user's engine back.

Lives on the thread that applies the engine's messages to the model (the GUI thread, or a headless loop's):
it hears of its engine starts through ``engine_changed`` and of its requests as the model's sink for the
owner kind "tune". Every trial and rerun is kept in the study as it ends, so a killed app's search resumes.
"""
from __future__ import annotations

import json
import statistics
import time
import zlib
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

from psygnal import Signal

from workbench.engine.events import EngineState
from workbench.engine.spec import EngineConfig
from workbench.model.app_model import AppModel
from workbench.model.engine_commands import EngineCommands
from workbench.model.engine_status import EngineStatus
from workbench.tune.measure import agreement, goal_value, pareto_front
from workbench.tune.problems import TuneRefused
from workbench.tune.study import DEFAULTS, SearchStudy, ended_searches, resumable, study_names
from workbench.tune.trial import STOPPED, TrialLimits, TrialOutcome, TrialRun
from workbench.tune.trial_config import config_problem, trial_config
from workbench.tune.values import TrialFigures, TrialResult, TuneProgress, TuneSpec, Verdict
from workbench.tune.verdict import BEST_ROLE, best_trial, goal_unmet, make_verdict, verdict_plan, with_note
from workbench.tune.workload import Workload, build_workload
from workbench.tune import checks, outputs


# What a chat question asked during a search says while it waits (each trial restarts the engine and measures
# it alone, so a question would be lost at the next restart and would change the trial's figures).
HOLD = "a tune search is using the engine; the question is sent when the search ends (Stop in the Tune tab)"
# A trial's limits where the spec sets none: its engine start may take 4× the longest start so far, at least
# 10 minutes (a first start compiles); its requests may run 3× the longest trial so far past the workload's
# last arrival, at least 2 minutes.
START_LIMIT_FLOOR_S, START_LIMIT_TIMES = 600.0, 4.0
OVERRUN_FLOOR_S, OVERRUN_TIMES = 120.0, 3.0
# Settings refused before their start cost no engine start and count as no trial; this many in a row end the
# search's trials (the sampler keeps finding combinations vLLM refuses: the space is mostly such).
REFUSED_IN_A_ROW_LIMIT = 50
# Asking Optuna for a trial takes tens of ms (TPE and SQLite): refusals in a row go on in slices of this long of
# the thread's time, the rest at the next tick, so the window never waits on a run of them.
REFUSALS_SLICE_S = 0.05


@dataclass(frozen=True)
class StoredSearch:
    """An ended search as read from its storage: the study, its trials, its verdict (as kept), how it ended and the
    engine configuration it ran on (None: not kept)."""

    study: SearchStudy
    results: list[TrialResult]
    verdict: dict | None
    ended: str
    base_config: EngineConfig | None
    elapsed_s: float


@dataclass(frozen=True)
class ResumeReady:
    """A stored search loaded to carry on (its trials cut short queued again, its limits as asked) and its workload
    built: what :meth:`TuneRun.prepare_resume` reads off the GUI thread for :meth:`TuneRun.resume`."""

    name: str
    study: SearchStudy
    workload: Workload
    model: str = ""  # the engine's model it would run on
    model_unknown: bool = False  # kept by a build that did not note the model it ran on: nothing to check


class TuneRun:
    progress_changed = Signal(object)  # TuneProgress
    trial_finished = Signal(object)  # TrialResult (a running one too, as it starts)
    finished = Signal(object, str)  # Verdict or None, and a message ("" with a verdict)

    def __init__(self, model: AppModel, commands: EngineCommands, folder: Path | None = None,
                 database: Path | None = None, clock: Callable[[], float] = time.monotonic):
        from workbench import paths

        self.model, self.commands, self.clock = model, commands, clock
        self.folder = folder if folder is not None else paths.data_dir() / "tune"
        self.database = database
        self.study: SearchStudy | None = None
        self.workload: Workload | None = None
        self.current: TrialRun | None = None
        self.running_number: int | None = None  # the search trial running now (None: none, or a rerun)
        self.phase = "idle"  # "search", "verdict", "finished"
        self.last_start_s: float | None = None  # the last engine start's length, as measured here
        self._starting_since: tuple[int, float] | None = None
        self._results: list[TrialResult] = []
        self._begun_s = 0.0
        self._elapsed_before_s = 0.0
        self._stopping = False
        self._instead = None  # what a Stop asked for in place of starting the user's engine again
        self._restore = None  # the configuration to start again after the search (None: leave it)
        self._opened_base = None  # the configuration an ended search opened again ran on (None: unknown)
        self._last_progress_s = 0.0
        self._last_tick_s = 0.0
        self._phase_text = ""
        self._checked = None  # (spec, base configuration, workload) of the last check that found no problem
        self._search_note = ""  # why the trials ended early, said with the verdict
        self._refused_in_a_row = 0
        self._next_on_tick = False  # a run of refusals to go on with at the next tick
        # On ``clock``: no trial or rerun begins that the trials so far say would end after it; the search pauses
        # there instead, left to resume (``bench tune --pause-after-s``: a device call's time limit). None: none.
        self.pause_at_s: float | None = None
        self.paused = False
        model.engine_changed.connect(self._on_model_engine_changed)

    # ------------------------------------------------------------------ the window's face
    @property
    def running(self) -> bool:
        return self.phase in ("search", "verdict")

    def _refuse_while_busy(self) -> None:
        if self.running:
            raise TuneRefused(["A search is running: stop it before starting another."])
        if self.model.num_in_flight() or any(r.state == "running" for r in self.model.batch_runs.values()):
            raise TuneRefused(["The engine is answering a reply or a batch run, and each trial restarts it: let "
                               "them finish (or pause the batch run), then start the search."])

    def check(self, spec: TuneSpec) -> list[str]:
        """Every reason ``spec`` cannot run, each naming its fix ([] when it can): the space's values against
        vLLM (in the presets' checking process), the budget, the workload (a file read whole). Blocks for
        seconds the first time: the window calls it on a worker thread, then :meth:`start` with the same spec
        (which then does not check again)."""
        start_s = self.last_start_s if self.last_start_s is not None else checks.stored_start_s(self.database)
        problems = checks.spec_problems(spec, self.model.config, start_s)
        workload = None
        try:
            workload = build_workload(spec.workload, spec.goal, self.model.config.max_model_len, self.database)
        except TuneRefused as refused:
            problems += list(refused.messages)
        self._checked = (spec, self.model.config, workload) if not problems else None
        return problems

    def start(self, spec: TuneSpec) -> None:
        """Starts the search (on the GUI thread); TuneRefused names what stops it."""
        self._refuse_while_busy()
        if spec.name and spec.name in study_names(self.folder):
            raise TuneRefused([f"A search named {spec.name!r} exists: choose another name, or resume it."])
        checked = self._checked
        if checked is None or checked[:2] != (spec, self.model.config):
            problems = self.check(spec)
            if problems:
                raise TuneRefused(problems)
        workload = self._checked[2]
        self._checked = None
        if not spec.name:
            spec = replace(spec, name=time.strftime("search %Y-%m-%d %H.%M.%S"))
        self._begin(SearchStudy.create(self.folder, spec, self.model.config), workload)

    def prepare_resume(self, name: str, time_budget_s: float | None = None,
                       max_trials: int | None = None) -> ResumeReady:
        """The stored search ``name`` read and made ready to carry on, on any thread (a search of a thousand trials
        takes half a second to load: the window reads it on a worker, then calls :meth:`resume` with it). A budget
        or a number of trials given replaces its own. TuneRefused: it ran on another model, or the budget is
        refused."""
        study = SearchStudy.load(self.folder, name)
        ran_on = study.base_config
        if ran_on is not None and not study.runs_on(self.model.config.model):
            raise TuneRefused([f"The search ran on {ran_on.model}, and the engine now runs "
                               f"{self.model.config.model}: trials on another model would not compare with its "
                               f"trials so far. Start {ran_on.model} again, then resume."])
        if time_budget_s is not None:
            problem = checks.budget_problem(time_budget_s, None)
            if problem:
                raise TuneRefused([problem])
        study.change_limits(time_budget_s, max_trials)
        spec = study.spec
        return ResumeReady(name, study, build_workload(spec.workload, spec.goal, self.model.config.max_model_len,
                                                       self.database), self.model.config.model,
                           ran_on is None)

    def resume(self, name: str, time_budget_s: float | None = None, max_trials: int | None = None,
               ready: ResumeReady | None = None) -> None:
        """Carries on the stored search ``name``; a budget or a number of trials given replaces its own. ``ready``:
        it as :meth:`prepare_resume` read it (None: read here, on this thread)."""
        self._refuse_while_busy()
        if ready is None or ready.name != name:
            ready = self.prepare_resume(name, time_budget_s, max_trials)
        self._begin(ready.study, ready.workload)

    def resumable(self) -> list[str]:
        return resumable(self.folder)

    def past(self) -> list[str]:
        return ended_searches(self.folder)

    def read_stored(self, name: str) -> "StoredSearch":
        """The stored search ``name`` read whole, on any thread (a search of a thousand trials takes some tenths
        of a second: the window reads it on a worker, then calls :meth:`open` with it)."""
        study = SearchStudy.open(self.folder, name)
        attrs = study.study.user_attrs
        return StoredSearch(study, study.results(), attrs.get("verdict"), attrs.get("ended", ""), study.base_config,
                            float(attrs.get("elapsed_s", 0.0)))

    def open(self, name: str, stored: "StoredSearch | None" = None) -> None:
        """Shows the ended search ``name`` as it ended: ``progress_changed`` (its best, its Pareto front), then
        ``finished`` with its verdict, or None and how it ended (its trials are :meth:`trials`, read once by the
        window then); its best can be applied as a preset or copied as a ``vllm serve`` line, on the
        configuration it ran on. Starts nothing. ``stored``: it as :meth:`read_stored` read it (None: read here)."""
        if self.running:
            raise TuneRefused(["A search is running: stop it before opening another."])
        stored = stored if stored is not None else self.read_stored(name)
        self.study, self.workload, self._restore = stored.study, None, None
        self._opened_base = stored.base_config
        self._results, self._elapsed_before_s = list(stored.results), stored.elapsed_s
        self.phase, self._phase_text, self.running_number = "finished", "finished", None
        self.progress_changed.emit(self.progress())  # its best and Pareto front, as when it ended
        if stored.verdict is not None:
            self.finished.emit(Verdict(**stored.verdict), "")
        elif stored.ended == "stopped":
            self.finished.emit(None, f"Stopped before its verdict: {self._trials_text()} kept.")
        else:
            done = any(r.state == "complete" for r in self._results)
            self.finished.emit(None, "It ended without a verdict." + ("" if done else " " + self._no_trial_message()))

    def stop(self, instead: Callable[[], object] | None = None) -> None:
        """Ends the search now: the running trial's requests are taken back, what they measured is kept.
        ``instead``: what the user asked for that needs the engine (a restart, a preset, a stop), done in place
        of the search starting their engine again and before the questions that waited are let go (they go to
        the engine ``instead`` starts, not to the trial's)."""
        if not self.running:
            return
        self._stopping, self._instead = True, instead
        if self.current is not None:
            self.current.stop()  # its end comes back through _on_trial_done / _on_rerun_done
        else:
            self._end_stopped()

    def trials(self) -> list[TrialResult]:
        return list(self._results)

    def best(self) -> TrialResult | None:
        return best_trial(self._results, self.study.spec.goal) if self.study is not None else None

    def serve_line(self) -> str:
        best = self.best()
        if best is None:
            return ""
        config = trial_config(self._base_config(), self.study.spec.space, best.params)
        on_cpu = self.model.engine.info.device == "cpu" if self.model.engine.info else True
        return outputs.serve_line(config, on_cpu)

    def apply_as_preset(self, name: str) -> str:
        best = self.best()
        if best is None:
            raise TuneRefused(["No trial has completed yet: there are no settings to save."])
        verdict = self.study.study.user_attrs.get("verdict")
        return str(outputs.save_preset(name, self.study.spec, best, Verdict(**verdict) if verdict else None))

    # ------------------------------------------------------------------ the search
    def _begin(self, study: SearchStudy, workload: Workload) -> None:
        self.study, self.workload, self._stopping, self.paused = study, workload, False, False
        self._opened_base = None
        self._search_note, self._refused_in_a_row, self._next_on_tick = "", 0, False
        self.model.add_request_sink("tune", self)  # the search running hears of the trials' requests
        self._results = study.results()
        self._elapsed_before_s = float(study.study.user_attrs.get("elapsed_s", 0.0))
        self._begun_s = self.clock()
        status = self.model.engine
        self._restore = self.model.config if status.state in (EngineState.READY, EngineState.STARTING) else None
        self.phase = "verdict" if study.verdict_runs() else "search"
        self.commands.hold(HOLD)
        self._next()

    def tick(self) -> None:
        """Time passing (the window's timer, the headless loop): the running trial ended if it is past its
        limits, the progress's clock moved on. Cheap to call often (it acts twice a second at most)."""
        if self._next_on_tick and self.running:
            self._next_on_tick = False
            self._next()
        now = self.clock()
        if not self.running or now - self._last_tick_s < 0.5:
            return
        self._last_tick_s = now
        if self.current is not None:
            self.current.check_time()
        self._emit_progress()

    def trial_limits(self) -> TrialLimits:
        """The next trial's limits: the spec's ``trial_overrun_s`` where set, else from the trials so far."""
        spec = self.study.spec
        starts = [r.engine_start_s for r in self._results if r.engine_start_s] + \
            ([self.last_start_s] if self.last_start_s else [])
        start_s = max(START_LIMIT_FLOOR_S, START_LIMIT_TIMES * max(starts, default=0.0))
        start_why = f"{START_LIMIT_TIMES:g}× the longest start so far, at least {START_LIMIT_FLOOR_S:.0f} s"
        if spec.trial_overrun_s is not None:
            return TrialLimits(start_s, spec.trial_overrun_s, start_why,
                               f"{spec.trial_overrun_s:g} s, as the search sets")
        longest = max((r.figures.duration_s for r in self._results if r.state == "complete"), default=0.0)
        overrun_s = max(OVERRUN_FLOOR_S, OVERRUN_TIMES * longest)
        return TrialLimits(start_s, overrun_s, start_why,
                           f"{overrun_s:.0f} s, {OVERRUN_TIMES:g}× the longest trial so far, at least "
                           f"{OVERRUN_FLOOR_S:.0f} s")

    def _base_config(self):
        return self._restore or self._opened_base or self.model.config

    def elapsed_s(self) -> float:
        return self._elapsed_before_s + (self.clock() - self._begun_s if self.running else 0.0)

    def _ran(self) -> list[TrialResult]:
        """The trials that ended, less those refused before their start (they ran nothing)."""
        return [r for r in self._results if r.state != "running" and not r.refused]

    def _search_goes_on(self) -> bool:
        spec, ended = self.study.spec, self._ran()
        if spec.max_trials is not None and len(ended) >= spec.max_trials:
            return False
        return not ended or self.elapsed_s() + self._trial_estimate_s() <= spec.time_budget_s

    def _trial_estimate_s(self) -> float:
        spans = [r.figures.duration_s + (r.engine_start_s or 0.0) for r in self._results if r.state == "complete"]
        return statistics.fmean(spans) if spans else (self.last_start_s or 0.0)

    def _next(self) -> None:
        slice_ends, asked = time.monotonic() + REFUSALS_SLICE_S, False
        while self.phase == "search" and not self._stopping:
            if not self._search_goes_on():
                self.phase = "verdict"
                break
            if self._refused_in_a_row >= REFUSED_IN_A_ROW_LIMIT:
                self._search_note = (f"The search's trials ended early: the last {self._refused_in_a_row} settings "
                                     "sampled were all refused before their start (the last: "
                                     f"{self._results[-1].error}); narrow the search space where they fall.")
                self.phase = "verdict"
                break
            if self._pausing():
                self._pause("trial")
                return
            if asked and time.monotonic() > slice_ends:
                self._next_on_tick = True  # the thread's other work first (the window's events)
                return
            base = self._base_config()
            trial, params = self.study.ask(base.max_model_len)
            asked = True
            config = trial_config(base, self.study.spec.space, params)
            problem = config_problem(config)
            if not problem:
                self._refused_in_a_row = 0
                self._run_trial(trial, params, config)
                return
            self._trial_ended(trial, params, TrialOutcome(None, problem), refused=True)
            self._refused_in_a_row += 1
        if self.phase == "verdict" and not self._stopping:
            self._next_rerun()

    def _run_trial(self, trial, params: dict, config) -> None:
        label = f"Trial {trial.number}"
        self.current = TrialRun(self.model, self.commands, config, self.workload, self._prefix(trial.number),
                                label, self.study.spec.goal,
                                lambda outcome: self._on_trial_done(trial, params, outcome),
                                self._on_phase, self.clock, self.trial_limits())
        self.running_number = trial.number
        self.trial_finished.emit(TrialResult(trial.number, dict(params), "running"))
        self.current.begin()

    def _prefix(self, number: int | str) -> str:
        return f"tune-{zlib.crc32(self.study.spec.name.encode()):08x}-{number}"

    def _on_trial_done(self, trial, params: dict, outcome: TrialOutcome) -> None:
        self.current, self.running_number = None, None
        self._trial_ended(trial, params, outcome)
        self._keep_elapsed()
        if self._stopping:
            self._end_stopped()
        else:
            self._next()

    def _trial_ended(self, trial, params: dict, outcome: TrialOutcome, refused: bool = False) -> None:
        spec = self.study.spec
        figures = outcome.figures
        value = goal_value(figures, spec.goal) if figures is not None else None
        failed = bool(outcome.error) or value is None
        error = outcome.error or ("" if not failed else "no request finished")
        result = TrialResult(trial.number, dict(params), "failed" if failed else "complete",
                             figures if figures is not None else TrialFigures(), error,
                             self._agreement(trial, outcome), None if failed else value, outcome.engine_start_s,
                             outcome.batch_limits, refused)
        if failed:
            self.study.tell_failed(trial, result, settings_fault=outcome.error != STOPPED)
        else:
            self.study.tell_complete(trial, result)
        self._results = [r for r in self._results if r.number != result.number] + [result]
        self.trial_finished.emit(result)
        self._emit_progress(force=True)

    def _agreement(self, trial, outcome: TrialOutcome) -> float | None:
        """Greedy outputs against trial 0's, when the space holds a parameter that may change them."""
        if not self.study.spec.space.changes_outputs or not outcome.texts:
            return None
        path = self.folder / f"{self.study.spec.name}.baseline.json"
        if trial.user_attrs.get("role") == DEFAULTS:
            path.write_text(json.dumps({str(k): v for k, v in outcome.texts.items()}))
            return 1.0
        if not path.exists():
            return None
        baseline = {int(k): v for k, v in json.loads(path.read_text()).items()}
        return agreement(outcome.texts, baseline)

    # ------------------------------------------------------------------ the verdict
    def _next_rerun(self) -> None:
        spec = self.study.spec
        best = best_trial(self._results, spec.goal)
        unmet = goal_unmet(self._results, spec.goal)
        if best is None or unmet:
            self._finish(None, " ".join(x for x in (unmet or self._no_trial_message(), self._search_note) if x))
            return
        runs = self.study.verdict_runs()
        plan = verdict_plan(spec.repeats)
        if len(runs) >= len(plan):
            self._finish(with_note(make_verdict(best, runs, spec.goal), self._search_note), "")
            return
        if self._pausing():
            self._pause("rerun")
            return
        role = plan[len(runs)]
        params = best.params if role == BEST_ROLE else {}
        label = f"Verdict: {'best' if role == BEST_ROLE else 'defaults'}, run {len(runs) // 2 + 1} of {spec.repeats}"
        config = trial_config(self._base_config(), spec.space, params)
        self.current = TrialRun(self.model, self.commands, config, self.workload, self._prefix(f"v{len(runs)}"),
                                label, spec.goal, lambda outcome: self._on_rerun_done(role, outcome),
                                self._on_phase, self.clock, self.trial_limits())
        self.current.begin()

    def _no_trial_message(self) -> str:
        failed = [r for r in self._results if r.state == "failed"]
        first = f" The first failure: trial {failed[0].number}: {failed[0].error}" if failed else ""
        return f"No trial completed, so there is no best setting to compare with vLLM's defaults.{first}"

    def _on_rerun_done(self, role: str, outcome: TrialOutcome) -> None:
        self.current = None
        value = goal_value(outcome.figures, self.study.spec.goal) if outcome.figures else None
        if outcome.error != STOPPED:
            self.study.keep_verdict_run({"role": role, "value": None if outcome.error else value,
                                         "error": outcome.error})
        self._keep_elapsed()
        self._emit_progress(force=True)
        if self._stopping:
            self._end_stopped()
        else:
            self._next_rerun()

    # ------------------------------------------------------------------ the end
    def _finish(self, verdict: Verdict | None, message: str) -> None:
        self.study.end("verdict" if verdict is not None else "failed",
                       asdict(verdict) if verdict is not None else None)
        self._close(verdict, message)

    def _end_stopped(self) -> None:
        self.study.end("stopped")
        self._close(None, f"Stopped: {self._trials_text()} kept.")

    def _trials_text(self) -> str:
        """"5 trials", "5 trials (and 3 settings refused before their start)"."""
        done, refused = len(self._ran()), sum(r.refused for r in self._results)
        text = f"{done} trial{'s' if done != 1 else ''}"
        return text + (f" (and {refused} setting{'s' if refused != 1 else ''} refused before their start)"
                       if refused else "")

    def _pausing(self) -> bool:
        return self.pause_at_s is not None and self.clock() + self._trial_estimate_s() > self.pause_at_s

    def _pause(self, next_one: str) -> None:
        """Ends this run short of ``pause_at_s``, the search not marked ended: it resumes where it paused."""
        self.paused = True
        self._keep_elapsed()
        self._close(None, f"Paused before the next {next_one}, which would not end in time: {self._trials_text()} "
                          f"and {len(self.study.verdict_runs())} of "
                          f"{len(verdict_plan(self.study.spec.repeats))} reruns kept; resume "
                          f"{self.study.spec.name!r} to go on.")

    def _close(self, verdict: Verdict | None, message: str) -> None:
        self.phase = "finished"
        self._phase_text = "finished"
        self._emit_progress(force=True)
        instead, self._instead = self._instead, None
        if instead is not None:
            instead()
        elif self._restore is not None:  # the user's own engine again
            self.commands.start_on(self._restore)
        self.commands.release()  # questions asked meanwhile go to it once it is ready
        self.finished.emit(verdict, message)

    def _keep_elapsed(self) -> None:
        self.study.study.set_user_attr("elapsed_s", self.elapsed_s())

    # ------------------------------------------------------------------ progress
    def _on_phase(self, text: str) -> None:
        self._phase_text = text
        self._emit_progress(force=text.endswith("starting the engine"))

    def progress(self) -> TuneProgress:
        spec = self.study.spec
        ended = self._ran()
        estimate = self._trial_estimate_s()
        left = max(0.0, spec.time_budget_s - self.elapsed_s()) if self.phase == "search" else 0.0
        planned = spec.max_trials if spec.max_trials is not None else \
            (len(ended) + int(left // estimate) if estimate else None)
        if self.phase == "search" and spec.max_trials is not None and estimate:
            # the trials asked for end the search before its budget does: their time is what is left of it
            running_for = self.clock() - self.current.began_s if self.current is not None else 0.0
            left = min(left, max(0.0, (spec.max_trials - len(ended)) * estimate - running_for))
        reruns_planned = len(verdict_plan(spec.repeats))
        reruns_done = len(self.study.verdict_runs())
        reruns_left = 0 if self.phase == "finished" else reruns_planned - reruns_done
        points = [(r.number, spec.goal.throughput_of(r.figures), r.figures.ttft_p99_s) for r in ended
                  if r.state == "complete" and r.figures.ttft_p99_s is not None]
        return TuneProgress(len(ended), planned, self.elapsed_s(), left + reruns_left * estimate,
                            best_trial(self._results, spec.goal), pareto_front(points), self.running_number,
                            self._phase_text, self.phase, reruns_done, reruns_planned)

    def _emit_progress(self, force: bool = False) -> None:
        now = self.clock()
        if force or now - self._last_progress_s >= 0.25:
            self._last_progress_s = now
            self.progress_changed.emit(self.progress())

    # ------------------------------------------------------------------ what the model tells
    def _on_model_engine_changed(self, status: EngineStatus) -> None:
        self._note_start_time(status)
        if self.current is not None:
            self.current.engine_changed(status)

    def _note_start_time(self, status: EngineStatus) -> None:
        if status.state is EngineState.STARTING:
            if self._starting_since is None or self._starting_since[0] != status.start_id:
                self._starting_since = (status.start_id, self.clock())
        elif status.state is EngineState.READY and self._starting_since is not None \
                and self._starting_since[0] == status.start_id:
            self.last_start_s = self.clock() - self._starting_since[1]
            self._starting_since = None

    def text_arrived(self, request_id: str, text: str) -> None:
        if self.current is not None:
            self.current.text_arrived(request_id, text)

    def request_finished(self, event) -> None:
        if self.current is not None:
            self.current.request_finished(event)
            self._emit_progress()

    def request_failed(self, request_id: str, message: str) -> None:
        if self.current is not None:
            self.current.request_failed(request_id, message)
            self._emit_progress()
