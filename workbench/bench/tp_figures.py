"""Tensor parallelism as the app runs it: the presets a TP switch goes through, what must hold after each
switch (one worker a rank, each on a GPU of its own, every worker among the engine's processes, no vLLM
process of an earlier engine left) and the figures printed (blocks, memory per GPU per process).

Qt-free: ``bench/gui/tp_check.py`` drives the window with it on the GPU machine
(``packaging/gpu_tp_check.sh``); the checks and the preset files are tested on CPU.
"""
from __future__ import annotations

import time

from workbench.engine.backend import EngineInfo
from workbench.engine.process_guard import child_pids
from workbench.presets.document import PresetDocument, parse_preset

PRESET_TEXT = """# Tensor parallelism {tp}: one rank a GPU; the shape's dummy weights (no download).
[preset]
name = "{name}"
description = "Tensor parallelism over {tp} GPU(s), for the TP switch check."

[engine]
tensor_parallel_size = {tp}
load_format = "dummy"
max_model_len = {max_model_len}
max_num_seqs = 64
gpu_memory_utilization = {{ cuda = {utilization} }}
kv_cache_memory_bytes = {{ cpu = "256 MiB" }}
block_size = {{ cpu = 32, cuda = 16 }}
# Eager: each switch starts in seconds; the check is about the ranks, not CUDA graphs.
enforce_eager = true

[sampling]
temperature = 0.7
max_tokens = 32
"""


def tp_preset(tp: int, max_model_len: int = 4096, utilization: float = 0.4) -> PresetDocument:
    """The preset named ``tp-<n>`` that the check switches to."""
    name = f"tp-{tp}"
    text = PRESET_TEXT.format(tp=tp, name=name, max_model_len=max_model_len, utilization=utilization)
    return parse_preset(text.encode(), f"{name}.toml")


def worker_problems(info: EngineInfo, tp: int, on_gpu: bool) -> list[str]:
    """What does not hold for an engine started with ``tp`` ranks: one worker a rank, each worker among
    the engine's processes (so the memory panel reads it), a GPU of its own each (on CUDA)."""
    problems = []
    if len(info.workers) != tp:
        problems.append(f"{len(info.workers)} worker(s) reported for tensor_parallel_size {tp}")
    missing = [w.pid for w in info.workers if w.pid not in info.engine_pids]
    if missing:
        problems.append(f"worker pid(s) {missing} are not among the engine's processes {list(info.engine_pids)}: "
                        "the memory panel would not read them")
    devices = [w.device_index for w in info.workers]
    if on_gpu and len(set(devices)) != len(devices):
        problems.append(f"workers share GPUs: device indexes {devices}")
    if not info.num_kv_blocks:
        problems.append("vLLM reported no KV blocks")
    return problems


def leftover_vllm_pids(expected: set[int], timeout_s: float = 30.0) -> set[int]:
    """vLLM processes of this app that are not ``expected`` (an earlier engine's), waiting up to
    ``timeout_s`` for them to exit; the empty set when none is left."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = child_pids(vllm_only=True) - expected
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def figure_lines(label: str, info: EngineInfo, by_gpu_and_pid: dict[tuple[int, int], int] | None) -> list[str]:
    """The figures of one engine: blocks, its workers, and memory per GPU per process (NVML)."""
    gib = 1 << 30
    lines = [f"{label}: {info.num_kv_blocks:,} KV blocks (one pool), engine processes {list(info.engine_pids)}"]
    for worker in info.workers:
        lines.append(f"  worker pid {worker.pid} on {worker.device or 'cpu'}: weights {worker.weights_bytes / gib:.2f} "
                     f"GiB ({worker.weights_source}), KV cache {worker.kv_cache_bytes / gib:.2f} GiB")
    if by_gpu_and_pid is None:
        lines.append("  memory per GPU per process: NVML gives none here")
        return lines
    for (gpu, pid), used in sorted(by_gpu_and_pid.items()):
        whose = "engine" if pid in info.engine_pids else "other"
        lines.append(f"  GPU {gpu} pid {pid} ({whose}): {used / gib:.2f} GiB")
    return lines
