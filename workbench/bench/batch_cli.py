"""``vllm-workbench bench batch ...``: the batch path's figures (headless; see ``batch_bench``).

    bench batch throughput --requests 1000 --output-len 256 --repeats 2 --out DIR   (batch path / LLM.generate)
    bench batch rss --requests 100000 --output-len 4 --out DIR
    bench batch chat-ttft --requests 3000 --output-len 64 --chats 10 --out DIR
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

RESULT_PREFIX = "RESULT "


def add_parser(sub) -> None:
    batch = sub.add_parser("batch", help="the batch path: against LLM.generate, memory, chat TTFT during a batch")
    batch.add_argument("what", choices=["throughput", "rss", "chat-ttft"])
    batch.add_argument("--requests", type=int, default=1000)
    batch.add_argument("--prompt-words", type=int, default=48, help="words a prompt (besides its number)")
    batch.add_argument("--output-len", type=int, default=256)
    batch.add_argument("--max-in-flight", type=int, default=0,
                       help="the batch's bound (default: the app's, max_num_seqs less 4)")
    batch.add_argument("--repeats", type=int, default=2, help="throughput: runs of each path, taking turns")
    batch.add_argument("--chats", type=int, default=10, help="chat-ttft: chat replies per condition")
    batch.add_argument("--chat-gap", type=float, default=0.5, help="chat-ttft: seconds between chat replies")
    batch.add_argument("--conditions", default="", help="chat-ttft: comma-separated parts of condition names")
    batch.add_argument("--presets", default="", help="chat-ttft: shipped presets, comma-separated: each under the "
                                                     "app's condition instead of the conditions")
    batch.add_argument("--prompt-file", default="", help="a JSONL prompt file (default: one is written)")
    batch.add_argument("--only", choices=["batch", "generate"], help=argparse.SUPPRESS)
    batch.add_argument("--out", default="bench-batch-out")


def cmd_batch(args, config) -> int:
    from workbench.batch.run import default_max_in_flight
    from workbench.bench.batch_bench import default_sampling, write_prompt_file

    config = replace(config, scheduling_policy="priority")  # the app's engine
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    prompt_file = Path(args.prompt_file) if args.prompt_file else out / f"prompts-{args.requests}.jsonl"
    if not args.prompt_file and not prompt_file.exists():
        write_prompt_file(prompt_file, args.requests, args.prompt_words)
    sampling = default_sampling(args.output_len)
    bound = args.max_in_flight or default_max_in_flight(config.max_num_seqs)
    if args.what == "throughput":
        return _throughput(args, config, prompt_file, sampling, bound, out)
    if args.what == "rss":
        return _rss(config, prompt_file, sampling, bound, out)
    return _chat_ttft(args, config, prompt_file, sampling, out)


def _throughput(args, config, prompt_file, sampling, bound, out) -> int:
    if args.only:
        from workbench.bench.batch_bench import run_path

        print(RESULT_PREFIX + json.dumps(run_path(args.only, config, prompt_file, sampling, bound)), flush=True)
        return 0
    runs = {"batch": [], "generate": []}
    for repeat in range(args.repeats):
        for path in ("generate", "batch"):
            runs[path].append(_child(args, path, prompt_file, out / f"{path}-{repeat + 1}.log"))
    rates = {path: [r["output_tokens"] / r["elapsed_s"] for r in results] for path, results in runs.items()}
    pairs = [b / g for b, g in zip(rates["batch"], rates["generate"])]
    lines = [f"{args.requests} prompts ({prompt_file.name}), {args.output_len} output tokens each (ignore_eos), "
             f"batch bound {bound}, {args.repeats} repeats taking turns",
             "| path | output tok/s per run | median |", "|---|---|---|"]
    for path, values in rates.items():
        lines.append(f"| {path} | {', '.join(f'{v:,.0f}' for v in values)} | {statistics.median(values):,.0f} |")
    lines.append(f"\nbatch path / LLM.generate: median of medians "
                 f"{statistics.median(rates['batch']) / statistics.median(rates['generate']):.3f}; "
                 f"per pair {', '.join(f'{p:.3f}' for p in pairs)}")
    (out / "throughput.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (out / "throughput.json").write_text(json.dumps(runs, indent=1), encoding="utf-8")
    print("\n".join(lines))
    return 0


def _child(args, path: str, prompt_file: Path, log: Path) -> dict:
    """One path in a fresh process (its own engine); its whole output goes to ``log``."""
    argv = [sys.executable, "-m", "workbench", "bench", *args.bench_argv, "--only", path,
            "--prompt-file", str(prompt_file)]
    print(f"  {path}: {log}", flush=True)
    with log.open("w", encoding="utf-8") as stream:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        stream.write(done.stdout)
    results = [json.loads(line[len(RESULT_PREFIX):]) for line in done.stdout.splitlines()
               if line.startswith(RESULT_PREFIX)]
    if done.returncode or not results:
        raise SystemExit(f"the {path} run failed (exit {done.returncode}); see {log}")
    return results[-1]


def _rss(config, prompt_file, sampling, bound, out) -> int:
    from workbench.bench.batch_bench import measure_rss_growth

    f = measure_rss_growth(config, prompt_file, sampling, bound, out / "rss-samples.csv")
    mb = 1 << 20
    lines = [f"{f['requests']:,} prompts ({prompt_file.name}), {sampling.max_tokens} output tokens each, bound {bound}: "
             f"{f['finished']:,} finished ({f['failed']:,} failed), {f['output_tokens']:,} output tokens in "
             f"{f['elapsed_s']:.0f} s; {f['registry_records']} request records left",
             "| app process RSS MB: engine ready | file read | after the run | after gc | growth (after gc − ready) |",
             "|---|---|---|---|---|",
             f"| {f['rss_ready'] / mb:,.0f} | {f['rss_loaded'] / mb:,.0f} | {f['rss_after'] / mb:,.0f} | "
             f"{f['rss_after_gc'] / mb:,.0f} | {(f['rss_after_gc'] - f['rss_ready']) / mb:,.0f} |"]
    (out / "rss.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (out / "rss.json").write_text(json.dumps(f, indent=1), encoding="utf-8")
    print("\n".join(lines))
    return 0


def _chat_ttft(args, config, prompt_file, sampling, out) -> int:
    from workbench.bench.batch_chat_ttft import TABLE_HEADER, measure_chat_ttft
    from workbench.engine.demo_model import default_system_prompt

    names = tuple(n.strip() for n in args.conditions.split(",") if n.strip())
    presets = tuple(n.strip() for n in args.presets.split(",") if n.strip())
    if presets:
        from workbench.bench.batch_chat_ttft import measure_presets

        measured = measure_presets(config, presets, prompt_file, sampling, args.chats, args.chat_gap,
                                   default_system_prompt())
    else:
        measured = measure_chat_ttft(config, prompt_file, sampling, args.chats, args.chat_gap,
                                     default_system_prompt(), names)
    seqs = "each preset's max_num_seqs" if presets else f"max_num_seqs {config.max_num_seqs}"
    lines = [f"Chat replies (32 tokens) while a batch of {args.requests:,} prompts × {args.output_len} tokens runs; "
             f"{seqs}", TABLE_HEADER, *(m.row() for m in measured)]
    (out / "chat-ttft.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (out / "chat-ttft.json").write_text(json.dumps([m.__dict__ for m in measured], indent=1), encoding="utf-8")
    print("\n".join(lines))
    return 0
