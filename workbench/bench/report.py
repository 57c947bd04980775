"""The comparison as a table (Markdown and CSV) and a bar plot (SVG, no plotting library needed).
The rows and the CSV's columns are those of ``export/benchmark_results.py``."""
from __future__ import annotations

import statistics
from pathlib import Path
from xml.sax.saxutils import escape

from workbench.bench.compare import PATH_NAMES, ComparisonResult, RunStats, median_rate, single_stream_rate
from workbench.bench.hf_baseline import HFBaseline
from workbench.engine.metrics import gap_tokens_per_s, percentile
from workbench.export.benchmark_results import BenchmarkResults, RatioRow, ResultRow, bar_colour, results_csv


def _pct(values: list[float]) -> tuple[float, float] | None:
    return (percentile(values, 50) * 1e3, percentile(values, 99) * 1e3) if values else None


def client_cpu_us_per_token(runs: list[RunStats]) -> float | None:
    """The median run's client CPU per output token (this process, all its threads)."""
    return statistics.median(r.cpu_us_per_token()[0] for r in runs) if runs else None


def path_rows(result: ComparisonResult) -> dict[str, ResultRow]:
    """One row for each path run on the shared engine, by key ("a", "b", "d")."""
    rows = {}
    for key, runs in result.runs.items():
        rates = [r.tokens_per_s for r in runs]
        memory = [r.memory_bytes for r in runs if r.memory_bytes]
        singles = [single_stream_rate(r) for r in result.single_stream[key]]
        rows[key] = ResultRow(
            PATH_NAMES[key], median_rate(runs), f"{min(rates):,.0f}–{max(rates):,.0f}" if rates else "",
            _pct([t for r in runs for t in r.ttft_s]), _pct([g for r in runs for g in r.itl_s]),
            max(memory) / 2**20 if memory else None, statistics.median(singles) if singles else None,
            client_cpu_us_per_token(runs),
        )
    return rows


def hf_rows(hf: HFBaseline) -> list[ResultRow]:
    """(c) at batch 1 and at its best batch size."""
    rows = []
    best = hf.best()
    for label, run in (("(c) HF generate, batch 1", hf.batch_one()),
                       (f"(c) HF generate, best batch {best.batch_size if best else '-'}", best)):
        if run is not None:
            rows.append(ResultRow(label, run.tokens_per_s, f"{run.new_tokens} new tokens/seq",
                                  (run.ttft_s * 1e3, run.ttft_s * 1e3), _pct(list(run.gaps_s)),
                                  run.peak_memory_bytes / 2**20 if run.peak_memory_bytes else None,
                                  (gap_tokens_per_s(run.gaps_s) or None) if run.batch_size == 1 else None))
    return rows


def build_rows(result: ComparisonResult) -> list[ResultRow]:
    return [*path_rows(result).values(), *hf_rows(result.hf)]


def ratios(result: ComparisonResult) -> dict[str, float]:
    """b/a and d/a in throughput and single-stream speed (ratios of medians); a/c against each HF row."""
    rows = path_rows(result)
    a, out = rows["a"], {}
    for key in ("b", "d"):
        row = rows.get(key)
        if row is None:
            continue
        out[f"{key}/a throughput"] = row.tokens_per_s / a.tokens_per_s if a.tokens_per_s else 0.0
        if a.single_stream_tok_s and row.single_stream_tok_s:
            out[f"{key}/a single stream"] = row.single_stream_tok_s / a.single_stream_tok_s
    for row in hf_rows(result.hf):
        if row.tokens_per_s:
            out[f"a/c ({row.path[4:]})"] = a.tokens_per_s / row.tokens_per_s
    return out


def paired_ratios(result: ComparisonResult) -> dict[str, list[float]]:
    """b/a and d/a of the runs made side by side, each run against the (a) run of its repeat (or
    single-stream sample). Less exposed to a machine's drift than the ratio of medians."""
    out = {}
    for key in ("b", "d"):
        for name, runs, rate in ((f"{key}/a throughput", result.runs, lambda r: r.tokens_per_s),
                                 (f"{key}/a single stream", result.single_stream, single_stream_rate)):
            if key in runs:
                pairs = [rate(x) / rate(a) for a, x in zip(runs["a"], runs[key]) if rate(a) and rate(x)]
                if pairs:
                    out[name] = pairs
    return out


