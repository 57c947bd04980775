"""Tensor parallelism, the parts a CPU can check: the TP presets the GPU check switches through are valid
where there are GPUs enough and refused, naming the fix, where there are not; and the check's own run
through the app (``bench/gui/tp_check.py``, a chat and a preset switch, no vLLM process left after the
switch or at exit), here with TP 1 on the CPU engine; ``packaging/gpu_tp_check.sh`` runs it with 1, 2, 1."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from workbench.bench.tp_figures import tp_preset, worker_problems
from workbench.engine.backend import EngineInfo, WorkerMemory
from workbench.presets.checks import check_preset
from workbench.presets.machine import Machine

CPU = Machine("cpu", 0, 0, 0, 24 << 30)
TWO_GPUS = Machine("cuda", 2, 140 << 30, 139 << 30, 2 << 40)
ONE_VISIBLE = Machine("cuda", 2, 140 << 30, 139 << 30, 2 << 40, visible_devices="0")


def test_tp_presets_are_checked_against_the_gpus_here():
    assert check_preset(tp_preset(1), CPU, None) == []
    assert check_preset(tp_preset(2), TWO_GPUS, None) == []
    (on_cpu,) = check_preset(tp_preset(2), CPU, None)
    assert on_cpu.key == "engine.tensor_parallel_size" and "no GPU" in on_cpu.message
    (narrowed,) = check_preset(tp_preset(2), ONE_VISIBLE, None)
    assert "CUDA_VISIBLE_DEVICES=0 leaves 1" in narrowed.message and "valid: 1 to 1" in narrowed.message


def test_worker_checks_name_what_is_missing():
    worker = lambda pid, gpu: WorkerMemory(pid, f"cuda:{gpu}", gpu, 1 << 30, "model_memory_usage", 1 << 30)
    good = EngineInfo("m", "0.26.0", "cuda", 4096, None, (10, 11, 12), (worker(11, 0), worker(12, 1)), 259_869)
    assert worker_problems(good, 2, on_gpu=True) == []
    bad = EngineInfo("m", "0.26.0", "cuda", 4096, None, (10, 11), (worker(11, 0), worker(13, 0)), 0)
    problems = worker_problems(bad, 2, on_gpu=True)
    assert any("[13] are not among the engine's processes" in p for p in problems)
    assert any("workers share GPUs" in p for p in problems) and any("no KV blocks" in p for p in problems)
    assert worker_problems(bad, 3, on_gpu=False)[0] == "2 worker(s) reported for tensor_parallel_size 3"


@pytest.mark.slow
def test_the_tp_check_runs_through_the_app_on_cpu(tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", WORKBENCH_CONFIG_DIR=str(tmp_path / "config"))
    done = subprocess.run([sys.executable, "-m", "workbench.bench.gui.tp_check", "--sizes", "1,1"], env=env,
                          capture_output=True, text=True, timeout=900)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr[-3000:]
    assert "step 2, tp-1: no vLLM process of an earlier engine left" in out
    assert "at exit: no vLLM process left" in out and "TP check: all checks held" in out
    assert out.count("the heatmap shows the one pool") == 2 and out.count("a chat reply (done") == 2
