"""Memory figures for the benchmarks: GPU memory through NVML, else resident memory of processes."""
from __future__ import annotations

import psutil

from workbench.telemetry.gpu_memory import read_gpu_memory


def engine_memory_bytes(pids: list[int]) -> int:
    """GPU memory in use on a GPU machine; on CPU, resident memory of the engine's processes."""
    gpus = read_gpu_memory()
    if gpus:
        return sum(g.used_bytes for g in gpus)
    total = 0
    for pid in pids:
        try:
            total += psutil.Process(pid).memory_info().rss
        except psutil.Error:
            continue
    return total
