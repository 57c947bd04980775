"""``vllm-workbench bench``: benchmarks that print their figures. All but gui-stall and compare's
path (d) need no Qt.

    vllm-workbench bench snapshot --blocks 100000 --running 64
    vllm-workbench bench loop --requests 64 --prompt-len 256 --output-len 256 --repeats 5
    vllm-workbench bench compare --requests 64 --prompt-len 256 --output-len 256 --repeats 3 --out DIR
    vllm-workbench bench compare --paths a,b,c,d --repeats 8 ...   (d: the app's window, offscreen; needs Qt)
    vllm-workbench bench gui-stall --requests 256 --output-len 256
    vllm-workbench bench ui-stalls --preset low-latency   (the GUI thread's longest stall: first Apply, close)
    vllm-workbench bench heatmap --blocks 120000,640000
    vllm-workbench bench batch throughput --requests 1000 --output-len 256 --out DIR   (batch path / LLM.generate)
    vllm-workbench bench batch rss --requests 100000 --output-len 4 --out DIR
    vllm-workbench bench batch chat-ttft --requests 3000 --output-len 64 --out DIR
    vllm-workbench bench presets switches --switches 5 --out DIR   (memory after each switch, switch vs cold start)
    vllm-workbench bench presets capacity --out DIR   (the planner's estimate against vLLM's block count)
    vllm-workbench bench presets table --out DIR   (what each preset buys, through the app's window; needs Qt)
    vllm-workbench bench images --shape qwen2.5-vl-3b --requests 256 --repeats 6 --out DIR   (image requests; needs Qt)
    vllm-workbench bench remote --streams 256 --output-len 256 [--gui] [--url URL] --out DIR   (attached to a server)
    vllm-workbench bench tune --trials 3 --requests 16 --output-len 16 --out DIR   (a search of engine arguments)
"""
from __future__ import annotations

import argparse
import statistics

from workbench.bench import batch_cli, image_cli, preset_bench, remote_bench, tune_cli
from workbench.bench.engine_bench import measure_snapshot_cost
from workbench.engine.spec import EngineConfig
from workbench.bench import client_wire_cost, session_export_bench


def _config(args, **overrides) -> EngineConfig:
    model, extra = args.model, ()
    if args.shape:
        from workbench.bench.model_shapes import write_shape

        model = str(write_shape(args.shape))
        extra = (("load_format", "dummy"),)
    elif model == "demo":
        from workbench.engine.demo_model import ensure_demo_model

        model = str(ensure_demo_model(lambda label, f: print(f"  {label}", flush=True)))
    if args.gpu_memory_utilization:
        overrides["gpu_memory_utilization"] = args.gpu_memory_utilization
    return EngineConfig(model=model, max_model_len=args.max_model_len, max_num_seqs=args.max_num_seqs,
                        extra=extra, **overrides)


def _vocab(config: EngineConfig) -> int:
    import json
    from pathlib import Path

    return json.loads((Path(config.model) / "config.json").read_text())["vocab_size"]


def cmd_preset_table(args) -> int:
    from pathlib import Path

    from workbench.bench.gui.preset_table import run_table

    config = _config(args)
    run_table(config, _vocab(config), args.requests, args.prompt_len, args.output_len, Path(args.out),
              args.presets.split(","))
    return 0


def cmd_snapshot(args) -> int:
    config = _config(args, num_gpu_blocks_override=args.blocks or None,
                     kv_cache_memory_bytes=args.kv_bytes if args.kv_bytes else None)
    cost = measure_snapshot_cost(config, args.running, args.prompt_len, args.samples, _vocab(config))
    print("\n| blocks | running | samples | engine-side ms p50 / p99 | engine thread CPU ms p50 / p99 | "
          "round trip ms p50 / p99 | client apply + publish ms p50 / p99 | "
          "changed blocks p50 | full resync ms | full Python scan ms | tracking |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {cost.num_blocks:,} | {cost.num_running} | {cost.num_samples} | {cost.engine_ms_p50:.3f} / "
          f"{cost.engine_ms_p99:.3f} | {cost.engine_cpu_ms_p50:.3f} / {cost.engine_cpu_ms_p99:.3f} | "
          f"{cost.round_trip_ms_p50:.2f} / {cost.round_trip_ms_p99:.2f} | "
          f"{cost.client_ms_p50:.3f} / {cost.client_ms_p99:.3f} | "
          f"{cost.changed_blocks_p50:.0f} | {cost.resync_ms:.1f} | {cost.full_scan_ms:.1f} | {cost.tracking} |")
    return 0


