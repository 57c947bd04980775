"""GPU memory through NVML (pynvml, package nvidia-ml-py); None where there is no NVIDIA driver."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuMemory:
    index: int
    name: str
    used_bytes: int
    total_bytes: int


def read_gpu_memory() -> list[GpuMemory] | None:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # NVMLError_LibraryNotFound and friends: no NVIDIA driver here
        return None
    try:
        found = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            info = pynvml.nvmlDeviceGetMemoryInfo(handle)
            name = pynvml.nvmlDeviceGetName(handle)
            found.append(GpuMemory(index, name.decode() if isinstance(name, bytes) else name, info.used, info.total))
        return found
    finally:
        pynvml.nvmlShutdown()
