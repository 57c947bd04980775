"""One workload several ways in one run: (a) plain vLLM, (b) the workbench's loop, (c) HF ``generate``,
and (d) the app itself, the real window offscreen (``workbench.bench.gui.app_path``, which needs Qt).

(a), (b) and (d) share one engine and take turns, ``repeats`` times each: same process, same GPU
memory, same arguments. Before an (a) run the plugin's block tracking and the workbench's stat logger
are taken out of the engine, so (a) is vLLM as shipped; before a (b) or (d) run they are put back and
the pool resynced, as when the GUI starts an engine (outside the timed part). Output tokens, TTFT and inter-token latency are measured
the same way for all three, on the client's clock as each delta arrives. (c) is the "PyTorch native"
baseline at the same prompt and output lengths, over the batch sizes its time box allows
(``hf_baseline``). This module has no Qt: without (d) it runs on the GPU machine too.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol

import psutil

from workbench.bench.engine_bench import BenchSession, random_prompts, record_arrivals, start_session
from workbench.bench.hf_baseline import HFBaseline, run_hf_baseline
from workbench.bench.memory import engine_memory
from workbench.engine.backend import ChatRequest, wait_for_snapshot
from workbench.engine.commands import Submit
from workbench.engine.events import RequestFailed, RequestFinished
from workbench.engine.loop import EngineLoop
from workbench.engine.metrics import gap_tokens_per_s, timings_from_arrivals, tokens_per_s
from workbench.engine.sampling import SamplingSettings
from workbench.engine.sampling_params import to_sampling_params
from workbench.engine.spec import EngineConfig

Progress = Callable[[str, float], None]
SESSION_PATHS = ("a", "b", "d")  # the paths that run on the shared engine; (c) runs HF on its own
PATH_NAMES = {"a": "(a) plain vLLM", "b": "(b) workbench loop", "d": "(d) workbench app"}


@dataclass(frozen=True)
class Workload:
    num_requests: int = 64
    prompt_len: int = 256
    output_len: int = 256
    ignore_eos: bool = True
    repeats: int = 3
    hf_time_box_s: float = 120.0  # for all of the HF baseline's batch sizes together
    single_stream_samples: int = 3  # single-request runs per path and repeat: one is short enough to be noise
    paths: tuple[str, ...] = ("a", "b", "c")  # which of (a)-(d) to run; (a) always

    @property
    def session_paths(self) -> tuple[str, ...]:
        """The paths that take turns on the shared engine, in order."""
        return tuple(key for key in SESSION_PATHS if key in self.paths)


@dataclass
class RunStats:
    """One run of (a), (b) or (d): totals plus per-request TTFT and per-token gaps (client clock)."""

    path: str
    output_tokens: int = 0
    elapsed_s: float = 0.0
    ttft_s: list[float] = field(default_factory=list)
    itl_s: list[float] = field(default_factory=list)
    memory_bytes: int | None = None
    memory_scope: str = ""
    client_cpu_s: float = 0.0  # CPU time of this process (all its threads) during the run
    # ... of which this process's own, where the client has a process of its own (the rest is that process's)
    own_cpu_s: float | None = None
    engine_cpu_s: float = 0.0  # CPU time of the engine's processes during the run
    heatmap_frames: int | None = None  # frames the window's heatmap drew during the run: (d) only
    last_token_s: float | None = None  # from the start to the last token's arrival (the client's clock)

    @property
    def end_latency_s(self) -> float | None:
        """From the last token's arrival to the run's end: (d)'s window hearing that the run ended."""
        return None if self.last_token_s is None else self.elapsed_s - self.last_token_s

    @property
    def tokens_per_s(self) -> float:
        return tokens_per_s(self.output_tokens, self.elapsed_s)

    def cpu_us_per_token(self) -> tuple[float, float]:
        """Client and engine CPU microseconds per output token: work done, less exposed to a noisy
        machine's scheduling than wall-clock rates."""
        n = self.output_tokens or 1
        return self.client_cpu_s / n * 1e6, self.engine_cpu_s / n * 1e6


