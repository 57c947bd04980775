"""``bench presets``: preset switches in a row (memory after each, time against a cold start), and the
capacity planner's estimate against vLLM's own block count. Headless: the engine loop on a thread.

    vllm-workbench bench presets switches --switches 5 --out DIR
    vllm-workbench bench presets capacity --out DIR      (each shipped preset: estimate vs vLLM's count)
    vllm-workbench bench presets table --requests 256 --out DIR   (through the app: bench/gui/preset_table.py)
    vllm-workbench bench --shape qwen2.5-7b presets capacity --out DIR   (on a GPU, dummy weights)
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

from workbench.bench.memory import engine_memory
from workbench.engine.commands import Shutdown, StartEngine
from workbench.engine.events import EngineReady, EngineState, StateChanged
from workbench.engine.loop import EngineLoop
from workbench.engine.spec import EngineConfig
from workbench.presets import store
from workbench.presets.capacity import plan_capacity
from workbench.presets.machine import Machine, this_machine
from workbench.presets.model_facts import read_model_facts
from workbench.presets.resolve import resolve_preset

ORDER = ["balanced", "low-latency", "high-throughput", "long-context", "memory-limited"]


class _Listener:
    def __init__(self):
        self.states: dict[int, StateChanged] = {}
        self.info = None
        self.changed = threading.Condition()

    def publish(self, event) -> None:
        with self.changed:
            if isinstance(event, EngineReady):
                self.info = event.info
            elif isinstance(event, StateChanged) and event.state is not EngineState.STARTING:
                self.states[event.start_id] = event
            self.changed.notify_all()

    def snapshot_published(self, snapshot) -> None:
        pass

    def wait(self, start_id: int, timeout_s: float = 600) -> StateChanged:
        with self.changed:
            self.changed.wait_for(lambda: start_id in self.states, timeout=timeout_s)
        return self.states[start_id]


def preset_config(name: str, base: EngineConfig, machine: Machine | None = None) -> EngineConfig:
    """The shipped preset resolved for this machine (or ``machine``) on ``base``'s model, keeping base's
    extra arguments (a shape's dummy weights)."""
    document = store.load_catalog().entries[name].document
    resolved = resolve_preset(document, base, machine or this_machine(), read_model_facts(base.model))
    return resolved.config.with_changes(base.extra)


class LoopRunner:
    """The engine loop on a thread of its own, as the window's engine host runs it."""

    def __init__(self):
        self.listener = _Listener()
        self.loop = EngineLoop(self.listener)
        self.thread = threading.Thread(target=self.loop.run, name="engine-loop", daemon=True)
        self.thread.start()
        self.start_ids = iter(range(1, 1000))

    def start(self, config: EngineConfig) -> tuple[StateChanged, float]:
        start_id = next(self.start_ids)
        began = time.perf_counter()
        self.loop.post(StartEngine(config, start_id))
        state = self.listener.wait(start_id)
        return state, time.perf_counter() - began

    def close(self) -> None:
        self.loop.post(Shutdown())
        self.thread.join(timeout=60)


def cold_start_s(name: str, argv: list[str]) -> float:
    """Seconds from launching a fresh process to its engine being ready on preset ``name``."""
    began = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "workbench", "bench", *argv, "presets", "cold", "--preset", name],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in child.stdout:
        if line.startswith("READY"):
            ready = time.perf_counter() - began
            child.wait(timeout=120)
            return ready
    raise RuntimeError(f"the cold start of {name} did not get ready (exit {child.wait()})")


