"""A search kept in Optuna's SQLite storage (``<data folder>/tune/searches.db``), so a search survives the
app's end and resumes, and an ended one can be opened again: its spec, the engine configuration it ran on (the
model, its length; each trial changes only the searched arguments), each trial's parameters, figures and error,
the verdict's runs and the verdict.

Ask and tell: each trial is asked for (vLLM's defaults enqueued as trial 0, ``performance_mode=throughput``
as trial 1 where the space has it), run by the caller, and told its value, or PRUNED for settings that failed
(refused before their start, an engine that did not start or died): Optuna's TPE ranks those below every
measured trial and samples away from them (it ignores FAIL, which is kept for trials cut short by the app's end).
A combination vLLM refuses by construction is not sampled at all: below ``max_model_len`` batched tokens,
chunked prefill stays at vLLM's default (on).
"""
from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import asdict, replace
from pathlib import Path

import optuna
import sqlalchemy.exc
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState

from workbench.engine.spec import EngineConfig
from workbench.tune.export import SEARCHES_DB as DB_NAME
from workbench.tune.problems import TuneRefused
from workbench.tune.space import chunking_needed
from workbench.tune.values import (
    Goal, SearchParameter, SearchSpace, TrialFigures, TrialResult, TuneSpec, WorkloadSpec,
)

DEFAULTS, THROUGHPUT_MODE = "defaults", "performance_mode=throughput"
STATES = {TrialState.COMPLETE: "complete", TrialState.FAIL: "failed", TrialState.RUNNING: "running",
          TrialState.PRUNED: "failed"}
CUT_SHORT = "the search ended during this trial (the app stopped); it runs again on resume"

optuna.logging.set_verbosity(logging.WARNING)


def spec_to_json(spec: TuneSpec) -> str:
    return json.dumps(asdict(spec))


def spec_from_json(text: str) -> TuneSpec:
    data = json.loads(text)
    space = SearchSpace(tuple(SearchParameter(**{**p, "choices": tuple(p["choices"])})
                              for p in data["space"]["parameters"]))
    return TuneSpec(**{**data, "workload": WorkloadSpec(**data["workload"]), "goal": Goal(**data["goal"]),
                       "space": space})


def config_to_json(config: EngineConfig) -> str:
    return json.dumps(asdict(config))


def config_from_json(text: str) -> EngineConfig:
    data = json.loads(text)
    return EngineConfig(**{**data, "extra": tuple((key, value) for key, value in data.get("extra", ()))})


# What a model folder's config.json holds that says nothing of the model: where it was saved from, and by which
# transformers release.
NOT_THE_MODEL = ("_name_or_path", "transformers_version")


def model_identity(model: str) -> str:
    """What a search's trials depend on of its model: a local folder by its ``config.json`` (so a folder moved, or
    a benchmark's shape written again under another name, is the same model), else the name as given."""
    config = Path(model).expanduser() / "config.json"
    try:
        data = json.loads(config.read_text())
    except (OSError, ValueError):
        return model
    kept = {key: value for key, value in data.items() if key not in NOT_THE_MODEL}
    return "config.json " + hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:16]


def distribution(parameter: SearchParameter):
    if parameter.kind == "int":
        return IntDistribution(int(parameter.low), int(parameter.high), log=parameter.log,
                               step=1 if parameter.log else int(parameter.step or 1))
    if parameter.kind == "float":
        return FloatDistribution(float(parameter.low), float(parameter.high), log=parameter.log,
                                 step=None if parameter.log else parameter.step)
    return CategoricalDistribution((False, True) if parameter.kind == "bool" else parameter.choices)


