"""This machine as the presets see it: CPU or CUDA, the number of GPUs, memory, and the processor's
features that vLLM's CPU kernels ask for. No vLLM import.

The processor's features are read here and nowhere else: the ``flags`` line of ``/proc/cpuinfo``
(``WORKBENCH_CPUINFO`` names another cpuinfo file: tests read a CPU other than their own). Where
there is no such file (macOS) vLLM's CPU build runs on Apple silicon, which has neither feature.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import psutil

CPUINFO_ENV = "WORKBENCH_CPUINFO"
# The key of a per-platform value that applies on a CPU with AVX-512 or AMX (before the "cpu" one):
# what vLLM's CPU attention needs for fp8 KV blocks (vllm/v1/attention/backends/cpu_attn.py,
# _get_attn_isa: "FP8 KV cache on CPU requires x86 with AVX-512 or AMX.").
CPU_AVX512 = "cpu_avx512"
# torch.cpu._is_avx512_supported(), which vLLM asks: AVX-512 F, VL, BW and DQ together.
AVX512_FLAGS = frozenset({"avx512f", "avx512vl", "avx512bw", "avx512dq"})
AMX_FLAG = "amx_tile"  # torch.cpu._is_amx_tile_supported()


@dataclass(frozen=True)
class CpuFeatures:
    """The processor: its name and its feature flags as /proc/cpuinfo spells them."""

    name: str = ""
    flags: frozenset[str] = frozenset()
    source: str = ""  # the file read

    @property
    def avx512(self) -> bool:
        return AVX512_FLAGS <= self.flags

    @property
    def amx(self) -> bool:
        return AMX_FLAG in self.flags

    @property
    def holds_fp8_kv(self) -> bool:
        """vLLM's own condition for an fp8 KV cache on CPU: x86 with AVX-512 or AMX."""
        return self.avx512 or self.amx

    def describe(self) -> str:
        """'this CPU (AMD EPYC 7763 64-Core Processor) has neither AVX-512 nor AMX (/proc/cpuinfo)'."""
        named = f"this CPU ({self.name})" if self.name else "this CPU"
        has = [what for what, present in (("AVX-512", self.avx512), ("AMX", self.amx)) if present]
        where = f" ({self.source})" if self.source else ""
        return f"{named} has {' and '.join(has) if has else 'neither AVX-512 nor AMX'}{where}"


def parse_cpuinfo(text: str, source: str) -> CpuFeatures:
    """The first processor's name and flags from a cpuinfo file's text (every core has the same)."""
    name, flags = "", None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and not name:
            name = value.strip()
        elif key == "flags" and flags is None:
            flags = frozenset(value.split())
        if name and flags is not None:
            break
    return CpuFeatures(name, flags or frozenset(), source)


def read_cpu_features(path: str | None = None) -> CpuFeatures:
    """This processor's features: ``path``, else the file ``WORKBENCH_CPUINFO`` names, else
    /proc/cpuinfo; none where /proc/cpuinfo cannot be read (a file named but missing raises)."""
    chosen = path or os.environ.get(CPUINFO_ENV)
    try:
        return parse_cpuinfo(Path(chosen or "/proc/cpuinfo").read_text(encoding="utf-8", errors="replace"),
                             chosen or "/proc/cpuinfo")
    except OSError:
        if chosen:
            raise
    return CpuFeatures(source="no /proc/cpuinfo")


@dataclass(frozen=True)
class Machine:
    platform: str  # "cpu" or "cuda"
    num_gpus: int
    gpu_total_bytes: int  # of the first GPU (0 on CPU)
    gpu_free_bytes: int
    host_total_bytes: int
    visible_devices: str | None = None  # CUDA_VISIBLE_DEVICES of this process, when set
    cpu: CpuFeatures = field(default_factory=CpuFeatures)  # unknown: neither AVX-512 nor AMX

    @property
    def num_usable_gpus(self) -> int:
        """The GPUs vLLM can use from this process: CUDA_VISIBLE_DEVICES narrows what NVML counts."""
        if self.visible_devices is None:
            return self.num_gpus
        return min(self.num_gpus, count_devices(self.visible_devices))

    @property
    def on_cpu(self) -> bool:
        return self.platform == "cpu"

    @property
    def platform_keys(self) -> tuple[str, ...]:
        """The keys of a per-platform value that apply here, the most specific first."""
        if not self.on_cpu:
            return (self.platform,)
        return (CPU_AVX512, "cpu") if self.cpu.holds_fp8_kv else ("cpu",)

    def table_key(self, table: dict) -> str:
        """The key of a per-platform value whose value applies here (the platform's own where the table
        names none that applies)."""
        return next((key for key in self.platform_keys if key in table), self.platform_keys[-1])


def count_devices(visible_devices: str) -> int:
    """How many GPUs a CUDA_VISIBLE_DEVICES value names ("0,1" -> 2; "" -> 0)."""
    return len([d for d in visible_devices.split(",") if d.strip()])


def this_machine() -> Machine:
    """NVML's GPUs where there are some (vLLM's CUDA build then runs on them), else the CPU build."""
    from workbench.telemetry.gpu_memory import gpu_telemetry

    gpus = gpu_telemetry().read_devices() or ()
    host = psutil.virtual_memory().total
    cpu = read_cpu_features()
    if not gpus:
        return Machine("cpu", 0, 0, 0, host, cpu=cpu)
    first = gpus[0]
    return Machine("cuda", len(gpus), first.total_bytes, first.total_bytes - first.used_bytes, host,
                   os.environ.get("CUDA_VISIBLE_DEVICES"), cpu)
