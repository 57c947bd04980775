"""The values of a tuning search: what is searched, on which workload, for which goal, and what came out.

Frozen values only, no Qt and no vLLM: the dialog builds a :class:`TuneSpec`, the search reports
:class:`TuneProgress` and :class:`TrialResult` as it goes and a :class:`Verdict` at the end.
Engine arguments keep vLLM's own names (``max_num_seqs``, ``block_size``...).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Protocol

PARAMETER_KINDS = ("int", "float", "bool", "choice")
WORKLOAD_KINDS = ("file", "session", "generated")
GOAL_KINDS = ("throughput", "goodput", "ttft")
SAMPLERS = ("tpe", "nsga2")
TRIAL_STATES = ("complete", "failed", "running")


@dataclass(frozen=True)
class SearchParameter:
    """One engine argument searched, by vLLM's name. ``int``/``float``: from ``low`` to ``high`` (a
    ``step`` apart, or on a log scale); ``bool``: off and on; ``choice``: one of ``choices`` (str, int,
    float or bool; ``speculative_config`` takes strings such as ``"off"`` or ``"ngram:4"``).
    ``changes_outputs``: the model's outputs may change with it (fp8 KV, speculative decoding): searched
    only when ``enabled`` (the user ticked it), and then each trial's greedy outputs are compared with
    trial 0's."""

    name: str
    kind: str
    low: float | None = None
    high: float | None = None
    step: float | None = None
    log: bool = False
    choices: tuple = ()
    changes_outputs: bool = False
    enabled: bool = True
    note: str = ""  # what the dialog shows beside it (a range's reason, a platform's limit)

    def __post_init__(self):
        if self.kind not in PARAMETER_KINDS:
            raise ValueError(f"{self.name}: kind {self.kind!r} is not one of {', '.join(PARAMETER_KINDS)}")

    def values_to_check(self) -> tuple:
        """The values vLLM is asked about before a search starts: the ends of a range, every choice."""
        if self.kind == "bool":
            return (False, True)
        if self.kind == "choice":
            return self.choices
        cast = int if self.kind == "int" else float
        return (cast(self.low), cast(self.high))


@dataclass(frozen=True)
class SearchSpace:
    """The engine arguments a search varies; every other one stays at the configuration's (or vLLM's
    default). Build one with ``workbench.tune.space.default_space(vllm_version, platform)``."""

    parameters: tuple[SearchParameter, ...] = ()

    def searched(self) -> tuple[SearchParameter, ...]:
        """The parameters the optimiser varies: the enabled ones."""
        return tuple(p for p in self.parameters if p.enabled)

    def parameter(self, name: str) -> SearchParameter | None:
        return next((p for p in self.parameters if p.name == name), None)

    def with_parameter(self, parameter: SearchParameter) -> "SearchSpace":
        """This space with ``parameter`` in place of the one of its name (added at the end if new)."""
        names = [p.name for p in self.parameters]
        if parameter.name in names:
            kept = tuple(parameter if p.name == parameter.name else p for p in self.parameters)
        else:
            kept = self.parameters + (parameter,)
        return replace(self, parameters=kept)

    def with_enabled(self, name: str, enabled: bool) -> "SearchSpace":
        found = self.parameter(name)
        return self if found is None else self.with_parameter(replace(found, enabled=enabled))

    @property
    def changes_outputs(self) -> bool:
        """True when a searched parameter may change the model's outputs (agreement is measured)."""
        return any(p.changes_outputs for p in self.searched())


@dataclass(frozen=True)
class WorkloadSpec:
    """The traffic each trial serves. ``file``: a batch file's prompts (``path``), sent at ``rate_per_s``
    (None: all at once); ``session``: a stored session's requests (``session_id``) replayed at their
    arrival times with their prompt and output lengths; ``generated``: ``num_requests`` synthetic
    requests, Poisson arrivals at ``rate_per_s`` (None: all at once), lengths drawn around their mean
    with their spread (standard deviation), a ``shared_prefix_share`` of them starting with the same
    ``shared_prefix_tokens``. ``closed_loop_concurrency``: keep that many requests in flight instead of
    following arrival times."""

    kind: str = "generated"
    path: str = ""
    session_id: str = ""
    rate_per_s: float | None = None
    num_requests: int = 64
    prompt_tokens_mean: int = 256
    prompt_tokens_spread: int = 0
    output_tokens_mean: int = 64
    output_tokens_spread: int = 0
    shared_prefix_share: float = 0.0
    shared_prefix_tokens: int = 0
    closed_loop_concurrency: int | None = None
    seed: int = 0
    session_label: str = ""  # the session as the user chose it ("the 3 requests of the session begun …")

    def __post_init__(self):
        if self.kind not in WORKLOAD_KINDS:
            raise ValueError(f"workload kind {self.kind!r} is not one of {', '.join(WORKLOAD_KINDS)}")

    def describe(self) -> str:
        if self.kind == "file":
            what = f"the prompts of {self.path}"
        elif self.kind == "session":
            what = self.session_label or f"the requests of session {self.session_id}"
        else:
            what = (f"{self.num_requests} generated requests of ~{self.prompt_tokens_mean} prompt and "
                    f"~{self.output_tokens_mean} output tokens")
        if self.closed_loop_concurrency:
            return f"{what}, {self.closed_loop_concurrency} in flight"
        return f"{what}, at {self.rate_per_s:g}/s" if self.rate_per_s else what


