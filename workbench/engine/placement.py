"""Where vLLM's engine-core process runs on a CPU-only machine with one core to spare.

vLLM's CPU build binds each model worker's OpenMP threads to cores of their own and leaves the rest
to the engine core's scheduler ("reserved" cores). The scheduler waits for its worker by spinning on
a shared-memory queue with ``sched_yield``, so it is always runnable, and it notices the worker's
result only when the core is its turn. The window and vLLM's client loop run on the reserved cores
too. Where one core is left and each worker has a single core, the three take turns on that one core
while the worker's core idles between steps: the scheduler is late at every step.

There the engine core moves onto the workers' cores. A single-threaded worker and the scheduler never
run at once (the scheduler waits for the step that the worker computes, the worker for the next
schedule), so they share without slowing each other, and the spare core is left to the app. On a
machine with more cores nothing is moved.
"""
from __future__ import annotations

import os
from collections.abc import Iterable

OFF_ENV = "WORKBENCH_ENGINE_CORE_PLACEMENT"  # "off": leave the engine core where vLLM put it


def cores_for_engine_core(worker_cores: list[set[int]], available: set[int]) -> set[int] | None:
    """The cores for the engine core's process, or None to leave it where it is.

    ``worker_cores``: each model worker's CPU affinity; ``available``: the cores this process may use."""
    if not worker_cores or any(len(cores) != 1 for cores in worker_cores):
        return None  # no bound workers, or multi-threaded ones (their OpenMP threads spin between steps)
    shared = set().union(*worker_cores)
    if len(shared) != len(worker_cores) or len(available - shared) > 1:
        return None  # workers on one core together, or cores enough for the scheduler and the app
    return shared


def place_engine_core(engine_pids: Iterable[int], worker_pids: Iterable[int]) -> tuple[int, ...]:
    """Moves every thread of the engine processes that are not workers onto the workers' cores when
    :func:`cores_for_engine_core` says so; the cores used, or () where nothing moved."""
    if os.environ.get(OFF_ENV, "").lower() == "off":
        return ()
    workers = set(worker_pids)
    others = [pid for pid in engine_pids if pid not in workers]
    try:
        cores = cores_for_engine_core([set(os.sched_getaffinity(pid)) for pid in workers],
                                      set(os.sched_getaffinity(0)))
    except OSError:  # a worker gone already: the start fails on its own terms
        return ()
    if cores is None or not others:
        return ()
    moved = False
    for pid in others:
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in threads:
            try:
                os.sched_setaffinity(int(tid), cores)
                moved = True
            except OSError:  # a thread that ended meanwhile
                pass
    return tuple(sorted(cores)) if moved else ()
