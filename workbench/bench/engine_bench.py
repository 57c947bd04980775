"""Benchmarks of the engine layer, headless: snapshot cost and the loop's throughput against plain vLLM.

Both run without Qt, so they run on the GPU machine too.
"""
from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass, replace

from workbench.engine.backend import ChatRequest, SamplingSettings
from workbench.engine.loop import EngineLoop, Submit
from workbench.engine.session import EngineConfig, EngineSession


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))] if ordered else float("nan")


def random_prompts(num: int, length: int, vocab: int, seed: int) -> list[list[int]]:
    """Distinct random prompts (no prefix-cache hits between runs); ids avoid the specials at the top."""
    rng = random.Random(seed)
    return [[rng.randrange(10, vocab - 10) for _ in range(length)] for _ in range(num)]


def start_session(config: EngineConfig) -> EngineSession:
    session = EngineSession(config)
    session.start(lambda progress: print(f"  {progress.label}", flush=True))
    return session


# ------------------------------------------------------------------ snapshot cost

@dataclass(frozen=True)
class SnapshotCost:
    num_blocks: int
    num_running: int
    num_samples: int
    engine_ms_p50: float
    engine_ms_p99: float
    round_trip_ms_p50: float
    round_trip_ms_p99: float
    changed_blocks_p50: float
    resync_ms: float
    full_scan_ms: float
    tracking: str


def measure_snapshot_cost(config: EngineConfig, num_running: int, prompt_len: int, num_samples: int,
                          vocab: int) -> SnapshotCost:
    session = start_session(config)
    try:
        sampling = SamplingSettings(max_tokens=100_000, ignore_eos=True, temperature=0.0)
        limit = config.max_model_len - prompt_len - 1
        sampling = replace(sampling, max_tokens=limit)
        for i, prompt in enumerate(random_prompts(num_running, prompt_len, vocab, seed=7)):
            session.submit(ChatRequest(f"s{i}", (), sampling, prompt_token_ids=tuple(prompt)))
        started = time.perf_counter()
        session.kv_snapshot()  # the first call is a full resync and installs tracking
        resync_ms = (time.perf_counter() - started) * 1e3
        engine_ms, round_trip_ms, changed = [], [], []
        while len(engine_ms) < num_samples and session.has_work():
            session.step()
            snap = session.kv_snapshot()
            engine_ms.append(snap.engine_ms)
            round_trip_ms.append(snap.round_trip_ms)
            changed.append(len(session.mirror.last["ids"]) // 4)
        running = len(session.mirror.tables)
        started = time.perf_counter()
        session.engine.engine_core.call_utility("workbench_kv_scan")
        full_scan_ms = (time.perf_counter() - started) * 1e3
        return SnapshotCost(
            num_blocks=len(session.mirror.states), num_running=running, num_samples=len(engine_ms),
            engine_ms_p50=statistics.median(engine_ms), engine_ms_p99=percentile(engine_ms, 99),
            round_trip_ms_p50=statistics.median(round_trip_ms), round_trip_ms_p99=percentile(round_trip_ms, 99),
            changed_blocks_p50=statistics.median(changed), resync_ms=resync_ms, full_scan_ms=full_scan_ms,
            tracking=session.mirror.last.get("tracking", "?"),
        )
    finally:
        session.shutdown()


# ------------------------------------------------------------------ throughput: loop vs plain vLLM

@dataclass(frozen=True)
class RunResult:
    kind: str  # "plain" or "workbench"
    output_tokens: int
    elapsed_s: float

    @property
    def tokens_per_s(self) -> float:
        return self.output_tokens / self.elapsed_s


def run_plain(session: EngineSession, prompts: list[list[int]], sampling: SamplingSettings) -> RunResult:
    """Plain vLLM: ``LLMEngine.add_request`` and ``step()`` in a tight loop, same sampling params."""
    from vllm import SamplingParams
    from vllm.sampling_params import RequestOutputKind

    engine = session.engine
    params = SamplingParams(temperature=sampling.temperature, max_tokens=sampling.max_tokens,
                            ignore_eos=sampling.ignore_eos, output_kind=RequestOutputKind.DELTA,
                            detokenize=session.tokenizer is not None)
    started = time.perf_counter()
    for i, prompt in enumerate(prompts):
        engine.add_request(f"plain-{started}-{i}", {"prompt_token_ids": prompt}, params)
    num_tokens = 0
    while engine.has_unfinished_requests():
        for out in engine.step():
            num_tokens += len(out.outputs[0].token_ids)
    return RunResult("plain", num_tokens, time.perf_counter() - started)


class _CountingListener:
    def __init__(self):
        self.finished = 0
        self.output_tokens = 0
        self.snapshots = 0
        self.text_chars = 0

    def engine_state_changed(self, state, message): pass
    def start_progressed(self, progress): pass
    def engine_ready(self, info): pass
    def request_failed(self, request_id, message): self.finished += 1

    def text_flushed(self, chunks):
        self.text_chars += sum(len(t) for t in chunks.values())

    def request_finished(self, event):
        self.finished += 1
        self.output_tokens += event.figures.output_tokens if event.figures else 0

    def snapshot_published(self, snapshot):
        self.snapshots += 1


def run_workbench(session: EngineSession, prompts: list[list[int]], sampling: SamplingSettings) -> RunResult:
    """The workbench's loop exactly as the GUI drives it: commands, 50 ms text flushes, 10 Hz snapshots."""
    listener = _CountingListener()
    loop = EngineLoop(listener)
    loop.adopt(session)
    started = time.perf_counter()
    tag = f"{started}"
    for i, prompt in enumerate(prompts):
        loop.post(Submit(ChatRequest(f"wb-{tag}-{i}", (), sampling, prompt_token_ids=tuple(prompt))))
    loop.run_until(lambda: listener.finished >= len(prompts))
    elapsed = time.perf_counter() - started
    return RunResult("workbench", listener.output_tokens, elapsed)


def compare_throughput(config: EngineConfig, num_requests: int, prompt_len: int, output_len: int,
                       repeats: int, vocab: int) -> dict[str, list[RunResult]]:
    """Two engines with identical arguments; runs alternate plain / workbench ``repeats`` times."""
    sampling = SamplingSettings(temperature=0.0, max_tokens=output_len, ignore_eos=True)
    plain_session = start_session(config)
    workbench_session = start_session(config)
    results: dict[str, list[RunResult]] = {"plain": [], "workbench": []}
    try:
        warm = random_prompts(min(4, num_requests), prompt_len, vocab, seed=999)
        run_plain(plain_session, warm, sampling)
        run_workbench(workbench_session, warm, sampling)
        for rep in range(repeats):
            order = (("plain", plain_session, run_plain), ("workbench", workbench_session, run_workbench))
            for offset, (kind, session, runner) in enumerate(order if rep % 2 == 0 else order[::-1]):
                prompts = random_prompts(num_requests, prompt_len, vocab, seed=rep * 10 + offset + 1)
                results[kind].append(runner(session, prompts, sampling))
    finally:
        plain_session.shutdown()
        workbench_session.shutdown()
    return results
