"""Benchmarks of the engine layer, headless: the cost of a KV snapshot, and shared helpers.

Both run without Qt, so they run on the GPU machine too. :class:`BenchSession` holds what the
benchmarks need of an engine session and the product does not.
"""
from __future__ import annotations

import random
import statistics
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from workbench.engine.backend import ChatRequest, wait_for_snapshot
from workbench.engine.metrics import percentile
from workbench.engine.sampling import SamplingSettings
from workbench.engine.session import EngineSession
from workbench.engine.spec import EngineConfig


def random_prompts(num: int, length: int, vocab: int, seed: int) -> list[list[int]]:
    """Distinct random prompts (no prefix-cache hits between runs); ids avoid the specials at the top."""
    rng = random.Random(seed)
    return [[rng.randrange(10, vocab - 10) for _ in range(length)] for _ in range(num)]


Arrivals = dict[str, list[tuple[float, int]]]  # request id -> (arrival time, new tokens), in order


def record_arrivals(outputs, arrived: float, into: Arrivals) -> int:
    """Notes ``(arrived, new tokens)`` for each DELTA output that brought tokens; returns their sum.
    Both benchmark paths record with this, so they pay the same for it."""
    total = 0
    for out in outputs:
        if out.outputs:
            count = len(out.outputs[0].token_ids)
            if count:
                into.setdefault(out.request_id, []).append((arrived, count))
                total += count
    return total


class BenchSession(EngineSession):
    """The engine session plus two things only the benchmarks use: the arrival time of every
    request's new tokens (on the client's clock, while :meth:`recording_arrivals` is open), and
    taking the KV plugin's block tracking out of the engine so that it runs as vLLM ships."""

    def __init__(self, config: EngineConfig):
        super().__init__(config)
        self._arrivals: Arrivals | None = None

    def step(self):
        if self._arrivals is None:
            return super().step()
        now = time.monotonic()
        outputs = self.engine.step()
        record_arrivals(outputs, time.perf_counter(), self._arrivals)
        return self._stream_events(outputs, now)

    @contextmanager
    def recording_arrivals(self) -> Iterator[Arrivals]:
        """Arrivals of the steps taken inside the block, per request."""
        self._arrivals = arrivals = {}
        try:
            yield arrivals
        finally:
            self._arrivals = None

    def stop_kv_tracking(self) -> None:
        """Puts vLLM's block class back as it was; the next snapshot resyncs (and tracks again)."""
        self.probe.reset()
        self.engine.engine_core.call_utility("workbench_kv_untrack")


def start_session(config: EngineConfig) -> BenchSession:
    session = BenchSession(config)
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
    engine_cpu_ms_p50: float
    engine_cpu_ms_p99: float
    round_trip_ms_p50: float
    round_trip_ms_p99: float
    client_ms_p50: float
    client_ms_p99: float
    changed_blocks_p50: float
    resync_ms: float
    full_scan_ms: float
    tracking: str


def measure_snapshot_cost(config: EngineConfig, num_running: int, prompt_len: int, num_samples: int,
                          vocab: int) -> SnapshotCost:
    session = start_session(config)
    try:
        sampling = SamplingSettings(max_tokens=config.max_model_len - prompt_len - 1, ignore_eos=True,
                                    temperature=0.0)
        for i, prompt in enumerate(random_prompts(num_running, prompt_len, vocab, seed=7)):
            session.submit(ChatRequest(f"s{i}", (), sampling, prompt_token_ids=tuple(prompt)))
        started = time.perf_counter()
        wait_for_snapshot(session.probe)  # the first call is a full resync and installs tracking
        resync_ms = (time.perf_counter() - started) * 1e3
        engine_ms, engine_cpu_ms, round_trip_ms, client_ms, changed = [], [], [], [], []
        while len(engine_ms) < num_samples and session.has_work():
            session.step()
            snap = wait_for_snapshot(session.probe)
            engine_ms.append(snap.engine_ms)
            engine_cpu_ms.append(snap.engine_cpu_ms)
            round_trip_ms.append(snap.round_trip_ms)
            client_ms.append(snap.client_ms)
            changed.append(len(session.probe.mirror.last["ids"]) // 4)
        running = len(session.probe.mirror.tables)
        started = time.perf_counter()
        session.engine.engine_core.call_utility("workbench_kv_scan")
        full_scan_ms = (time.perf_counter() - started) * 1e3
        return SnapshotCost(
            num_blocks=len(session.probe.mirror.states), num_running=running, num_samples=len(engine_ms),
            engine_ms_p50=statistics.median(engine_ms), engine_ms_p99=percentile(engine_ms, 99),
            engine_cpu_ms_p50=statistics.median(engine_cpu_ms), engine_cpu_ms_p99=percentile(engine_cpu_ms, 99),
            round_trip_ms_p50=statistics.median(round_trip_ms), round_trip_ms_p99=percentile(round_trip_ms, 99),
            client_ms_p50=statistics.median(client_ms), client_ms_p99=percentile(client_ms, 99),
            changed_blocks_p50=statistics.median(changed), resync_ms=resync_ms, full_scan_ms=full_scan_ms,
            tracking=session.probe.mirror.last.get("tracking", "?"),
        )
    finally:
        session.shutdown()