@dataclass(frozen=True)
class Goal:
    """What the search maximises. ``throughput``: output tok/s; ``goodput``: output tok/s of the
    requests whose TTFT is within ``ttft_p99_limit_s`` and whose TPOT (its mean inter-token gap, as
    ``vllm bench serve --goodput tpot:…`` counts it) is within ``itl_p99_limit_ms`` (the names kept so that
    stored searches read back); ``ttft``: the lowest p99 TTFT, the workload sent at
    ``rate_per_s`` (None: the workload's own rate)."""

    kind: str = "throughput"
    ttft_p99_limit_s: float | None = None
    itl_p99_limit_ms: float | None = None
    rate_per_s: float | None = None

    def __post_init__(self):
        if self.kind not in GOAL_KINDS:
            raise ValueError(f"goal {self.kind!r} is not one of {', '.join(GOAL_KINDS)}")

    @property
    def maximise(self) -> bool:
        return self.kind != "ttft"

    @property
    def throughput_name(self) -> str:
        """The throughput the search weighs against p99 TTFT (the plot's height, the Pareto front, NSGA-II's
        first objective): goodput for a goodput goal, output tok/s otherwise."""
        return "goodput tok/s" if self.kind == "goodput" else "output tok/s"

    @property
    def value_unit(self) -> str:
        """What a goal value is counted in: p99 TTFT seconds for the ttft goal, else its throughput."""
        return "s p99 TTFT" if self.kind == "ttft" else self.throughput_name

    def throughput_of(self, figures) -> float:
        return figures.goodput_tokens_per_s if self.kind == "goodput" else figures.output_tokens_per_s

    def describe(self) -> str:
        if self.kind == "goodput":
            limits = [f"TTFT ≤ {self.ttft_p99_limit_s:g} s" if self.ttft_p99_limit_s is not None else "",
                      f"TPOT ≤ {self.itl_p99_limit_ms:g} ms" if self.itl_p99_limit_ms is not None else ""]
            return "highest goodput (" + ", ".join(x for x in limits if x) + ")"
        if self.kind == "ttft":
            return "lowest p99 TTFT" + (f" at {self.rate_per_s:g} requests/s" if self.rate_per_s else "")
        return "highest output tok/s"


@dataclass(frozen=True)
class TuneSpec:
    """A whole search: run trials until ``time_budget_s`` is spent (or ``max_trials`` are done), then
    rerun the best and the defaults ``repeats`` times each for the verdict. ``name`` names its Optuna
    study (and the resumable search)."""

    workload: WorkloadSpec
    goal: Goal
    space: SearchSpace
    time_budget_s: float = 1800.0
    sampler: str = "tpe"
    repeats: int = 3
    name: str = ""
    max_trials: int | None = None
    seed: int = 0
    trial_overrun_s: float | None = None  # a trial's requests may run this long past the last arrival (None: auto)

    def __post_init__(self):
        if self.sampler not in SAMPLERS:
            raise ValueError(f"sampler {self.sampler!r} is not one of {', '.join(SAMPLERS)}")


@dataclass(frozen=True)
class TrialFigures:
    """What one trial measured, from the figures vLLM gave each finished request."""

    output_tokens_per_s: float = 0.0
    goodput_tokens_per_s: float = 0.0
    ttft_p50_s: float | None = None
    ttft_p99_s: float | None = None
    itl_p99_ms: float | None = None  # TPOT: the p99 over the requests of each one's mean gap between tokens
    num_requests_done: int = 0
    num_requests_failed: int = 0
    duration_s: float = 0.0
    gap_p99_ms: float | None = None  # ITL: the p99 of every gap between two tokens (None: not timed)


