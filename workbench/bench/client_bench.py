"""The benchmarks' shared engine when vLLM's client loop runs in the engine-client process.

With the process client the engine lives in the client, so the paths that step it directly ((a), and
(b)) run there too, on the engine the client holds, between (d) runs of the window on the same engine.
The functions below run in the client (sent as ``client_wire.CallInClient``, on its loop's thread);
:class:`ClientBenchSession` is their face in the benchmark's process, standing where a
:class:`~workbench.bench.engine_bench.BenchSession` stands in ``compare.run_comparison``. No Qt here:
the host it talks to is handed in.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import psutil

from workbench.bench.compare import VARIANTS, RunStats, set_tracking
from workbench.bench.engine_bench import BenchSession, start_session
from workbench.engine.backend import ChatRequest
from workbench.engine.sampling import SamplingSettings
from workbench.engine.spec import EngineConfig


# ------------------------------------------------------------------ run in the client, on its loop's thread
def open_session(loop, config: EngineConfig) -> dict:
    session = start_session(config)
    loop.bench_session = session
    loop.on_exit.append(session.shutdown)  # the window's close ends the client: the engine goes with it
    return {"engine_pids": list(session.engine_pids), "vllm_version": session.vllm_version,
            "on_cpu": session.on_cpu, "engine_core_cores": session.engine_core_cores}


def _session(loop) -> BenchSession:
    loop._release_engine()  # (a) and (b) step the engine themselves: the loop lets go of it first
    return loop.bench_session


def run_path(loop, key: str, prompts: list[list[int]], sampling: SamplingSettings) -> RunStats:
    """(a) or (b) as ``compare`` runs them, here, where the engine is."""
    return VARIANTS[key][1](_session(loop), prompts, sampling)


def adopt_for_app(loop, start_id: int) -> None:
    """The window's turn: tracking and the stat logger in, and the client's loop drives the engine."""
    session = _session(loop)
    set_tracking(session, True)
    session.set_stats_logging(True)
    loop._adopt_engine(session, start_id)


def start_recording(loop) -> None:
    loop.bench_recording = loop.bench_session.recording_arrivals()
    loop.bench_recording.__enter__()


def stop_recording(loop) -> dict:
    arrivals = loop.bench_session._arrivals
    loop.bench_recording.__exit__(None, None, None)
    return arrivals


def prompt_token_ids(loop, request: ChatRequest) -> list[int]:
    return list(loop.bench_session.render_prompt(request))


def backend_capabilities(loop):
    """What the client's running backend declares (tests: a server's backend has no physical blocks)."""
    return loop.backend.capabilities if loop.backend is not None else None


def close_session(loop) -> None:
    session = _session(loop)
    loop.on_exit.remove(session.shutdown)
    session.shutdown()


# ------------------------------------------------------------------ in the benchmark's process
class ClientBenchSession:
    """The client's benchmark engine, seen from the benchmark's process (the window's)."""

    def __init__(self, host, config: EngineConfig):
        self.host, self.config = host, config
        facts = host.call(open_session, config, timeout_s=1800.0)
        self.engine_pids: list[int] = facts["engine_pids"]
        self.vllm_version, self.on_cpu = facts["vllm_version"], facts["on_cpu"]
        self.engine_core_cores: tuple[int, ...] = tuple(facts["engine_core_cores"])

    @property
    def client_pids(self) -> list[int]:
        """The process that runs vLLM's client loop: its CPU counts as the client's."""
        return [self.host.client_pid]

    def render_prompt(self, request: ChatRequest) -> list[int]:
        return self.host.call(prompt_token_ids, request)

    def post_adopt(self, start_id: int) -> int:
        return self.host.post_call(adopt_for_app, start_id)

    @contextmanager
    def recording_arrivals(self) -> Iterator[dict]:
        arrivals: dict = {}
        self.host.call(start_recording)
        try:
            yield arrivals
        finally:
            arrivals.update(self.host.call(stop_recording))

    def shutdown(self) -> None:
        if self.host.client_pid is not None and psutil.pid_exists(self.host.client_pid):
            try:
                self.host.call(close_session, timeout_s=120.0)
            except (RuntimeError, TimeoutError):  # the window has closed, and the client with it
                pass


class InClientPath:
    """(a) or (b) on the client's engine: a ``compare.SessionPath`` for ``run_comparison``."""

    def __init__(self, key: str):
        self.key = key

    def __call__(self, session: ClientBenchSession, prompts: list[list[int]], sampling: SamplingSettings) -> RunStats:
        return session.host.call(run_path, self.key, prompts, sampling)

    def close(self) -> None:
        pass


def vllm_metrics(loop=None) -> list[tuple[str, dict, float]]:
    """vLLM's own metrics from the Prometheus registry of the process that runs ``LLMEngine`` (what
    ``LLM.get_metrics()`` reads): (name, labels, value; a histogram's count). Call it in the client
    with ``host.call(vllm_metrics)``, or directly where the loop runs in this process."""
    from vllm.v1.metrics.reader import Counter, Histogram, get_metrics_snapshot

    found = []
    for metric in get_metrics_snapshot():
        value = metric.value if isinstance(metric, Counter) else metric.count if isinstance(metric, Histogram) else None
        if value is not None:
            found.append((metric.name, dict(metric.labels), float(value)))
    return found


def in_client_paths(supplied: dict, client: str | None) -> dict:
    """``bench compare``: with the process client the shared engine lives in the window's engine-client
    process, and (a) and (b) run there, on it (added to ``supplied``); returns ``run_comparison``'s
    ``open_session`` for that case, nothing for the thread client."""
    from workbench.engine.client_wire import engine_client_kind

    if engine_client_kind(client) != "process":
        return {}
    supplied.update({key: InClientPath(key) for key in ("a", "b")})
    print("(d) runs the engine-client process; (a) and (b) step the same engine in it", flush=True)
    return {"open_session": supplied["d"].open_session}


def full_collections(loop, count: int = 5) -> dict:
    """Full collections of Python's cycle collector timed in the client between steps (ms each): as it runs, the
    objects made before its engine was ready left out, and with them let back in (then left out again)."""
    import gc
    import time

    def timed() -> list[float]:
        took = []
        for _ in range(count):
            start = time.perf_counter()
            gc.collect()
            took.append((time.perf_counter() - start) * 1e3)
        return took

    left_out, tracked = gc.get_freeze_count(), len(gc.get_objects())
    as_it_runs = timed()
    gc.unfreeze()
    all_in = timed()
    everything = len(gc.get_objects())
    gc.freeze()
    return {"left_out": left_out, "tracked": tracked, "as_it_runs_ms": as_it_runs, "all_tracked": everything,
            "all_in_ms": all_in}


_watched: dict = {}  # the engine a test watches, by a weak reference


def watch_engine(loop) -> int:
    """Watches the client's engine (vLLM's ``LLMEngine``) for its end; the objects now left out of collections."""
    import gc
    import weakref

    _watched["engine"] = weakref.ref(loop.backend.engine)
    return gc.get_freeze_count()


def watched_engine_alive(loop) -> bool:
    return _watched["engine"]() is not None


def left_out_of_collections(loop) -> int:
    import gc

    return gc.get_freeze_count()


def watch_collections(loop, all_tracked: bool) -> None:
    """Records each collection of Python's cycle collector in the client from now on (its generation, how long).
    ``all_tracked``: the objects left out once the engine was ready are let back in first, as before they were
    left out."""
    import gc
    import time

    if all_tracked:
        gc.unfreeze()
    seen, started = [], {}

    def record(phase: str, info: dict) -> None:
        if phase == "start":
            started["at"] = time.perf_counter()
        else:
            seen.append((info["generation"], (time.perf_counter() - started["at"]) * 1e3))

    _watched["collections"] = (record, seen)
    gc.callbacks.append(record)


def collections_seen(loop) -> list[tuple[int, float]]:
    """The collections recorded since :func:`watch_collections` (the recording ends); the client's objects are
    left out of collections again."""
    import gc

    record, seen = _watched.pop("collections")
    gc.callbacks.remove(record)
    gc.collect()
    gc.freeze()
    return seen