def storage_for(folder: Path) -> optuna.storages.RDBStorage:
    """The searches' storage; TuneRefused, naming the file and the fix, where it is damaged."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        return optuna.storages.RDBStorage(f"sqlite:///{folder / DB_NAME}",
                                          engine_kwargs={"connect_args": {"timeout": 30}})
    except sqlalchemy.exc.DatabaseError as error:
        first = str(error).splitlines()[0]
        raise TuneRefused([f"The stored searches could not be read ({folder / DB_NAME}): {first}. Move that file "
                           "aside (or restore it from a backup): the next search starts a new one."]) from error


def _sampler(spec: TuneSpec):
    if spec.sampler == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=spec.seed or None)
    return optuna.samplers.TPESampler(seed=spec.seed or None, n_startup_trials=4)


class SearchStudy:
    """One search's study: created for a new spec, or loaded by name to resume."""

    def __init__(self, study: optuna.Study, spec: TuneSpec):
        self.study, self.spec = study, spec

    @classmethod
    def create(cls, folder: Path, spec: TuneSpec, base: EngineConfig | None = None) -> "SearchStudy":
        """``base``: the engine configuration the trials change (kept, so that the search resumes on it and an
        ended one's ``vllm serve`` line names its model)."""
        directions = ["maximize", "minimize"] if spec.sampler == "nsga2" else \
            ["maximize" if spec.goal.maximise else "minimize"]
        study = optuna.create_study(storage=storage_for(folder), study_name=spec.name, sampler=_sampler(spec),
                                    directions=directions)
        study.set_user_attr("spec", spec_to_json(spec))
        if base is not None:
            study.set_user_attr("base_config", config_to_json(base))
            study.set_user_attr("model_identity", model_identity(base.model))
        study.set_user_attr("created_s", time.time())
        study.enqueue_trial({}, user_attrs={"role": DEFAULTS})
        mode = spec.space.parameter("performance_mode")
        if mode is not None and mode.enabled and "throughput" in mode.choices:
            study.enqueue_trial({"performance_mode": "throughput"}, user_attrs={"role": THROUGHPUT_MODE})
        return cls(study, spec)

    @classmethod
    def open(cls, folder: Path, name: str) -> "SearchStudy":
        """A stored search as it is (to read)."""
        storage = storage_for(folder)
        spec = spec_from_json(optuna.load_study(study_name=name, storage=storage).user_attrs["spec"])
        return cls(optuna.load_study(study_name=name, storage=storage, sampler=_sampler(spec)), spec)

    @classmethod
    def load(cls, folder: Path, name: str) -> "SearchStudy":
        """A stored search to carry on: its trials cut short are asked again."""
        found = cls.open(folder, name)
        found.requeue_cut_short()
        return found

    @property
    def base_config(self) -> EngineConfig | None:
        """The engine configuration the search ran on (None: a search kept before it was stored)."""
        text = self.study.user_attrs.get("base_config")
        return config_from_json(text) if text else None

    def runs_on(self, model: str) -> bool:
        """Whether ``model`` is the model the search ran on (True for a search kept before that was stored)."""
        identity = self.study.user_attrs.get("model_identity")
        return identity is None or identity == model_identity(model)

    def change_limits(self, time_budget_s: float | None = None, max_trials: int | None = None) -> None:
        """A resumed search carried further (or cut shorter): its time budget, its number of trials; None keeps
        the stored one. Kept with the study, so a later resume finds them."""
        changes = {k: v for k, v in (("time_budget_s", time_budget_s), ("max_trials", max_trials)) if v is not None}
        if changes:
            self.spec = replace(self.spec, **changes)
            self.study.set_user_attr("spec", spec_to_json(self.spec))

    def requeue_cut_short(self) -> None:
        """Trials left running by an app that ended are failed (the sampler is told) and asked again."""
        for trial in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            self.study._storage.set_trial_user_attr(trial._trial_id, "error", CUT_SHORT)
            self.study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
            attrs = {"role": trial.user_attrs["role"]} if trial.user_attrs.get("role") else None
            self.study.enqueue_trial(trial.params, user_attrs=attrs)

    # ------------------------------------------------------------------ trials
    def ask(self, max_model_len: int | None = None) -> tuple[optuna.Trial, dict]:
        """The next trial and its parameters (vLLM's names; a fixed trial sets only its own). With
        ``max_model_len``, chunked prefill is not sampled where the batched tokens sampled are fewer: off, vLLM
        would refuse them (a full-length prompt could never be scheduled), so it stays at vLLM's default."""
        trial = self.study.ask()
        fixed = self.study._storage.get_trial(trial._trial_id).system_attrs.get("fixed_params")
        searched = self.spec.space.searched()
        if fixed is not None:
            searched = tuple(p for p in self.spec.space.parameters if p.name in fixed)
        params = {}
        for parameter in searched:
            if parameter.name == "enable_chunked_prefill" and fixed is None \
                    and chunking_needed(params.get("max_num_batched_tokens"), max_model_len):
                continue
            params[parameter.name] = _suggest(trial, parameter)
        return trial, params

    def tell_complete(self, trial: optuna.Trial, result: TrialResult) -> None:
        self._keep(trial, result)
        if self.spec.sampler == "nsga2":
            self.study.tell(trial, [self.spec.goal.throughput_of(result.figures), result.figures.ttft_p99_s])
        else:
            self.study.tell(trial, result.goal_value)

    def tell_failed(self, trial: optuna.Trial, result: TrialResult, settings_fault: bool = True) -> None:
        """A trial that measured nothing. ``settings_fault``: its settings failed (refused, an engine that did
        not start or died), told as PRUNED so the sampler moves away from them; else (stopped by the user)
        FAIL, which the sampler ignores."""
        self._keep(trial, result)
        self.study.tell(trial, state=TrialState.PRUNED if settings_fault else TrialState.FAIL)

    @staticmethod
    def _keep(trial: optuna.Trial, result: TrialResult) -> None:
        trial.set_user_attr("figures", asdict(result.figures))
        trial.set_user_attr("error", result.error)
        trial.set_user_attr("goal_value", result.goal_value)
        trial.set_user_attr("engine_start_s", result.engine_start_s)
        trial.set_user_attr("output_agreement", result.output_agreement)
        trial.set_user_attr("batch_limits", result.batch_limits)
        if result.refused:
            trial.set_user_attr("refused", True)

    def results(self) -> list[TrialResult]:
        """Every trial asked so far, in order (trials waiting to be asked are not)."""
        return [trial_result(t) for t in self.study.get_trials(deepcopy=False)
                if t.state in STATES]

    # ------------------------------------------------------------------ the verdict and the end
    def verdict_runs(self) -> list[dict]:
        return list(self.study.user_attrs.get("verdict_runs", []))

    def keep_verdict_run(self, run: dict) -> None:
        self.study.set_user_attr("verdict_runs", self.verdict_runs() + [run])

    def end(self, how: str, verdict: dict | None = None) -> None:
        """Marks the search ended ("verdict", "stopped", "failed"): it is no longer offered to resume."""
        if verdict is not None:
            self.study.set_user_attr("verdict", verdict)
        self.study.set_user_attr("ended", how)

    @property
    def ended(self) -> str:
        return self.study.user_attrs.get("ended", "")