def _engine_cpu_s(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


class CpuClock:
    """CPU seconds spent by this process and by the engine's processes between start and stop;
    ``client_pids``: other processes whose CPU counts as the client's (the engine-client process)."""

    def __init__(self, pids: list[int], client_pids: list[int] = ()):
        self.pids, self.client_pids = pids, list(client_pids)
        self.own = time.process_time()
        self.others = _engine_cpu_s(self.client_pids)
        self.engine = _engine_cpu_s(pids)

    def stop(self, stats: "RunStats") -> None:
        own = time.process_time() - self.own
        stats.client_cpu_s = own + _engine_cpu_s(self.client_pids) - self.others
        stats.engine_cpu_s = _engine_cpu_s(self.pids) - self.engine
        if self.client_pids:
            stats.own_cpu_s = own


@dataclass
class ComparisonResult:
    workload: Workload
    config: EngineConfig
    runs: dict[str, list[RunStats]]  # "a", "b", "d" (those run) -> runs
    single_stream: dict[str, list[RunStats]]  # the same keys -> single-request runs
    hf: HFBaseline
    environment: dict[str, str]


class SessionPath(Protocol):
    """A path run on the shared engine beside (a), supplied by the caller ((d) needs Qt, which this
    module may not import): called once per run, closed before the engine shuts down."""

    def __call__(self, session: BenchSession, prompts: list[list[int]], sampling: SamplingSettings) -> RunStats: ...
    def close(self) -> None: ...


def run_plain_timed(session: BenchSession, prompts: list[list[int]], sampling: SamplingSettings,
                    tracked: bool = False) -> RunStats:
    """(a): ``add_request`` and ``step()`` in a tight loop, DELTA outputs, the same ``SamplingParams`` as (b).

    ``tracked``: leave the plugin's block tracking in the engine (to measure what it costs alone).
    The workbench's stat logger is out of the engine: vLLM steps with its own loggers only."""
    set_tracking(session, tracked)
    session.set_stats_logging(False)
    engine = session.engine
    room = session.config.max_model_len - max(len(p) for p in prompts)  # as session.submit caps (b)
    params = to_sampling_params(sampling, room, session.tokenizer is not None)
    stats = RunStats("a")
    cpu = CpuClock(session.engine_pids)
    started = time.perf_counter()
    arrivals: dict[str, list[tuple[float, int]]] = {}
    for i, prompt in enumerate(prompts):
        engine.add_request(f"a-{started}-{i}", {"prompt_token_ids": prompt}, params)
    while engine.has_unfinished_requests():
        outputs = engine.step()
        stats.output_tokens += record_arrivals(outputs, time.perf_counter(), arrivals)
    stats.elapsed_s = time.perf_counter() - started
    cpu.stop(stats)
    add_timings(stats, started, arrivals.values())
    return stats


class _Collector:
    """The loop's listener in path (b): counts ended requests, drops everything else."""

    def __init__(self):
        self.finished = 0

    def publish(self, event) -> None:
        if isinstance(event, (RequestFinished, RequestFailed)):
            self.finished += 1

    def snapshot_published(self, snapshot) -> None:
        pass

    def stats_published(self, series) -> None:  # the statistics are kept as in the app, then dropped
        pass


def run_workbench_timed(session: BenchSession, prompts: list[list[int]], sampling: SamplingSettings,
                        snapshot_interval_s: float = 0.1) -> RunStats:
    """(b): the loop as the GUI drives it; arrivals are recorded by the session as deltas come in."""
    set_tracking(session, snapshot_interval_s != float("inf"))
    session.set_stats_logging(True)
    collector = _Collector()
    loop = EngineLoop(collector, snapshot_interval_s=snapshot_interval_s)
    loop.adopt(session)
    stats = RunStats("b")
    with session.recording_arrivals() as arrivals:
        cpu = CpuClock(session.engine_pids)
        started = time.perf_counter()
        for i, prompt in enumerate(prompts):
            loop.post(Submit(ChatRequest(f"b-{started}-{i}", (), sampling, prompt_token_ids=tuple(prompt))))
        loop.run_until(lambda: collector.finished >= len(prompts))
        stats.elapsed_s = time.perf_counter() - started
        cpu.stop(stats)
    stats.output_tokens = sum(count for request in arrivals.values() for _, count in request)
    add_timings(stats, started, arrivals.values())
    return stats


def set_tracking(session: BenchSession, on: bool) -> None:
    """Block tracking in the engine and the mirror in sync (as in the GUI after a start), or taken out."""
    if on:
        wait_for_snapshot(session.probe)
    else:
        session.stop_kv_tracking()


def _rotation(variants: tuple[str, ...], repeats: int):
    """(repeat, position, key) in run order; the order rotates each repeat (two: a b, b a, a b, ...)."""
    for rep in range(repeats):
        shift = rep % len(variants)
        for offset, key in enumerate(variants[shift:] + variants[:shift]):
            yield rep, offset, key


def _warm_up(session: BenchSession, runners: dict[str, Callable], num: int, prompt_len: int, vocab: int,
             sampling: SamplingSettings) -> None:
    warm = random_prompts(min(4, num), prompt_len, vocab, seed=999)
    for run in runners.values():
        run(session, warm, sampling)


def add_timings(stats: RunStats, submitted: float, all_arrivals) -> None:
    all_arrivals = list(all_arrivals)
    last = [arrivals[-1][0] for arrivals in all_arrivals if arrivals]
    stats.last_token_s = max(last) - submitted if last else None
    for arrivals in all_arrivals:
        ttft, gaps = timings_from_arrivals(submitted, arrivals)
        if ttft is not None:
            stats.ttft_s.append(ttft)
        stats.itl_s.extend(gaps)


def run_comparison(config: EngineConfig, workload: Workload, vocab: int, hf_model: str,
                   progress: Progress = lambda label, fraction: None,
                   supplied: dict[str, SessionPath] | None = None,
                   open_session: Callable[[EngineConfig], BenchSession] = start_session) -> ComparisonResult:
    """Runs the workload's paths; ``supplied`` holds those this module cannot build itself ((d)), and
    ``open_session`` starts the shared engine (in the engine-client process: ``client_bench``)."""
    supplied = supplied or {}
    keys = workload.session_paths
    missing = [key for key in keys if key not in VARIANTS and key not in supplied]
    if "a" not in keys or missing:
        raise ValueError(f"paths {workload.paths}: (a) is needed, and no runner was given for {missing}")
    runners = {key: supplied[key] if key in supplied else VARIANTS[key][1] for key in keys}
    sampling = SamplingSettings(temperature=0.0, max_tokens=workload.output_len, ignore_eos=workload.ignore_eos)
    single = SamplingSettings(temperature=0.0, max_tokens=workload.output_len, ignore_eos=True)
    progress("Starting the engine", 0.02)
    session = open_session(config)
    runs: dict[str, list[RunStats]] = {key: [] for key in keys}
    single_stream: dict[str, list[RunStats]] = {key: [] for key in keys}
    environment = {"vllm": session.vllm_version, "device": "cpu" if session.on_cpu else "cuda",
                   "engine_core_cores": ",".join(map(str, session.engine_core_cores))}
    try:
        _warm_up(session, runners, workload.num_requests, workload.prompt_len, vocab, sampling)
        per_repeat = len(keys) + 1
        total = workload.repeats * per_repeat
        for rep, offset, key in _rotation(keys, workload.repeats):
            done = rep * per_repeat + offset
            progress(f"Repeat {rep + 1}/{workload.repeats}: ({key}) {workload.num_requests} requests",
                     0.2 + 0.5 * done / total)
            prompts = random_prompts(workload.num_requests, workload.prompt_len, vocab, seed=rep * 10 + offset + 1)
            result = runners[key](session, prompts, sampling)
            result.memory_bytes, result.memory_scope = engine_memory(session.engine_pids)
            runs[key].append(result)
            if offset == len(keys) - 1:  # every path ran this repeat: now the single streams, side by side
                progress(f"Repeat {rep + 1}/{workload.repeats}: single stream", 0.2 + 0.5 * (done + 1) / total)
                _single_streams(session, runners, single_stream, workload, vocab, single, rep)
    finally:
        for runner in supplied.values():
            runner.close()
        session.shutdown()
    hf = HFBaseline()
    if "c" in workload.paths:
        progress("Hugging Face transformers generate (c)", 0.75)
        hf = run_hf_baseline(hf_model, workload, vocab, progress)
    progress("Done", 1.0)
    return ComparisonResult(workload, config, runs, single_stream, hf, environment)


def _single_streams(session: BenchSession, runners: dict[str, Callable], into: dict[str, list[RunStats]],
                    workload: Workload, vocab: int, sampling: SamplingSettings, rep: int) -> None:
    """Single-request runs of every path on one prompt, seconds apart; the order rotates from one
    sample to the next (a b d, b d a, ...), as the repeats do."""
    keys = tuple(runners)
    for sample in range(workload.single_stream_samples):
        one = random_prompts(1, workload.prompt_len, vocab, seed=1000 + rep * 100 + sample)
        shift = (rep + sample) % len(keys)
        for key in keys[shift:] + keys[:shift]:
            into[key].append(runners[key](session, one, sampling))


def median_rate(runs: list[RunStats]) -> float:
    return statistics.median(r.tokens_per_s for r in runs) if runs else 0.0


def single_stream_rate(run: RunStats) -> float:
    """A single-request run's decode speed on the client's clock (see ``gap_tokens_per_s``)."""
    return gap_tokens_per_s(run.itl_s)


def _run_without_snapshots(session, prompts, sampling) -> RunStats:
    return run_workbench_timed(session, prompts, sampling, snapshot_interval_s=float("inf"))


def _run_plain_tracked(session, prompts, sampling) -> RunStats:
    return run_plain_timed(session, prompts, sampling, tracked=True)


# What ``bench loop --variants`` can run, all on one engine, alternating. The extra two attribute a
# gap between (a) and (b): the loop without snapshots, and plain stepping with the block tracking in.
VARIANTS = {
    "a": ("plain", run_plain_timed),
    "b": ("workbench", run_workbench_timed),
    "b-nosnap": ("workbench, no snapshots", _run_without_snapshots),
    "a-tracked": ("plain, tracked blocks", _run_plain_tracked),
}


def compare_throughput(config: EngineConfig, num_requests: int, prompt_len: int, output_len: int,
                       repeats: int, vocab: int, variants: tuple[str, ...] = ("a", "b")) -> dict[str, list[RunStats]]:
    """Variants (default (a) and (b)) on one engine, rotating ``repeats`` times."""
    sampling = SamplingSettings(temperature=0.0, max_tokens=output_len, ignore_eos=True)
    session = start_session(config)
    results: dict[str, list[RunStats]] = {key: [] for key in variants}
    try:
        _warm_up(session, {key: VARIANTS[key][1] for key in variants}, num_requests, prompt_len, vocab, sampling)
        for rep, offset, key in _rotation(variants, repeats):
            prompts = random_prompts(num_requests, prompt_len, vocab, seed=rep * 10 + offset + 1)
            results[key].append(VARIANTS[key][1](session, prompts, sampling))
    finally:
        session.shutdown()
    return results
