"""The comparison as a table (Markdown and CSV) and a bar plot (SVG, no plotting library needed).
The rows and the CSV's columns are those of ``bench/results.py``."""
from __future__ import annotations

import statistics
from pathlib import Path
from xml.sax.saxutils import escape

from workbench.bench.compare import ComparisonResult, median_rate, single_stream_rate
from workbench.bench.hf_baseline import best_batch
from workbench.bench.results import BAR_COLOURS, BenchmarkResults, RatioRow, ResultRow, results_csv
from workbench.engine.metrics import gap_tokens_per_s, percentile


def _pct(values: list[float]) -> tuple[float, float] | None:
    return (percentile(values, 50) * 1e3, percentile(values, 99) * 1e3) if values else None


def build_rows(result: ComparisonResult) -> list[ResultRow]:
    rows = []
    names = {"a": "(a) plain vLLM", "b": "(b) workbench loop"}
    for key in ("a", "b"):
        runs = result.runs[key]
        rates = [r.tokens_per_s for r in runs]
        memory = [r.memory_bytes for r in runs if r.memory_bytes]
        singles = [single_stream_rate(r) for r in result.single_stream[key]]
        rows.append(ResultRow(
            names[key], median_rate(runs), f"{min(rates):,.0f}–{max(rates):,.0f}" if rates else "",
            _pct([t for r in runs for t in r.ttft_s]), _pct([g for r in runs for g in r.itl_s]),
            max(memory) / 2**20 if memory else None, statistics.median(singles) if singles else None,
        ))
    hf_one = next((h for h in result.hf if h.batch_size == 1 and not h.error), None)
    best = best_batch(result.hf)
    for label, hf in (("(c) HF generate, batch 1", hf_one), (f"(c) HF generate, best batch {best.batch_size if best else '-'}", best)):
        if hf is not None:
            rows.append(ResultRow(label, hf.tokens_per_s, f"{hf.new_tokens} new tokens/seq",
                            (hf.ttft_s * 1e3, hf.ttft_s * 1e3), _pct(list(hf.gaps_s)),
                            hf.peak_memory_bytes / 2**20 if hf.peak_memory_bytes else None,
                            (gap_tokens_per_s(hf.gaps_s) or None) if hf.batch_size == 1 else None))
    return rows


def ratios(rows: list[ResultRow]) -> dict[str, float]:
    """b/a in throughput and single-stream speed; a/c against each HF row."""
    a, b, hf_rows = rows[0], rows[1], rows[2:]
    out = {"b/a throughput": b.tokens_per_s / a.tokens_per_s if a.tokens_per_s else 0.0}
    if a.single_stream_tok_s and b.single_stream_tok_s:
        out["b/a single stream"] = b.single_stream_tok_s / a.single_stream_tok_s
    for row in hf_rows:
        if row.tokens_per_s:
            out[f"a/c ({row.path[4:]})"] = a.tokens_per_s / row.tokens_per_s
    return out


def pair_ratios(result: ComparisonResult) -> dict[str, tuple[float, float, float]]:
    """b/a of the runs made side by side: median, min, max. Less exposed to a machine's drift than
    the ratio of medians."""
    out = {}
    for name, runs, rate in (("b/a throughput", result.runs, lambda r: r.tokens_per_s),
                             ("b/a single stream", result.single_stream, single_stream_rate)):
        pairs = [rate(b) / rate(a) for a, b in zip(runs["a"], runs["b"]) if rate(a) and rate(b)]
        if pairs:
            out[name] = (statistics.median(pairs), min(pairs), max(pairs))
    return out


def memory_scope(result: ComparisonResult) -> str:
    scopes = {r.memory_scope for runs in result.runs.values() for r in runs if r.memory_scope}
    return " / ".join(sorted(scopes)) or "not measured"


def _fmt_pair(pair) -> str:
    return f"{pair[0]:.1f} / {pair[1]:.1f}" if pair else "–"


def markdown(result: ComparisonResult) -> str:
    w = result.workload
    rows = build_rows(result)
    lines = [
        f"Workload: {w.num_requests} requests × {w.prompt_len} prompt / {w.output_len} output tokens, "
        f"ignore_eos={w.ignore_eos}, {w.repeats} interleaved repeats of (a) and (b); model `{result.config.model}`; "
        f"vLLM {result.environment.get('vllm')} on {result.environment.get('device')}.",
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
    lines.append(f"Peak memory: (a) and (b) {memory_scope(result)}; (c) torch's peak allocation "
                 f"({'on the GPU' if result.environment.get('device') == 'cuda' else 'resident memory of the process'}).")
    lines.append("")
    lines.extend(f"- {name}: **{value:.3f}**" for name, value in ratios(rows).items())
    for name, (median, low, high) in pair_ratios(result).items():
        lines.append(f"- {name}, per repeat (each (b) run against the (a) run beside it): median {median:.3f} "
                     f"({low:.3f}–{high:.3f})")
    lines.append(f"- CPU µs per output token, client / engine processes (median): {cpu_per_token(result)}")
    return "\n".join(lines) + "\n"


def cpu_per_token(result: ComparisonResult) -> str:
    """The work each path asked of the CPUs, per output token: (a) then (b)."""
    parts = []
    for key in ("a", "b"):
        per_run = [r.cpu_us_per_token() for r in result.runs[key]]
        if per_run:
            client, engine = (statistics.median(c) for c in zip(*per_run))
            parts.append(f"({key}) {client:.1f} / {engine:.1f}")
    return ", ".join(parts) or "not measured"


def benchmark_results(result: ComparisonResult) -> BenchmarkResults:
    """The rows of the results file: the paths, the ratios, then the per-repeat ratios."""
    rows = build_rows(result)
    ratio_rows = [RatioRow(name, value) for name, value in ratios(rows).items()]
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
        parts.append(f'<rect x="{left}" y="{y}" width="{length:.1f}" height="{bar_h}" fill="{BAR_COLOURS[i % len(BAR_COLOURS)]}"/>')
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