def _suggest(trial: optuna.Trial, parameter: SearchParameter):
    if parameter.kind == "int":
        return trial.suggest_int(parameter.name, int(parameter.low), int(parameter.high), log=parameter.log,
                                 step=1 if parameter.log else int(parameter.step or 1))
    if parameter.kind == "float":
        return trial.suggest_float(parameter.name, float(parameter.low), float(parameter.high), log=parameter.log,
                                   step=None if parameter.log else parameter.step)
    return trial.suggest_categorical(parameter.name, list(distribution(parameter).choices))


def trial_result(trial) -> TrialResult:
    """A stored trial as the window shows it."""
    attrs = trial.user_attrs
    figures = TrialFigures(**attrs["figures"]) if attrs.get("figures") else TrialFigures()
    state = STATES[trial.state]
    return TrialResult(trial.number, dict(trial.params), state, figures, attrs.get("error", ""),
                       attrs.get("output_agreement"), attrs.get("goal_value"), attrs.get("engine_start_s"),
                       dict(attrs.get("batch_limits") or {}), bool(attrs.get("refused")))


def resumable(folder: Path) -> list[str]:
    """Searches that did not end (a killed app's), newest first."""
    return _names(folder, ended=False)


def ended_searches(folder: Path) -> list[str]:
    """Searches that ended (with their verdict, stopped, or failed), newest first: they can be opened again."""
    return _names(folder, ended=True)


def _names(folder: Path, ended: bool) -> list[str]:
    if not (folder / DB_NAME).exists():
        return []
    summaries = optuna.get_all_study_summaries(storage_for(folder), include_best_trial=False)
    chosen = [s for s in summaries if bool(s.user_attrs.get("ended")) == ended]
    chosen.sort(key=lambda s: s.user_attrs.get("created_s", 0.0), reverse=True)
    return [s.study_name for s in chosen]


def study_names(folder: Path) -> list[str]:
    if not (folder / DB_NAME).exists():
        return []
    return [s.study_name for s in optuna.get_all_study_summaries(storage_for(folder), include_best_trial=False)]
