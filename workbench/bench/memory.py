"""Memory figures for the benchmarks: the engine's own GPU memory where NVML tells it per process,
else the whole GPU's, else (CPU) the resident memory of the engine's processes."""
from __future__ import annotations

import psutil

from workbench.telemetry.gpu_memory import gpu_telemetry

SCOPE_PROCESS_GPU = "GPU memory of the engine's processes (NVML)"
SCOPE_DEVICE_GPU = "GPU memory in use on the whole device (NVML gave no per-process figure)"
SCOPE_RSS = "resident memory of the engine's processes"


def engine_memory(pids: list[int]) -> tuple[int, str]:
    """Bytes, and what they cover (one of the SCOPE_* texts)."""
    telemetry = gpu_telemetry()
    own = telemetry.process_memory(pids)
    if own:
        return own, SCOPE_PROCESS_GPU
    gpus = telemetry.read_devices()
    if gpus:
        return sum(g.used_bytes for g in gpus), SCOPE_DEVICE_GPU
    total = 0
    for pid in pids:
        try:
            total += psutil.Process(pid).memory_info().rss
        except psutil.Error:
            continue
    return total, SCOPE_RSS
