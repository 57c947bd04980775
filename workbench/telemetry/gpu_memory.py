"""GPU memory through NVML (pynvml, package nvidia-ml-py); None where there is no NVIDIA driver."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuMemory:
    index: int
    name: str
    used_bytes: int
    total_bytes: int


def _memory_info(pynvml, handle):
    """NVML's v2 figures where the driver has them: ``used`` then leaves out the driver's reserved
    memory, as nvidia-smi does (v1 counted it: 615 MiB 'used' on an idle H200 that nvidia-smi
    showed at 0 MiB)."""
    version = getattr(pynvml, "nvmlMemory_v2", None)
    if version is not None:
        try:
            return pynvml.nvmlDeviceGetMemoryInfo(handle, version=version)
        except Exception:  # an older driver: v1 only
            pass
    return pynvml.nvmlDeviceGetMemoryInfo(handle)


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
            info = _memory_info(pynvml, handle)
            name = pynvml.nvmlDeviceGetName(handle)
            found.append(GpuMemory(index, name.decode() if isinstance(name, bytes) else name, info.used, info.total))
        return found
    finally:
        pynvml.nvmlShutdown()


def process_gpu_memory(pids: list[int]) -> int | None:
    """GPU memory used by the processes ``pids`` on all GPUs; None where NVML cannot tell (no
    driver, or a driver or container that hides per-process figures)."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return None
    wanted, total, matched = set(pids), 0, False
    try:
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            for proc in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
                if proc.pid in wanted and proc.usedGpuMemory is not None:
                    total += proc.usedGpuMemory
                    matched = True
    except Exception:
        return None
    finally:
        pynvml.nvmlShutdown()
    return total if matched else None
