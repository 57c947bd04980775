"""Provokes the GPU-only start failures on a CUDA machine and keeps vLLM's own words for each.

Three starts that fail, through the workbench's engine session (the same code the window runs):
  - out-of-memory: another process holds all but ``--leave-gib`` of the GPU; a model whose weights
    need more than that, with a small gpu_memory_utilization that passes vLLM's free-memory check;
  - free-memory: the same holder, and gpu_memory_utilization above what is free;
  - cuda-fork: the failure new users met: CUDA queried in the app's process, then the engine core
    forked. The workbench's spawn setting is switched off for this one start to show it.
And three that a preset or an imported command line causes (``--only config``):
  - tensor-parallel-too-large: tensor_parallel_size above the GPUs present;
  - quantization-mismatch: a model whose config.json says fp8, started with quantization=awq;
  - quantization-missing: a model with no quantization in its files, started with quantization=awq.
For each it writes the engine log and the message the window shows to ``--out`` (``<cause>.log``,
``<cause>.message.txt``). The logs become test data (``tests/data/engine_logs/``).

    python packaging/gpu_start_failures.py --out $OUT
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HOLDER = """
import sys, time, torch
free, total = torch.cuda.mem_get_info()
keep = int(float(sys.argv[1]) * 2**30)
block = torch.empty(max(0, free - keep), dtype=torch.uint8, device="cuda")
print(f"holding {block.numel() / 2**30:.1f} GiB, leaving {keep / 2**30:.1f} GiB free", flush=True)
time.sleep(3600)
"""


def try_start(cause: str, config, out: Path) -> None:
    from workbench.engine.session import EngineSession
    from workbench.engine.start_phases import EngineStartError

    session = EngineSession(config)
    started = time.monotonic()
    try:
        session.start(lambda progress: None)
    except EngineStartError as exc:
        message = str(exc)
        if exc.log_path:
            shutil.copy(exc.log_path, out / f"{cause}.log")
    else:
        message = "UNEXPECTED: the engine started"
        session.shutdown()
    (out / f"{cause}.message.txt").write_text(message + "\n", encoding="utf-8")
    print(f"=== {cause} ({time.monotonic() - started:.0f} s)\n{message}\n", flush=True)


def dummy_config(shape_dir: Path, utilization: float):
    from workbench.engine.spec import EngineConfig

    return EngineConfig(model=str(shape_dir), max_model_len=4096, gpu_memory_utilization=utilization,
                        extra=(("load_format", "dummy"), ("skip_tokenizer_init", True)))


def memory_failures(out: Path, leave_gib: float) -> None:
    from workbench.bench.model_shapes import write_shape

    shape_dir = write_shape("qwen2.5-7b")  # about 15 GiB of bf16 weights
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(leave_gib)], stdout=subprocess.PIPE, text=True)
    try:
        print(holder.stdout.readline().strip(), flush=True)
        import torch

        free, total = torch.cuda.mem_get_info()
        small = round((leave_gib - 2) * 2**30 / total, 3)  # below what is free: passes the check
        try_start("cuda-out-of-memory", dummy_config(shape_dir, small), out)
        try_start("free-memory-below-utilization", dummy_config(shape_dir, 0.5), out)
    finally:
        holder.kill()
        holder.wait()


def fork_failure(out: Path, demo_model: str) -> None:
    import torch

    import workbench.engine.session as session_module
    from workbench.engine.spec import EngineConfig

    torch.cuda.is_available()  # what transformers and the demo training do: the process now holds CUDA
    spawn = session_module.use_spawn_for_engine_processes
    session_module.use_spawn_for_engine_processes = lambda: None
    os.environ.pop(session_module.MULTIPROC_METHOD_ENV, None)
    try:
        try_start("cuda-fork", EngineConfig(model=demo_model, max_model_len=2048, max_num_seqs=64,
                                            num_gpu_blocks_override=1024), out)
    finally:
        session_module.use_spawn_for_engine_processes = spawn


def config_failures(out: Path) -> None:
    import json

    import torch

    from workbench.bench.model_shapes import write_shape

    shape_dir = write_shape("qwen2.5-0.5b")
    tp = dummy_config(shape_dir, 0.3).with_changes((("tensor_parallel_size", torch.cuda.device_count() * 2),))
    try_start("tensor-parallel-too-large", tp, out)
    try_start("quantization-missing", dummy_config(shape_dir, 0.3).with_changes((("quantization", "awq"),)), out)
    fp8_dir = write_shape("qwen2.5-0.5b")
    config = json.loads((fp8_dir / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "fp8", "activation_scheme": "dynamic"}
    (fp8_dir / "config.json").write_text(json.dumps(config, indent=2))
    try_start("quantization-mismatch", dummy_config(fp8_dir, 0.3).with_changes((("quantization", "awq"),)), out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--leave-gib", type=float, default=8.0, help="GPU memory the holder leaves free")
    parser.add_argument("--demo-model", help="a built demo model folder (for the fork case)")
    parser.add_argument("--only", nargs="*", default=["memory", "fork"], choices=["memory", "fork", "config"])
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if "memory" in args.only:
        memory_failures(args.out, args.leave_gib)
    if "config" in args.only:
        config_failures(args.out)
    if "fork" in args.only:
        from workbench.engine.demo_model import ensure_demo_model

        fork_failure(args.out, args.demo_model or str(ensure_demo_model()))
    return 0


if __name__ == "__main__":  # engine processes may be spawned: keep the entry point guarded
    sys.exit(main())
