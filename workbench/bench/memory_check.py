"""GPU memory as the workbench reads it (NVML through pynvml) against ``nvidia-smi``, sampled while
something runs: ``python -m workbench.bench.memory_check --interval 5 --out memory.csv`` until killed,
then ``--summary memory.csv``. Used by ``packaging/gpu_bench.sh``; no Qt.
"""
from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import time
from pathlib import Path

from workbench.telemetry.gpu_memory import gpu_telemetry

FIELDS = ["time_s", "gpu", "nvml_used_mib", "smi_used_mib", "pid", "nvml_process_mib", "smi_process_mib"]


def _smi(query: str) -> list[list[str]]:
    out = subprocess.run(["nvidia-smi", f"--query-{query}", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, timeout=30).stdout
    return [[cell.strip() for cell in line.split(",")] for line in out.splitlines() if line.strip()]


def sample() -> list[dict]:
    """One row per GPU, and one per compute process, each with both readings side by side."""
    now, rows = time.time(), []
    gpus = gpu_telemetry().read_devices() or ()
    smi_gpus = {int(i): int(used) for i, used in _smi("gpu=index,memory.used")}
    for gpu in gpus:
        rows.append({"time_s": f"{now:.1f}", "gpu": gpu.index, "nvml_used_mib": gpu.used_bytes // 2**20,
                     "smi_used_mib": smi_gpus.get(gpu.index, "")})
    by_pid = gpu_telemetry().memory_by_pid() or {}
    for pid, used in _smi("compute-apps=pid,used_memory"):
        own = by_pid.get(int(pid))
        rows.append({"time_s": f"{now:.1f}", "pid": pid, "smi_process_mib": used,
                     "nvml_process_mib": own // 2**20 if own is not None else ""})
    return rows


def record(path: Path, interval_s: float) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, FIELDS)
        writer.writeheader()
        while True:
            writer.writerows(sample())
            f.flush()
            time.sleep(interval_s)


def summary(path: Path) -> str:
    if not path.exists():
        return f"NVML against nvidia-smi: no samples ({path} was not written)"
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))

    def gaps(a: str, b: str) -> list[int]:
        return [abs(int(r[a]) - int(r[b])) for r in rows if r[a] and r[b]]

    device, process = gaps("nvml_used_mib", "smi_used_mib"), gaps("nvml_process_mib", "smi_process_mib")
    peak = max((int(r["nvml_used_mib"]) for r in rows if r["nvml_used_mib"]), default=0)
    return (f"NVML against nvidia-smi: {len(device)} device samples (peak {peak:,} MiB used), largest "
            f"difference {max(device, default=0)} MiB; {len(process)} process samples, largest difference "
            f"{max(process, default=0)} MiB")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m workbench.bench.memory_check", description=__doc__)
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--summary", type=Path)
    args = parser.parse_args(argv)
    if args.summary:
        print(summary(args.summary))
        return 0
    if gpu_telemetry().read_devices() is None:
        print(f"Nothing to compare: {gpu_telemetry().unavailable}")
        return 1
    record(args.out or Path("memory.csv"), args.interval)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