def cmd_loop(args) -> int:
    from workbench.bench.compare import VARIANTS, compare_throughput, median_rate

    variants = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or "a" not in variants:
        raise SystemExit(f"--variants: choose from {', '.join(VARIANTS)}, including a (got {args.variants})")
    config = _config(args)
    results = compare_throughput(config, args.requests, args.prompt_len, args.output_len, args.repeats,
                                 _vocab(config), variants)
    print(f"\n{args.requests} requests × {args.prompt_len} prompt / {args.output_len} output tokens, "
          f"{args.repeats} interleaved repeats")
    print("| path | output tok/s median | min | max | ITL ms p50 | / plain (median of medians) | "
          "/ plain per interleaved pair: median (min–max) | CPU µs per output token, client / engine (median) |")
    print("|---|---|---|---|---|---|---|---|")
    plain = results["a"]
    plain_median = median_rate(plain)
    for key in variants:
        rates = [r.tokens_per_s for r in results[key]]
        median = median_rate(results[key])
        pairs = [r.tokens_per_s / p.tokens_per_s for p, r in zip(plain, results[key])]
        itl = statistics.median(g for r in results[key] for g in r.itl_s) * 1e3
        client_cpu, engine_cpu = (statistics.median(c) for c in zip(*(r.cpu_us_per_token() for r in results[key])))
        print(f"| {VARIANTS[key][0]} | {median:,.0f} | {min(rates):,.0f} | {max(rates):,.0f} | "
              f"{itl:.2f} | {median / plain_median:.3f} | "
              f"{statistics.median(pairs):.3f} ({min(pairs):.3f}–{max(pairs):.3f}) | "
              f"{client_cpu:.1f} / {engine_cpu:.1f} |")
    return 0


def cmd_compare(args) -> int:
    from pathlib import Path

    from workbench.bench.compare import Workload, run_comparison
    from workbench.bench.report import write_outputs

    config = _config(args)
    workload = Workload(args.requests, args.prompt_len, args.output_len, not args.stop_at_eos, args.repeats,
                        hf_time_box_s=args.hf_time_box, single_stream_samples=args.single_samples,
                        paths=args.paths)

    def progress(label: str, fraction: float) -> None:
        print(f"PROGRESS {fraction:.3f} {label}", flush=True)

    supplied, opened = {}, {}
    if "d" in args.paths:
        from workbench.bench.gui.app_path import AppPath

        supplied["d"] = AppPath(without=args.app_without, client=args.client)
        if args.app_without:
            print(f"(d) runs without: {', '.join(sorted(args.app_without))} (an attribution run)", flush=True)
        from workbench.bench.client_bench import in_client_paths

        opened = in_client_paths(supplied, args.client)
    result = run_comparison(config, workload, _vocab(config), config.model, progress, supplied, **opened)
    paths = write_outputs(result, Path(args.out))
    print()
    print(paths["md"].read_text(encoding="utf-8"))
    print("written:", ", ".join(str(p) for p in paths.values()), flush=True)
    return 0


