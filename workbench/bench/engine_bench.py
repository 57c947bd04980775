"""Benchmarks of the engine layer, headless: the cost of a KV snapshot, and shared helpers.

Both run without Qt, so they run on the GPU machine too.
"""
from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass

from workbench.engine.backend import ChatRequest
from workbench.engine.metrics import percentile
from workbench.engine.sampling import SamplingSettings
from workbench.engine.session import EngineConfig, EngineSession


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
        session.kv_snapshot()  # the first call is a full resync and installs tracking
        resync_ms = (time.perf_counter() - started) * 1e3
        engine_ms, engine_cpu_ms, round_trip_ms, client_ms, changed = [], [], [], [], []
        while len(engine_ms) < num_samples and session.has_work():
            session.step()
            snap = session.kv_snapshot()
            engine_ms.append(snap.engine_ms)
            engine_cpu_ms.append(snap.engine_cpu_ms)
            round_trip_ms.append(snap.round_trip_ms)
            client_ms.append(snap.client_ms)
            changed.append(len(session.mirror.last["ids"]) // 4)
        running = len(session.mirror.tables)
        started = time.perf_counter()
        session.engine.engine_core.call_utility("workbench_kv_scan")
        full_scan_ms = (time.perf_counter() - started) * 1e3
        return SnapshotCost(
            num_blocks=len(session.mirror.states), num_running=running, num_samples=len(engine_ms),
            engine_ms_p50=statistics.median(engine_ms), engine_ms_p99=percentile(engine_ms, 99),
            engine_cpu_ms_p50=statistics.median(engine_cpu_ms), engine_cpu_ms_p99=percentile(engine_cpu_ms, 99),
            round_trip_ms_p50=statistics.median(round_trip_ms), round_trip_ms_p99=percentile(round_trip_ms, 99),
            client_ms_p50=statistics.median(client_ms), client_ms_p99=percentile(client_ms, 99),
            changed_blocks_p50=statistics.median(changed), resync_ms=resync_ms, full_scan_ms=full_scan_ms,
            tracking=session.mirror.last.get("tracking", "?"),
        )
    finally:
        session.shutdown()
