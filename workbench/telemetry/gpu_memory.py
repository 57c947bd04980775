"""GPU memory through NVML (pynvml, package nvidia-ml-py), over one NVML session per process.

:func:`gpu_telemetry` gives the process's :class:`GpuTelemetry`. NVML is initialised on its first
read and stays open until :meth:`GpuTelemetry.close` (run at exit), so a panel that reads every
second pays for no init and shutdown. Where there is no NVIDIA driver (``NVMLError_LibraryNotFound``)
or NVML fails, a read returns None and ``unavailable`` says why: nothing here raises into callers.
No Qt.
"""
from __future__ import annotations

import atexit
import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class GpuMemory:
    index: int
    name: str
    used_bytes: int
    total_bytes: int


def _import_pynvml():
    import pynvml

    return pynvml


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


class GpuTelemetry:
    """GPU memory per device and per process, read over one NVML session. Thread-safe."""

    def __init__(self, load_nvml=_import_pynvml):
        self._load_nvml = load_nvml
        self._lock = threading.Lock()
        self._nvml = None
        self._handles: list = []
        self._failed_to_open = False
        self.unavailable: str | None = None  # why the last read gave nothing; None after one that worked

    def _open(self):
        """pynvml with NVML initialised, once per session; None where NVML cannot be used."""
        if self._nvml is None and not self._failed_to_open:
            try:
                nvml = self._load_nvml()
                nvml.nvmlInit()
            except Exception as exc:  # NVMLError_LibraryNotFound and friends: no NVIDIA driver here
                self._failed_to_open = True
                self.unavailable = f"NVML is not available: {type(exc).__name__}: {exc}"
                return None
            self._nvml = nvml
            try:
                self._handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
            except Exception as exc:
                self._close_locked()
                self._failed_to_open = True
                self.unavailable = f"NVML lists no GPUs: {type(exc).__name__}: {exc}"
                return None
        return self._nvml

    def _read(self, what: str, read):
        """``read(pynvml)`` under the lock; None (with the reason kept) where it cannot be had."""
        with self._lock:
            nvml = self._open()
            if nvml is None:
                return None
            try:
                value = read(nvml)
            except Exception as exc:
                self.unavailable = f"NVML gave no {what}: {type(exc).__name__}: {exc}"
                return None
            self.unavailable = None
            return value

    def read_devices(self) -> tuple[GpuMemory, ...] | None:
        """Memory used and total of each GPU; None where NVML cannot tell."""
        def read(nvml):
            found = []
            for index, handle in enumerate(self._handles):
                info = _memory_info(nvml, handle)
                name = nvml.nvmlDeviceGetName(handle)
                found.append(GpuMemory(index, name.decode() if isinstance(name, bytes) else name,
                                       info.used, info.total))
            return tuple(found)

        return self._read("device memory", read)

    def memory_by_pid(self) -> dict[int, int] | None:
        """GPU memory of each compute process, summed over GPUs; None where NVML cannot tell (no
        driver, or a driver or container that hides per-process figures)."""
        def read(nvml):
            used: dict[int, int] = {}
            for handle in self._handles:
                for proc in nvml.nvmlDeviceGetComputeRunningProcesses(handle):
                    if proc.usedGpuMemory is not None:
                        used[proc.pid] = used.get(proc.pid, 0) + proc.usedGpuMemory
            return used

        return self._read("per-process memory", read)

    def memory_by_gpu_and_pid(self) -> dict[tuple[int, int], int] | None:
        """GPU memory of each compute process on each GPU, by (GPU index, pid): the figures per GPU per
        process that tensor parallelism spreads over several GPUs; None where NVML cannot tell."""
        def read(nvml):
            used: dict[tuple[int, int], int] = {}
            for index, handle in enumerate(self._handles):
                for proc in nvml.nvmlDeviceGetComputeRunningProcesses(handle):
                    if proc.usedGpuMemory is not None:
                        used[(index, proc.pid)] = used.get((index, proc.pid), 0) + proc.usedGpuMemory
            return used

        return self._read("per-process memory", read)

    def process_memory(self, pids: list[int]) -> int | None:
        """GPU memory used by the processes ``pids``; None where NVML gives no figure for any of them."""
        used = self.memory_by_pid() or {}
        matched = [used[pid] for pid in pids if pid in used]
        return sum(matched) if matched else None

    def close(self) -> None:
        """Shuts the NVML session down; a later read opens a new one. Safe to call twice."""
        with self._lock:
            self._close_locked()
            self._failed_to_open = False

    def _close_locked(self) -> None:
        nvml, self._nvml, self._handles = self._nvml, None, []
        if nvml is not None:
            try:
                nvml.nvmlShutdown()
            except Exception:  # shutting down a session the driver already dropped
                pass


_telemetry: GpuTelemetry | None = None
_telemetry_lock = threading.Lock()


def gpu_telemetry() -> GpuTelemetry:
    """The process's one :class:`GpuTelemetry`; its NVML session is shut down at exit."""
    global _telemetry
    with _telemetry_lock:
        if _telemetry is None:
            _telemetry = GpuTelemetry()
            atexit.register(_telemetry.close)
        return _telemetry
