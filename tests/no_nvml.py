"""GPU telemetry as on a machine without an NVIDIA driver, where a test means to read host memory."""
from __future__ import annotations

from workbench.telemetry.gpu_memory import GpuTelemetry


def telemetry_without_nvml() -> GpuTelemetry:
    def no_driver():
        raise OSError("libnvidia-ml.so.1: cannot open shared object file")

    return GpuTelemetry(load_nvml=no_driver)
