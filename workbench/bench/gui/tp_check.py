"""The app on tensor parallelism: its real window offscreen, a chat, preset switches between TP sizes
through the preset panel, and after each switch (and at exit) no vLLM process of an earlier engine left.

    python -m workbench.bench.gui.tp_check --shape qwen2.5-7b --sizes 1,2,1     (the 2-GPU machine)
    python -m workbench.bench.gui.tp_check --sizes 1,1                          (CPU: the demo model)

Prints, for each engine: its blocks (one logical pool; the heatmap's pool must have as many), its workers
and the memory per GPU per process (NVML). Exit status 0 when every check held, 1 otherwise.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

CHAT_TIMEOUT_S = 300
START_TIMEOUT_S = 900


def _wait(app, condition, timeout_s: float) -> bool:
    from PySide6.QtCore import QEventLoop

    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        app.processEvents(QEventLoop.AllEvents, 20)
        time.sleep(0.005)
    return condition()


class Check:
    """Runs the steps on one window and keeps what failed."""

    def __init__(self, app, window, telemetry):
        self.app, self.window, self.telemetry = app, window, telemetry
        self.failures: list[str] = []

    def expect(self, ok: bool, what: str) -> None:
        print(("  ok: " if ok else "  FAILED: ") + what, flush=True)
        if not ok:
            self.failures.append(what)

    def chat(self, label: str) -> None:
        from workbench.bench.gui.window_driver import type_and_send

        chat = self.window.chat
        type_and_send(chat, "Hello! Which blocks hold this question?")
        reply = chat.current.messages[-1]
        _wait(self.app, lambda: reply.status != "streaming", CHAT_TIMEOUT_S)
        figures = reply.figures
        self.expect(reply.status == "done" and bool(reply.text),
                    f"{label}: a chat reply ({reply.status}, {len(reply.text)} characters"
                    + (f", TTFT {figures.ttft_s * 1e3:.0f} ms" if figures and figures.ttft_s else "") + ")")

    def switch(self, preset: str) -> bool:
        panel = self.window.presets
        model = self.window.model
        before = model.latest_start_id
        panel.choose(preset)
        panel.apply("abort")
        _wait(self.app, lambda: panel.checking is None, START_TIMEOUT_S)  # the check runs off the GUI thread
        if panel.problems:
            self.expect(False, f"switch to {preset}: not applied: {panel.problem_text.text()}")
            return False
        _wait(self.app, lambda: model.latest_start_id > before and model.engine.settled(model.latest_start_id),
              START_TIMEOUT_S)
        self.expect(model.engine.ready, f"switch to {preset}: engine ready ({model.engine.message or 'ok'})")
        return model.engine.ready

    def engine_checks(self, label: str, tp: int) -> None:
        from workbench.bench.tp_figures import figure_lines, leftover_vllm_pids, worker_problems

        info = self.window.model.engine.info
        left = leftover_vllm_pids(set(info.engine_pids))
        self.expect(not left, f"{label}: no vLLM process of an earlier engine left (left: {sorted(left)})")
        for problem in worker_problems(info, tp, on_gpu=info.device == "cuda"):
            self.expect(False, f"{label}: {problem}")
        _wait(self.app, lambda: self.window.heatmap.snapshot is not None
              and self.window.heatmap.snapshot.num_blocks == info.num_kv_blocks, 30)
        snapshot = self.window.heatmap.snapshot
        self.expect(snapshot is not None and snapshot.num_blocks == info.num_kv_blocks,
                    f"{label}: the heatmap shows the one pool of {info.num_kv_blocks:,} blocks")
        read = {p.pid for p in self.window.memory_service.sample().processes}
        self.expect(set(info.engine_pids) <= read, f"{label}: the memory panel reads every engine process")
        print("\n".join(figure_lines(label, info, self.telemetry.memory_by_gpu_and_pid())), flush=True)


def write_presets(sizes: list[int], max_model_len: int, utilization: float) -> None:
    from workbench.bench.tp_figures import tp_preset
    from workbench.presets import store

    for tp in sorted(set(sizes)):
        store.save_user_preset(tp_preset(tp, max_model_len, utilization), f"tp-{tp}")


def first_config(shape: str | None, tp: int, max_model_len: int, utilization: float):
    """The engine the window starts with: the first TP preset on the shape (or the demo model)."""
    from workbench.bench.tp_figures import tp_preset
    from workbench.engine.demo_model import ensure_demo_model
    from workbench.engine.spec import EngineConfig
    from workbench.presets.machine import this_machine
    from workbench.presets.model_facts import read_model_facts
    from workbench.presets.resolve import resolve_preset

    if shape:
        from workbench.bench.model_shapes import write_shape

        model = str(write_shape(shape))
    else:
        model = str(ensure_demo_model())
    base = EngineConfig(model=model, scheduling_policy="priority")
    return resolve_preset(tp_preset(tp, max_model_len, utilization), base, this_machine(),
                          read_model_facts(model)).config


def run(args) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.setdefault("WORKBENCH_CONFIG_DIR", tempfile.mkdtemp(prefix="workbench-tp-config-"))
    sizes = [int(s) for s in args.sizes.split(",")]
    write_presets(sizes, args.max_model_len, args.gpu_memory_utilization)

    from workbench.app import build_window
    from workbench.bench.gui.window_driver import application
    from workbench.bench.tp_figures import leftover_vllm_pids
    from workbench.telemetry.gpu_memory import gpu_telemetry

    app = application()
    first = first_config(args.shape, sizes[0], args.max_model_len, args.gpu_memory_utilization)
    window, engine = build_window(first, storage=None, keep=False)
    window.resize(1400, 860)
    window.show()
    check = Check(app, window, gpu_telemetry())
    _wait(app, lambda: window.model.engine.settled(1), START_TIMEOUT_S)
    check.expect(window.model.engine.ready, f"start on tp-{sizes[0]} ({window.model.engine.message or 'ok'})")
    for step, tp in enumerate(sizes):
        label = f"step {step + 1}, tp-{tp}"
        if step and not check.switch(f"tp-{tp}"):
            break
        if not window.model.engine.ready:
            break
        check.engine_checks(label, tp)
        check.chat(label)
    window.close()
    _wait(app, lambda: not engine.thread.isRunning(), 60)
    left = leftover_vllm_pids(set())
    check.expect(not left, f"at exit: no vLLM process left (left: {sorted(left)})")
    print(f"TP check: {'all checks held' if not check.failures else f'{len(check.failures)} failed'}", flush=True)
    return 0 if not check.failures else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workbench.bench.gui.tp_check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=["qwen2.5-0.5b", "qwen2.5-7b"],
                        help="a config-only model of this published shape, dummy weights (default: the demo model)")
    parser.add_argument("--sizes", default="1,2,1", help="the TP size of each engine in turn (default 1,2,1)")
    parser.add_argument("--max-model-len", type=int, default=4096)
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.4)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