def run_switches(base: EngineConfig, num_switches: int, out: Path, argv: list[str]) -> list[dict]:
    runner = LoopRunner()
    rows = []
    try:
        for index in range(num_switches + 1):  # the first start is the app's own; then the switches
            name = ORDER[index % len(ORDER)]
            state, took_s = runner.start(preset_config(name, base))
            if state.state is not EngineState.READY:
                raise RuntimeError(f"{name} did not start: {state.message}")
            pids = list(runner.listener.info.engine_pids)
            engine_bytes, scope = engine_memory(pids)
            row = dict(step=index, preset=name, start_s=round(took_s, 3), app_rss_bytes=psutil.Process().memory_info().rss,
                       engine_bytes=engine_bytes, engine_scope=scope, num_kv_blocks=runner.listener.info.num_kv_blocks)
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        runner.close()
    rows.append(dict(cold_start_s=round(cold_start_s(ORDER[0], argv), 3), preset=ORDER[0]))
    print(json.dumps(rows[-1]), flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "switches.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def print_switches(rows: list[dict]) -> None:
    """The switches and the verdict. The cold start is of the first preset, which the last switch (in
    ``ORDER``'s cycle) starts again: that pair has the same state of vLLM's compile cache, so it is the
    one the target is judged on. An earlier switch to another preset compiles that preset's graphs for
    the first time, which a cold start of it would do too; those are listed, not judged."""
    steps = rows[:-1]
    first = steps[1] if len(steps) > 1 else steps[0]
    print(f"\n| switch | preset | start s | app RSS MiB | engine MiB ({steps[0]['engine_scope']}) | "
          "total vs first switch | KV blocks |")
    print("|---|---|---|---|---|---|---|")
    for r in steps:
        total, first_total = r["app_rss_bytes"] + r["engine_bytes"], first["app_rss_bytes"] + first["engine_bytes"]
        print(f"| {r['step'] or 'first start'} | {r['preset']} | {r['start_s']:.1f} | {r['app_rss_bytes'] / 2**20:,.0f} | "
              f"{r['engine_bytes'] / 2**20:,.0f} | {(total - first_total) / first_total:+.1%} | {r['num_kv_blocks']:,} |")
    for line in switch_verdict(rows):
        print(line)


def switch_verdict(rows: list[dict]) -> list[str]:
    """Lines that judge the targets: a switch at most a cold start + 5 s (the same preset, started
    before, against the cold start of it), and memory back within 2 % when a preset comes back."""
    steps, cold, cold_preset = rows[:-1], rows[-1]["cold_start_s"], rows[-1]["preset"]
    switches = steps[1:]
    lines = [f"\nCold start (a fresh process to engine ready, {cold_preset}, compiled before): {cold:.1f} s"]
    again = [r for r in switches if r["preset"] == cold_preset]
    if again:
        last = again[-1]
        met = "met" if last["start_s"] <= cold + 5 else "NOT met"
        lines.append(f"Switch {last['step']} back to {cold_preset} (compiled before, as for the cold start): "
                     f"{last['start_s']:.1f} s; target at most cold + 5 s = {cold + 5:.1f} s: {met}")
    else:
        lines.append(f"No switch back to {cold_preset}: the switch target cannot be judged (use --switches 5)")
    firsts = [r for r in switches if r["preset"] != cold_preset]
    if firsts:
        lines.append("First switch to each other preset (compiling its graphs, as a cold start of it would): "
                     + ", ".join(f"{r['preset']} {r['start_s']:.1f} s" for r in firsts))
    by_preset: dict[str, list[dict]] = {}
    for r in steps:
        by_preset.setdefault(r["preset"], []).append(r)
    for name, runs in by_preset.items():
        if len(runs) > 1:
            a, b = (r["app_rss_bytes"] + r["engine_bytes"] for r in (runs[0], runs[-1]))
            met = "met" if abs(b - a) / a <= 0.02 else "NOT met"
            lines.append(f"Memory when {name} came back: {(b - a) / a:+.2%} of its first start; target within 2 %: {met}")
    return lines


def read_switch_rows(log: Path) -> list[dict]:
    """The rows a switches run printed (its JSON lines), from its log."""
    rows = []
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("{") and ('"step"' in line or '"cold_start_s"' in line):
            rows.append(json.loads(line))
    return rows


def run_capacity(base: EngineConfig, out: Path, facts=None) -> list[dict]:
    """Each shipped preset started on ``base``'s model, the planner's estimate (from ``facts``: the model
    folder's by default, or the Hub's metadata before a download) beside vLLM's own block count."""
    runner = LoopRunner()
    machine, rows = this_machine(), []
    facts = facts or read_model_facts(base.model)
    try:
        for name in ORDER:
            config = preset_config(name, base)
            plan = plan_capacity(config, facts, machine)
            state, _ = runner.start(config)
            real = runner.listener.info.num_kv_blocks if state.state is EngineState.READY else None
            rows.append(dict(preset=name, estimate=plan.num_blocks, vllm=real, budget_bytes=plan.budget_bytes,
                             kv_bytes_per_token=plan.kv_bytes_per_token, basis=plan.basis,
                             off=(plan.num_blocks - real) / real if real else None,
                             message="" if real else state.message[:400]))
            print(json.dumps(rows[-1]), flush=True)
    finally:
        runner.close()
    out.mkdir(parents=True, exist_ok=True)
    (out / "capacity.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    print_capacity(rows)
    return rows


def print_capacity(rows: list[dict]) -> None:
    print("\n| preset | estimate | vLLM's blocks | off | KV bytes/token | budget |\n|---|---|---|---|---|---|")
    for r in rows:
        off = f"{r['off']:+.2%}" if r["off"] is not None else "did not start"
        print(f"| {r['preset']} | {r['estimate']:,} | {r['vllm'] or 0:,} | {off} | {r['kv_bytes_per_token']:,} | "
              f"{r['basis']} |")


def check_recorded(base: EngineConfig, table: Path, gpu_total_mib: int, num_gpus: int, facts=None) -> list[dict]:
    """The planner's estimate against vLLM's block counts that an earlier run recorded (``presets table``'s
    jsonl, or a ``presets capacity`` log's rows, from a GPU machine): each preset resolved for that machine,
    nothing started here."""
    machine = Machine("cuda", num_gpus, gpu_total_mib << 20, gpu_total_mib << 20, 0)
    facts, rows = facts or read_model_facts(base.model), []
    for line in table.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.startswith('{"preset"'):
            continue  # a log's other lines
        recorded = json.loads(line)
        plan = plan_capacity(preset_config(recorded["preset"], base, machine), facts, machine)
        real = recorded.get("num_kv_blocks", recorded.get("vllm"))
        rows.append(dict(preset=recorded["preset"], estimate=plan.num_blocks, vllm=real, budget_bytes=plan.budget_bytes,
                         kv_bytes_per_token=plan.kv_bytes_per_token, basis=plan.basis,
                         off=(plan.num_blocks - real) / real if real else None, message=""))
    print_capacity(rows)
    return rows


def session_facts(session) -> dict:
    """vLLM's pool of a benchmark session: blocks, block size, and the KV bytes its workers allocated."""
    return dict(num_kv_blocks=session.num_kv_blocks or 0, block_size=session.engine.vllm_config.cache_config.block_size,
                kv_cache_bytes=sum(w.kv_cache_bytes for w in session.workers))


def session_facts_in_client(loop) -> dict:
    """``session_facts`` of the benchmark session the engine-client process holds (``host.call``)."""
    return session_facts(loop.bench_session)


def cold(base: EngineConfig, name: str) -> int:
    runner = LoopRunner()
    state, _ = runner.start(preset_config(name, base))
    print("READY" if state.state is EngineState.READY else f"FAILED {state.message}", flush=True)
    runner.close()
    os._exit(0 if state.state is EngineState.READY else 1)


def add_parser(sub) -> None:
    presets = sub.add_parser("presets", help="preset switches (memory, time vs a cold start); capacity estimate "
                                             "vs vLLM's block count")
    presets.add_argument("what", choices=["switches", "capacity", "cold", "table"])
    presets.add_argument("--switches", type=int, default=5)
    presets.add_argument("--preset", default="balanced", help="cold: the preset to start")
    presets.add_argument("--out", default="bench-out/presets")
    presets.add_argument("--requests", type=int, default=256, help="table: requests at once for throughput and TTFT")
    presets.add_argument("--prompt-len", type=int, default=512, help="table: prompt tokens")
    presets.add_argument("--output-len", type=int, default=256, help="table: output tokens")
    presets.add_argument("--presets", default=",".join(ORDER), help="table: which shipped presets, comma-separated")
    presets.add_argument("--recorded", type=Path, help="capacity: check the estimate against the block counts of "
                                                       "an earlier `presets table` run (its jsonl), starting nothing; "
                                                       "switches: print an earlier run's log again")
    presets.add_argument("--gpu-total-mib", type=int, default=143771, help="capacity --recorded: that GPU's memory "
                                                                           "(NVML's total; the H200's by default)")
    presets.add_argument("--gpus", type=int, default=1, help="capacity --recorded: that machine's GPU count")


def cmd_presets(args, base: EngineConfig) -> int:
    common = [a for a in args.bench_argv[:args.bench_argv.index("presets")]]
    if args.what == "cold":
        return cold(base, args.preset)
    if args.what == "capacity" and args.recorded:
        check_recorded(base, args.recorded, args.gpu_total_mib, args.gpus)
        return 0
    if args.what == "capacity":
        run_capacity(base, Path(args.out))
        return 0
    if args.recorded:  # a switches run's log, printed again (nothing started)
        print_switches(read_switch_rows(args.recorded))
        return 0
    print_switches(run_switches(base, args.switches, Path(args.out), common))
    return 0
