"""This machine as the presets see it: CPU or CUDA, the number of GPUs, memory. No vLLM import."""
from __future__ import annotations

import os
from dataclasses import dataclass

import psutil


@dataclass(frozen=True)
class Machine:
    platform: str  # "cpu" or "cuda"
    num_gpus: int
    gpu_total_bytes: int  # of the first GPU (0 on CPU)
    gpu_free_bytes: int
    host_total_bytes: int
    visible_devices: str | None = None  # CUDA_VISIBLE_DEVICES of this process, when set

    @property
    def num_usable_gpus(self) -> int:
        """The GPUs vLLM can use from this process: CUDA_VISIBLE_DEVICES narrows what NVML counts."""
        if self.visible_devices is None:
            return self.num_gpus
        return min(self.num_gpus, count_devices(self.visible_devices))

    @property
    def on_cpu(self) -> bool:
        return self.platform == "cpu"


def count_devices(visible_devices: str) -> int:
    """How many GPUs a CUDA_VISIBLE_DEVICES value names ("0,1" -> 2; "" -> 0)."""
    return len([d for d in visible_devices.split(",") if d.strip()])


def this_machine() -> Machine:
    """NVML's GPUs where there are some (vLLM's CUDA build then runs on them), else the CPU build."""
    from workbench.telemetry.gpu_memory import gpu_telemetry

    gpus = gpu_telemetry().read_devices() or ()
    host = psutil.virtual_memory().total
    if not gpus:
        return Machine("cpu", 0, 0, 0, host)
    first = gpus[0]
    return Machine("cuda", len(gpus), first.total_bytes, first.total_bytes - first.used_bytes, host,
                   os.environ.get("CUDA_VISIBLE_DEVICES"))