def cmd_gui_stall(args) -> int:
    from workbench.bench.gui.gui_stall import run_gui_stall

    r = run_gui_stall(args.requests, args.output_len, num_blocks=args.blocks, client=args.client)
    print(f"\nGUI event-loop stalls (5 ms probe timer), {r['num_blocks']:,} blocks, {r['requests']} requests × "
          f"{args.output_len} output tokens, {r['finished']} finished in {r['elapsed_s']:.1f} s, {r['ticks']} ticks, "
          f"{r['heatmap_versions_seen']} heatmap snapshot versions drawn, live plots drawn {r['plots_drawn']} times, "
          f"memory panel {r['memory_panel_drawn']} times")
    print("| stall ms p50 | p90 | p99 | max | mean | longest gap ms | wall time blocked |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {r['stall_ms_p50']:.1f} | {r['stall_ms_p90']:.1f} | {r['stall_ms_p99']:.1f} | "
          f"{r['stall_ms_max']:.1f} | {r['stall_ms_mean']:.2f} | {r['longest_gap_ms']:.1f} | {r['blocked_share']:.1%} |")
    _print_snapshot_path(r["snapshot_path"], r["elapsed_s"])
    client_wire_cost.print_receipts(r["client"], r["snapshot_receipts"])
    flags = []
    if r["finished"] < r["requests"]:
        flags.append(f"the run ended early: {r['finished']} of {r['requests']} requests finished")
    if r["heatmap_versions_seen"] <= 0:
        flags.append("the heatmap drew no update during the run")
    if r["plots_drawn"] <= 0 or r["memory_panel_drawn"] <= 0:
        flags.append("the live plots or the memory panel drew no update during the run")
    for flag in flags:
        print(f"FLAG: {flag}")
    return 1 if flags else 0


def cmd_ui_stalls(args) -> int:
    from workbench.bench.gui.ui_stalls import print_ui_stalls, run_ui_stalls

    result = run_ui_stalls(args.preset, client=args.client)
    print_ui_stalls(result)
    return 0 if result["ready_after_apply"] and result["engine_stopped"] and result["storage_closed"] else 1


def _print_snapshot_path(path: dict, elapsed_s: float) -> None:
    print(f"\nThe whole snapshot path, per frame drawn ({path['frames']} frames, "
          f"{path.get('snapshots_published', 0)} snapshots published in {elapsed_s:.1f} s)")
    if not path["frames"]:
        return
    print("| ms per frame | engine (thread CPU) | engine wall | transport (wall) | client apply + publish "
          "| GUI update | GUI paint | cost: engine CPU + client + GUI | latency: wall, engine to frame |")
    print("|---|---|---|---|---|---|---|---|---|")
    for stat in ("p50", "p99", "max"):
        cells = " | ".join(f"{path[f'{part}_ms_{stat}']:.3f}" for part in
                           ("engine", "engine_wall", "transport", "client", "update", "paint", "cost", "latency"))
        print(f"| {stat} | {cells} |")
    print(f"Share of one core (engine CPU and client for every snapshot published, the GUI's draws): "
          f"{path['core_share']:.2%}")
    columns = ("version", "engine", "engine_wall", "transport", "client", "update", "paint", "cost", "latency")
    first = path.get("first_frame")
    if first:
        print("The pool's first frame, drawn before the run (full resync at the engine's start): "
              + ", ".join(f"{name} {first[name]:.3f}" for name in columns[1:6]) + " ms")
    print("\nEach frame (ms)\n| " + " | ".join(columns) + " |\n|" + "---|" * len(columns))
    for frame in path["each_frame"]:
        print("| " + " | ".join(f"{frame[name]:.3f}" if name != "version" else str(frame[name]) for name in columns) + " |")


def cmd_heatmap(args) -> int:
    from workbench.bench.heatmap_cost import frame_cost, image_marks_cost

    print("\n| blocks | blocks per cell | image | frame ms p50 / p99 | image marks ms p50 / p99 (blocks marked) |")
    print("|---|---|---|---|---|")
    for blocks in args.blocks:
        r, marks = frame_cost(blocks, args.frames), image_marks_cost(blocks, args.frames)
        print(f"| {r['blocks']:,} | {r['per_cell']} | {r['rows']} × {r['columns']} | "
              f"{r['ms_p50']:.3f} / {r['ms_p99']:.3f} | {marks['marks_ms_p50']:.3f} / {marks['marks_ms_p99']:.3f} "
              f"({marks['num_marked']:,}) |")
    return 0


