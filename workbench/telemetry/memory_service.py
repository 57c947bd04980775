"""The telemetry service: memory of the GPUs and of the engine's processes, sampled on a thread of its own.

At most four readings a second (NVML through :class:`~workbench.telemetry.gpu_memory.GpuTelemetry`,
host memory through psutil), never on the GUI thread. Each reading is an immutable
:class:`MemoryReading`; the series over time (:data:`MEMORY_COLUMNS`) is a ring buffer published as
an immutable :class:`~workbench.engine.ring_buffer.Series`. Where NVML is missing (the CPU build) the
readings say why and carry the host memory of the engine's processes instead. No Qt; nothing here
raises into its callers.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import psutil

from workbench.engine.backend import EngineInfo, WorkerMemory
from workbench.engine.ring_buffer import EMPTY_SERIES, RingBuffer, Series
from workbench.telemetry.gpu_memory import GpuMemory, GpuTelemetry

MIN_INTERVAL_S = 0.25  # at most 4 Hz
CAPACITY = 7200  # 30 minutes at 4 Hz
# Bytes. "process" is the engine processes' GPU memory (NVML) or, without NVML, their host memory;
# weights + kv_cache + rest = process; "other" is what the rest of the GPU's users hold.
MEMORY_COLUMNS = ("t", "weights", "kv_cache", "rest", "other", "process", "gpu_used", "gpu_total")


@dataclass(frozen=True)
class ProcessMemory:
    pid: int
    name: str
    host_rss_bytes: int | None
    gpu_bytes: int | None  # NVML's figure; None without NVML or where the driver hides it
    worker: WorkerMemory | None  # vLLM's own split, where this process is a worker

    @property
    def rest_bytes(self) -> int | None:
        """GPU memory of a worker beyond its weights and KV cache (activations, CUDA context, graphs)."""
        if self.gpu_bytes is None or self.worker is None:
            return None
        return self.gpu_bytes - self.worker.weights_bytes - self.worker.kv_cache_bytes


@dataclass(frozen=True)
class MemoryReading:
    at: float  # time.monotonic()
    nvml_unavailable: str | None  # why there are no GPU figures; None when NVML answered
    gpus: tuple[GpuMemory, ...]
    processes: tuple[ProcessMemory, ...]
    kv_cache_bytes: int  # the KV space of all workers together, as vLLM allocated it
    num_blocks: int


@dataclass(frozen=True)
class MemoryState:
    """What the memory panel draws: the latest reading and the series so far."""

    latest: MemoryReading | None
    series: Series


class MemoryService:
    """Samples every ``interval_s`` (0.25 s at least) on its own daemon thread, from :meth:`start` to :meth:`stop`."""

    def __init__(self, telemetry: GpuTelemetry, interval_s: float = MIN_INTERVAL_S):
        self.telemetry = telemetry
        self.interval_s = max(MIN_INTERVAL_S, interval_s)
        self._lock = threading.Lock()
        self._info: EngineInfo | None = None
        self._client_pids: tuple[int, ...] = ()
        self._ring = RingBuffer(MEMORY_COLUMNS, CAPACITY)
        self._state = MemoryState(None, EMPTY_SERIES)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, info: EngineInfo | None, client_pids: tuple[int, ...] = ()) -> None:
        """The engine whose processes to read from now on (None: no engine), and the process that runs
        vLLM's client loop for it where that is a process of its own (the engine-client process)."""
        with self._lock:
            self._info, self._client_pids = info, (client_pids if info is not None else ())

    def latest(self) -> MemoryState:
        with self._lock:
            return self._state

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="memory-telemetry", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stop.set()
            thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            self.sample()
            if self._stop.wait(self.interval_s):
                return

    def sample(self) -> MemoryReading:
        """One reading, added to the series; callable from any thread (the service's own, or a test)."""
        with self._lock:
            info, client_pids = self._info, self._client_pids
        reading = read_memory(self.telemetry, info, client_pids)
        row = series_row(reading)
        with self._lock:
            self._ring.append(row)
            self._state = MemoryState(reading, self._ring.publish())
        return reading


CLIENT_NAME = "engine client"  # the process that runs vLLM's client loop (LLMEngine, detokenizing)


def read_memory(telemetry: GpuTelemetry, info: EngineInfo | None, client_pids: tuple[int, ...] = ()) -> MemoryReading:
    gpus = telemetry.read_devices() or ()
    by_pid = telemetry.memory_by_pid() if gpus else None
    workers = {w.pid: w for w in info.workers} if info is not None else {}
    engine_pids = tuple(info.engine_pids) if info else ()
    processes = tuple(_process_memory(pid, by_pid, workers.get(pid)) for pid in engine_pids) + tuple(
        _process_memory(pid, by_pid, None, CLIENT_NAME) for pid in client_pids if pid not in engine_pids)
    kv_bytes = sum(w.kv_cache_bytes for w in workers.values())
    return MemoryReading(time.monotonic(), telemetry.unavailable if not gpus else None, gpus, processes,
                         kv_bytes, (info.num_kv_blocks or 0) if info is not None else 0)


def _process_memory(pid: int, gpu_by_pid: dict[int, int] | None, worker: WorkerMemory | None,
                    label: str | None = None) -> ProcessMemory:
    try:
        process = psutil.Process(pid)
        name, rss = label or process.name(), process.memory_info().rss
    except psutil.Error:  # gone between the engine's report and this reading
        name, rss = "(ended)", None
    gpu = gpu_by_pid.get(pid) if gpu_by_pid is not None else None
    return ProcessMemory(pid, name, rss, gpu, worker)


def series_row(reading: MemoryReading) -> tuple[float, ...]:
    """One point of :data:`MEMORY_COLUMNS`: GPU figures with NVML, host figures without."""
    on_gpu = reading.nvml_unavailable is None
    process = sum((p.gpu_bytes if on_gpu else p.host_rss_bytes) or 0 for p in reading.processes)
    weights = sum(p.worker.weights_bytes for p in reading.processes if p.worker is not None)
    kv_cache = reading.kv_cache_bytes
    rest = max(0, process - weights - kv_cache)
    gpu_used = sum(g.used_bytes for g in reading.gpus) if on_gpu else float("nan")
    gpu_total = sum(g.total_bytes for g in reading.gpus) if on_gpu else float("nan")
    other = max(0, gpu_used - process) if on_gpu else float("nan")
    return reading.at, weights, kv_cache, rest, other, process, gpu_used, gpu_total
