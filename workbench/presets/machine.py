"""This machine as the presets see it: CPU or CUDA, the number of GPUs, memory. No vLLM import."""
from __future__ import annotations

from dataclasses import dataclass

import psutil


@dataclass(frozen=True)
class Machine:
    platform: str  # "cpu" or "cuda"
    num_gpus: int
    gpu_total_bytes: int  # of the first GPU (0 on CPU)
    gpu_free_bytes: int
    host_total_bytes: int

    @property
    def on_cpu(self) -> bool:
        return self.platform == "cpu"


def this_machine() -> Machine:
    """NVML's GPUs where there are some (vLLM's CUDA build then runs on them), else the CPU build."""
    from workbench.telemetry.gpu_memory import gpu_telemetry

    gpus = gpu_telemetry().read_devices() or ()
    host = psutil.virtual_memory().total
    if not gpus:
        return Machine("cpu", 0, 0, 0, host)
    first = gpus[0]
    return Machine("cuda", len(gpus), first.total_bytes, first.total_bytes - first.used_bytes, host)