def _app_parts(text: str) -> frozenset[str]:
    parts = frozenset(part.strip() for part in text.split(",") if part.strip())
    unknown = parts - {"heatmap", "chat", "storage", "plots"}
    if unknown:
        raise argparse.ArgumentTypeError(f"--app-without {text!r}: unknown part(s) {sorted(unknown)}; "
                                         "choose from heatmap, chat, storage, plots")
    return parts


def _paths(text: str) -> tuple[str, ...]:
    paths = tuple(sorted({part.strip() for part in text.split(",") if part.strip()}))
    if "a" not in paths or not set(paths) <= set("abcd"):
        raise argparse.ArgumentTypeError(f"choose from a, b, c, d, including a (got {text!r})")
    return paths


def _block_counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected block counts separated by commas, such as 120000,640000 (got {text!r})")
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"block counts must be 1 or more (got {text!r})")
    return counts


def cmd_storage_size(args) -> int:
    from workbench.bench.storage_size import measure

    from pathlib import Path

    return measure(args.messages, args.reply_words, Path(args.out))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="vllm-workbench bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="demo", help="model folder (default: the demo model)")
    parser.add_argument("--shape", choices=["qwen2.5-0.5b", "qwen2.5-7b"],
                        help="a config-only model of this published shape, dummy weights, no tokenizer")
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.0)
    parser.add_argument("--max-model-len", type=int, default=2048)
    parser.add_argument("--max-num-seqs", type=int, default=256)
    sub = parser.add_subparsers(dest="command", required=True)
    snap = sub.add_parser("snapshot", help="engine-side and round-trip cost of a KV snapshot")
    snap.add_argument("--blocks", type=int, default=100_000, help="pool size (0: as many as memory allows)")
    snap.add_argument("--running", type=int, default=64)
    snap.add_argument("--prompt-len", type=int, default=512)
    snap.add_argument("--samples", type=int, default=200)
    snap.add_argument("--kv-bytes", type=int, default=0, help="KV cache bytes (CPU); default: vLLM's choice")
    loop = sub.add_parser("loop", help="throughput of the workbench loop against plain LLMEngine stepping")
    loop.add_argument("--requests", type=int, default=64)
    loop.add_argument("--prompt-len", type=int, default=256)
    loop.add_argument("--output-len", type=int, default=256)
    loop.add_argument("--repeats", type=int, default=5)
    loop.add_argument("--variants", default="a,b",
                      help="comma-separated: a (plain), b (workbench), b-nosnap, a-tracked (default: a,b)")
    compare = sub.add_parser("compare", help="(a) plain vLLM, (b) the workbench loop, (c) HF generate, (d) the app")
    compare.add_argument("--paths", type=_paths, default=("a", "b", "c"),
                         help="comma-separated, (a) always: a plain vLLM, b the workbench loop headless, c HF "
                              "generate, d the app (the real window offscreen; needs Qt) (default: a,b,c)")
    compare.add_argument("--requests", type=int, default=64)
    compare.add_argument("--prompt-len", type=int, default=256)
    compare.add_argument("--output-len", type=int, default=256)
    compare.add_argument("--repeats", type=int, default=3)
    compare.add_argument("--stop-at-eos", action="store_true", help="let requests end early (default: ignore_eos)")
    compare.add_argument("--hf-time-box", type=float, default=120.0,
                         help="seconds for all HF batch sizes together (each at --output-len): a size whose run, "
                              "estimated from the size before, would end past it is skipped")
    compare.add_argument("--single-samples", type=int, default=3,
                         help="single-request runs per path and repeat, the paths taking turns")
    compare.add_argument("--out", default="bench-out", help="folder for benchmark.md / .csv / .svg")
    compare.add_argument("--app-without", type=_app_parts, default=frozenset(),
                         help="attribution runs of (d): leave out 'heatmap' (its timer stopped), 'chat' "
                              "(the conversation's request sent as the others are, nothing rendered) and/or "
                              "'storage' (nothing kept; by default (d) keeps its conversation in a database in a "
                              "temporary folder, as the app does), 'plots' (the live plots and the memory panel "
                              "not drawn)")
    compare.add_argument("--client", choices=("process", "thread"), default=None,
                         help="(d): vLLM's client loop in a process of its own or in a thread of the window's "
                              "(default: WORKBENCH_ENGINE_CLIENT, else process)")
    wire = sub.add_parser("client-wire", help="what the engine-client pipe costs per KV snapshot and series (no engine)")
    wire.add_argument("--blocks", type=_block_counts, default=[120_000, 640_000],
                      help="pool sizes, comma-separated (default: 120000,640000)")
    wire.add_argument("--frames", type=int, default=50)
    wire.add_argument("--running", type=int, default=64, help="requests each taking a block per frame")
    stall = sub.add_parser("gui-stall", help="GUI event-loop stalls while many requests stream (needs Qt)")
    stall.add_argument("--client", choices=("process", "thread"), default=None,
                       help="where vLLM's client loop runs (default: WORKBENCH_ENGINE_CLIENT, else process)")
    stall.add_argument("--requests", type=int, default=256)
    stall.add_argument("--output-len", type=int, default=256)
    stall.add_argument("--blocks", type=int, default=8192,
                       help="KV pool size in blocks (the real pools: 120000 for a 7B model, 640000 for a 0.5B one)")
    ui_stalls = sub.add_parser("ui-stalls", help="the GUI thread's longest stall during the first Apply of a "
                                                 "preset and during the close (needs Qt)")
    ui_stalls.add_argument("--preset", default="low-latency", help="the preset applied (default: low-latency)")
    ui_stalls.add_argument("--client", choices=("process", "thread"), default=None,
                           help="where vLLM's client loop runs (default: WORKBENCH_ENGINE_CLIENT, else process)")
    heatmap = sub.add_parser("heatmap", help="the GUI thread's time to draw one heatmap frame (no engine)")
    heatmap.add_argument("--blocks", type=_block_counts, default=[120_000, 640_000],
                         help="pool sizes, comma-separated (default: 120000,640000)")
    heatmap.add_argument("--frames", type=int, default=100)
    batch_cli.add_parser(sub)
    image_cli.add_parser(sub)
    preset_bench.add_parser(sub)
    remote_bench.add_parser(sub)
    tune_cli.add_parser(sub)
    size = sub.add_parser("storage-size", help="the database's size after N stored messages (no engine, no Qt)")
    size.add_argument("--messages", type=int, default=10_000)
    size.add_argument("--reply-words", type=int, default=120, help="words of each stored reply")
    size.add_argument("--out", default="bench-storage-out")
    session_export_bench.add_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "session-export":
        return session_export_bench.cmd_session_export(args)
    args.bench_argv = argv  # bench batch throughput runs each path as this command again, in a process of its own
    commands = {"snapshot": cmd_snapshot, "loop": cmd_loop, "compare": cmd_compare, "gui-stall": cmd_gui_stall, "ui-stalls": cmd_ui_stalls,
                "client-wire": client_wire_cost.cmd_client_wire,
                "heatmap": cmd_heatmap, "batch": lambda a: batch_cli.cmd_batch(a, _config(a)),
                "presets": lambda a: cmd_preset_table(a) if a.what == "table" else preset_bench.cmd_presets(a, _config(a)),
                "storage-size": cmd_storage_size, "images": image_cli.cmd_images, "remote": lambda a: remote_bench.cmd_remote(a, _config(a)),
                "tune": lambda a: tune_cli.cmd_tune(a, _config(a))}
    return commands[args.command](args)
