"""GPU memory through NVML (pynvml, package nvidia-ml-py); None where there is no NVIDIA driver."""
from __future__ import annotations

from contextlib import contextmanager
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


@contextmanager
def _nvml():
    """pynvml, initialised for the block and shut down after it; None where there is no NVIDIA driver."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # NVMLError_LibraryNotFound and friends: no NVIDIA driver here
        yield None
        return
    try:
        yield pynvml
    finally:
        pynvml.nvmlShutdown()


def _handles(pynvml):
    return [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]


def read_gpu_memory() -> list[GpuMemory] | None:
    with _nvml() as pynvml:
        if pynvml is None:
            return None
        found = []
        for index, handle in enumerate(_handles(pynvml)):
            info = _memory_info(pynvml, handle)
            name = pynvml.nvmlDeviceGetName(handle)
            found.append(GpuMemory(index, name.decode() if isinstance(name, bytes) else name, info.used, info.total))
        return found


def gpu_memory_by_pid() -> dict[int, int] | None:
    """GPU memory of each compute process, summed over GPUs; None where NVML cannot tell (no
    driver, or a driver or container that hides per-process figures)."""
    with _nvml() as pynvml:
        if pynvml is None:
            return None
        used: dict[int, int] = {}
        try:
            for handle in _handles(pynvml):
                for proc in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
                    if proc.usedGpuMemory is not None:
                        used[proc.pid] = used.get(proc.pid, 0) + proc.usedGpuMemory
        except Exception:
            return None
        return used


def process_gpu_memory(pids: list[int]) -> int | None:
    """GPU memory used by the processes ``pids``; None where NVML gives no figure for any of them."""
    used = gpu_memory_by_pid() or {}
    matched = [used[pid] for pid in pids if pid in used]
    return sum(matched) if matched else None