@dataclass(frozen=True)
class TrialResult:
    """One trial: its number (0 is vLLM's defaults), the engine arguments it set, its state, its
    figures (zero for a failed trial) or the error that failed it, and how many of its greedy outputs
    agreed with trial 0's (a fraction; None where not measured)."""

    number: int
    params: dict = field(default_factory=dict)
    state: str = "running"
    figures: TrialFigures = field(default_factory=TrialFigures)
    error: str = ""
    output_agreement: float | None = None
    goal_value: float | None = None  # the goal's figure (None for a failed or running trial)
    engine_start_s: float | None = None  # how long the engine took to start
    batch_limits: dict = field(default_factory=dict)  # max_num_batched_tokens, max_num_seqs as vLLM ran them
    refused: bool = False  # failed before its engine started: a combination vLLM refuses (not counted as a run)

    def __post_init__(self):
        if self.state not in TRIAL_STATES:
            raise ValueError(f"trial state {self.state!r} is not one of {', '.join(TRIAL_STATES)}")

    @property
    def shown_state(self) -> str:
        """The state as the table and the CLI say it: "refused" for a failure before any engine start."""
        return "refused" if self.refused else self.state

    # Flat names, so a table reads them as columns.
    @property
    def output_tokens_per_s(self) -> float:
        return self.figures.output_tokens_per_s

    @property
    def goodput_tokens_per_s(self) -> float:
        return self.figures.goodput_tokens_per_s

    @property
    def ttft_p50_s(self) -> float | None:
        return self.figures.ttft_p50_s

    @property
    def ttft_p99_s(self) -> float | None:
        return self.figures.ttft_p99_s

    @property
    def itl_p99_ms(self) -> float | None:
        return self.figures.itl_p99_ms

    @property
    def gap_p99_ms(self) -> float | None:
        return self.figures.gap_p99_ms

    @property
    def num_requests_done(self) -> int:
        return self.figures.num_requests_done

    @property
    def duration_s(self) -> float:
        return self.figures.duration_s


@dataclass(frozen=True)
class TuneProgress:
    """Where a search stands. ``phase``: "search", "verdict" or "finished"; ``phase_text``: what the
    running trial does now ("Trial 3: starting the engine", "Trial 3: 12 of 16 requests done")."""

    num_trials_done: int = 0
    num_trials_planned: int | None = None
    elapsed_s: float = 0.0
    time_left_s: float | None = None
    best: TrialResult | None = None
    pareto_numbers: tuple[int, ...] = ()
    running_number: int | None = None
    phase_text: str = ""
    phase: str = "search"
    num_reruns_done: int = 0  # the verdict's reruns (the best and the defaults, alternately)
    num_reruns_planned: int = 0


@dataclass(frozen=True)
class Verdict:
    """The best trial against vLLM's defaults, each rerun ``len(best_values)`` times alternately.
    Ratios are best over defaults for a goal maximised, defaults over best for TTFT (above 1: better).
    ``goal_met``: False when no trial met the goal's limits (``text`` names the closest)."""

    best_number: int
    best_params: dict
    best_values: tuple[float, ...]
    default_values: tuple[float, ...]
    ratio_median: float
    ratio_min: float
    ratio_max: float
    text: str
    goal_met: bool = True
    notes: str = ""  # what a headline leaves out (ends ``text`` too): reruns that failed, defaults that served none


class TuneControls(Protocol):
    """The face a search shows the window (``workbench.tune.run.TuneRun`` has it): widgets call these
    methods and observe these psygnal signals, on the GUI thread; they never post engine commands.

    Signals: ``progress_changed(TuneProgress)``, ``trial_finished(TrialResult)`` (a running trial too,
    once, as it starts: its state "running"), ``finished(Verdict | None, str)`` (the verdict, or None,
    and a message: why it stopped, what went wrong, or "" for a verdict)."""

    def start(self, spec: TuneSpec) -> None:
        """Starts a search; raises ``workbench.tune.problems.TuneRefused`` (its ``messages`` name the
        cause and the fix) for a spec that cannot run: a value vLLM rejects, a workload file with
        problems, a budget shorter than one engine start."""

    def stop(self) -> None:
        """Stops after the running trial's measure is kept (no verdict unless one was running)."""

    def prepare_resume(self, name: str):
        """The stored search ``name`` (one of :meth:`resumable`) read and made ready to carry on, for :meth:`resume`;
        called off the GUI thread. Raises TuneRefused where it cannot go on (another model)."""

    def resume(self, name: str, ready=None) -> None:
        """Carries on the stored search ``name`` (one of :meth:`resumable`), as :meth:`prepare_resume` read it."""

    def resumable(self) -> list[str]:
        """Stored searches that did not reach their verdict (a killed app's), newest first."""

    def past(self) -> list[str]:
        """Stored searches that ended (with a verdict, stopped or failed), newest first."""

    def read_stored(self, name: str):
        """The ended search ``name`` (one of :meth:`past`) read whole, for :meth:`open`; called off the GUI thread."""

    def open(self, name: str, stored=None) -> None:
        """Shows the ended search ``name`` as it ended, through ``finished`` (its trials are then :meth:`trials`);
        its best can then be applied or copied. Starts no engine."""

    def trials(self) -> list[TrialResult]:
        """Every trial of the search so far, in order."""

    def apply_as_preset(self, name: str) -> str:
        """Saves the best settings as a user preset ``name`` (its ``[origin]`` names the search);
        returns the preset's path."""

    def serve_line(self) -> str:
        """The best settings as a ``vllm serve`` command line ("" before any trial completed)."""
