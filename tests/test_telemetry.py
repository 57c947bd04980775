"""GPU memory telemetry: one NVML session, opened once and closed once; never an exception for callers."""
from __future__ import annotations

from types import SimpleNamespace

from workbench.telemetry.gpu_memory import GpuMemory, GpuTelemetry, gpu_telemetry


class FakeNvml:
    """Two GPUs as pynvml shows them; counts the calls that open and close a session."""

    nvmlMemory_v2 = 2

    def __init__(self):
        self.inits = self.shutdowns = 0
        self.broken = False

    def nvmlInit(self):
        self.inits += 1

    def nvmlShutdown(self):
        self.shutdowns += 1

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, index):
        return index

    def nvmlDeviceGetName(self, handle):
        return b"Fake GPU"

    def nvmlDeviceGetMemoryInfo(self, handle, version=None):
        if self.broken:
            raise RuntimeError("GPU is lost")
        return SimpleNamespace(used=(handle + 1) << 30, total=80 << 30)

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        return [SimpleNamespace(pid=41, usedGpuMemory=1 << 30), SimpleNamespace(pid=42, usedGpuMemory=None)]


def test_one_nvml_session_for_many_reads_closed_once():
    nvml = FakeNvml()
    telemetry = GpuTelemetry(lambda: nvml)
    for _ in range(3):
        assert telemetry.read_devices() == (GpuMemory(0, "Fake GPU", 1 << 30, 80 << 30),
                                            GpuMemory(1, "Fake GPU", 2 << 30, 80 << 30))
        assert telemetry.memory_by_pid() == {41: 2 << 30}
    assert telemetry.process_memory([41, 7]) == 2 << 30 and telemetry.process_memory([7]) is None
    assert (nvml.inits, nvml.shutdowns) == (1, 0) and telemetry.unavailable is None
    telemetry.close()
    telemetry.close()
    assert (nvml.inits, nvml.shutdowns) == (1, 1)


def test_a_failing_read_says_why_and_raises_nothing():
    nvml = FakeNvml()
    telemetry = GpuTelemetry(lambda: nvml)
    nvml.broken = True
    assert telemetry.read_devices() is None
    assert "GPU is lost" in telemetry.unavailable
    nvml.broken = False
    assert telemetry.read_devices() is not None and telemetry.unavailable is None
    assert nvml.inits == 1


def test_without_an_nvidia_driver_reads_report_not_available():
    def no_driver():
        class NVMLError_LibraryNotFound(Exception):
            pass

        raise NVMLError_LibraryNotFound("NVML Shared Library Not Found")

    telemetry = GpuTelemetry(no_driver)
    assert telemetry.read_devices() is None and telemetry.memory_by_pid() is None
    assert telemetry.process_memory([1]) is None
    assert telemetry.unavailable == "NVML is not available: NVMLError_LibraryNotFound: NVML Shared Library Not Found"
    telemetry.close()


def test_the_process_wide_telemetry_on_this_machine():
    """Real pynvml: figures on a machine with an NVIDIA driver, the reason on one without."""
    telemetry = gpu_telemetry()
    assert telemetry is gpu_telemetry()
    devices = telemetry.read_devices()
    if devices is None:
        assert telemetry.unavailable.startswith("NVML")
    else:
        assert all(d.total_bytes >= d.used_bytes >= 0 for d in devices)