def pair_ratios(result: ComparisonResult) -> dict[str, tuple[float, float, float]]:
    """The paired ratios as median, min, max."""
    return {name: (statistics.median(pairs), min(pairs), max(pairs))
            for name, pairs in paired_ratios(result).items()}


def memory_scope(result: ComparisonResult) -> str:
    scopes = {r.memory_scope for runs in result.runs.values() for r in runs if r.memory_scope}
    return " / ".join(sorted(scopes)) or "not measured"


def _fmt_pair(pair) -> str:
    return f"{pair[0]:.1f} / {pair[1]:.1f}" if pair else "–"


def markdown(result: ComparisonResult) -> str:
    w = result.workload
    rows = build_rows(result)
    names = [f"({key})" for key in result.runs]
    turns = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
    lines = [
        f"Workload: {w.num_requests} requests × {w.prompt_len} prompt / {w.output_len} output tokens, "
        f"ignore_eos={w.ignore_eos}, {w.repeats} interleaved repeats of {turns}; model `{result.config.model}`; "
        f"vLLM {result.environment.get('vllm')} on {result.environment.get('device')}."
        + (f" vLLM's engine core runs on the model worker's CPU {cores} for every path (the engine is shared;"
           " see `engine/placement.py`)." if (cores := result.environment.get("engine_core_cores")) else ""),
        "",
        "| path | output tok/s (median) | spread | TTFT ms p50 / p99 | ITL ms p50 / p99 | peak memory MiB | single-stream tok/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        memory = f"{r.memory_mib:,.0f}" if r.memory_mib else "–"
        single = f"{r.single_stream_tok_s:,.1f}" if r.single_stream_tok_s else "–"
        lines.append(f"| {r.path} | {r.tokens_per_s:,.0f} | {r.spread} | {_fmt_pair(r.ttft_ms)} | "
                     f"{_fmt_pair(r.itl_ms)} | {memory} | {single} |")
    lines.append("")
    hf_memory = "on the GPU" if result.environment.get("device") == "cuda" else "resident memory of the process"
    lines.append(f"Peak memory: {turns} {memory_scope(result)}"
                 + (f"; (c) torch's peak allocation ({hf_memory})." if result.hf.runs else "."))
    lines.append("")
    lines.extend(f"- {name}: **{value:.3f}**" for name, value in ratios(result).items())
    lines.extend(_paired_notes(result))
    lines.append(f"- CPU µs per output token, client / engine processes (median): {cpu_per_token(result)}")
    if split := client_cpu_split(result):
        lines.append(f"- the client's part, this process (the window's, in (d)) + the engine-client process: {split}")
    lines.extend(_edge_notes(result))
    lines.extend(_app_notes(result))
    lines.extend(_hf_notes(result.hf))
    return "\n".join(lines) + "\n"


def _paired_notes(result: ComparisonResult) -> list[str]:
    """The statistic to read: the median of the paired ratios, with their range and count."""
    lines = []
    for name, pairs in paired_ratios(result).items():
        count = f"{len(pairs)} pair{'s' if len(pairs) != 1 else ''}"
        few = " (fewer than 8 pairs: too few to resolve 2 %)" if len(pairs) < 8 else ""
        lines.append(f"- {name}, per repeat (each ({name[0]}) run against the (a) run beside it): median "
                     f"**{statistics.median(pairs):.3f}** ({min(pairs):.3f}–{max(pairs):.3f}), {count}{few}; "
                     f"in run order: {' '.join(f'{pair:.3f}' for pair in pairs)}")  # to pool several commands
    return lines


def _edge_notes(result: ComparisonResult) -> list[str]:
    """A run's edges, where a short run loses most: its first token and its end after the last token."""
    parts = []
    for key, runs in result.runs.items():
        firsts = [min(r.ttft_s) * 1e3 for r in runs if r.ttft_s]
        ends = [r.end_latency_s * 1e3 for r in runs if r.end_latency_s is not None]
        if firsts and ends:
            parts.append(f"({key}) {statistics.median(firsts):.1f} / {statistics.median(ends):.1f}")
    if not parts:
        return []
    return ["- a run's edges, ms (median of runs): the first token after the start / the end after the last "
            "token: " + ", ".join(parts)]


def _app_notes(result: ComparisonResult) -> list[str]:
    """(d): how many heatmap frames each run drew; a run that drew none did not measure the app."""
    frames = [r.heatmap_frames for r in result.runs.get("d", []) if r.heatmap_frames is not None]
    if not frames:
        return []
    note = f"- (d) heatmap frames drawn per run: {min(frames)}–{max(frames)}"
    return [note + (" (**a run drew none**: the heatmap was not live)" if min(frames) == 0 else "")]


def _hf_notes(hf: HFBaseline) -> list[str]:
    """(c): each batch size tried with its rate, and each one skipped with the reason."""
    lines = []
    if hf.runs:
        tried = ", ".join(f"{r.batch_size} ({r.error or f'{r.tokens_per_s:,.0f} tok/s'})" for r in hf.runs)
        lines.append(f"- (c) batch sizes tried, {hf.runs[0].new_tokens} new tokens per sequence each: {tried}")
    if hf.skipped:
        lines.append("- (c) skipped: " + "; ".join(f"{s.batch_size}: {s.reason}" for s in hf.skipped))
    return lines


def cpu_per_token(result: ComparisonResult) -> str:
    """The work each path asked of the CPUs, per output token, in the order the paths ran."""
    parts = []
    for key, runs in result.runs.items():
        per_run = [r.cpu_us_per_token() for r in runs]
        if per_run:
            client, engine = (statistics.median(c) for c in zip(*per_run))
            parts.append(f"({key}) {client:.1f} / {engine:.1f}")
    return ", ".join(parts) or "not measured"


def client_cpu_split(result: ComparisonResult) -> str:
    """Where the engine client has a process of its own: the client CPU per output token of this
    process and of that one (medians), so that the window's share is seen apart from vLLM's loop."""
    parts = []
    for key, runs in result.runs.items():
        split = [(r.own_cpu_s, r.client_cpu_s - r.own_cpu_s, r.output_tokens or 1) for r in runs if r.own_cpu_s is not None]
        if split:
            own = statistics.median(o / n * 1e6 for o, _, n in split)
            other = statistics.median(c / n * 1e6 for _, c, n in split)
            parts.append(f"({key}) {own:.1f} + {other:.1f}")
    return ", ".join(parts)


def benchmark_results(result: ComparisonResult) -> BenchmarkResults:
    """The rows of the results file: the paths, the ratios, then the per-repeat ratios."""
    rows = build_rows(result)
    ratio_rows = [RatioRow(name, value) for name, value in ratios(result).items()]
    ratio_rows += [RatioRow(f"{name} per repeat", median, (low, high))
                   for name, (median, low, high) in pair_ratios(result).items()]
    return BenchmarkResults(tuple(rows), tuple(ratio_rows))


def svg_plot(result: ComparisonResult) -> str:
    rows = build_rows(result)
    width, bar_h, left = 760, 28, 260
    top = max((r.tokens_per_s for r in rows), default=1.0) or 1.0
    height = 40 + len(rows) * (bar_h + 12)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="13">',
             '<text x="10" y="20" font-weight="bold">Output tokens/s (same workload, higher is better)</text>']
    for i, r in enumerate(rows):
        y = 34 + i * (bar_h + 12)
        length = (width - left - 90) * r.tokens_per_s / top
        parts.append(f'<text x="10" y="{y + 19}">{escape(r.path)}</text>')
        parts.append(f'<rect x="{left}" y="{y}" width="{length:.1f}" height="{bar_h}" fill="{bar_colour(r.path)}"/>')
        parts.append(f'<text x="{left + length + 6:.1f}" y="{y + 19}">{r.tokens_per_s:,.0f}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def write_outputs(result: ComparisonResult, folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"md": folder / "benchmark.md", "csv": folder / "benchmark.csv", "svg": folder / "benchmark.svg"}
    paths["md"].write_text(markdown(result), encoding="utf-8")
    paths["csv"].write_text(results_csv(benchmark_results(result)), encoding="utf-8")
    paths["svg"].write_text(svg_plot(result), encoding="utf-8")
    return paths
