"""report.html: one self-contained page (no network: styles inline, pictures as data URIs) with the
session's facts, each engine run's configuration and figures, the plots and heatmap, and the
requests, the 1,000 slowest by end-to-end latency (requests.csv holds them all)."""
from __future__ import annotations

import base64
import html
import math
import time
from typing import Mapping

from workbench.sessions.compare import FIGURES, format_value
from workbench.sessions.stored import EngineRunRecord, RequestRecord, SessionSummary

MAX_TABLE_ROWS = 1000
TABLE_COLUMNS = (("engine run", None), ("kind", None), ("source", None), ("item", None), ("status", None),
                 ("prompt tok", "prompt_tokens"), ("output tok", "output_tokens"),
                 ("cached tok", "cached_prompt_tokens"), ("queue ms", "queue_s"), ("TTFT ms", "ttft_s"),
                 ("ITL ms", "itl_s"), ("e2e ms", "e2e_s"))
STYLE = """
body{font-family:system-ui,sans-serif;margin:16px 24px;color:#1d1d1f;background:#fff;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:12px;margin:8px 0}th,td{border:1px solid #ddd;padding:3px 6px}
th{background:#f3f3f3;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
.runs{display:flex;gap:12px;flex-wrap:wrap}.run{border:1px solid #ccc;border-radius:6px;padding:6px 8px;width:600px}
.run .tables{display:flex;gap:12px;align-items:flex-start}.run h4{margin:4px 0}.run p{font-size:12px;color:#555}
.plots{display:grid;grid-template-columns:repeat(3,minmax(0,1fr));gap:10px}
.plots figure{margin:0}.plots img{width:100%;height:240px;object-fit:contain;background:#1e1f22}
.heatmap img{max-width:100%;max-height:600px}
figcaption{font-size:12px;color:#555}.note{color:#8a5300;font-size:13px}
"""


def _when(seconds: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds)) if seconds else "—"


def _e(value) -> str:
    return html.escape(str(value))


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _facts(summary: SessionSummary) -> str:
    facts = summary.facts
    gpus = ", ".join(f"{g.get('name')} ({g.get('memory_bytes', 0) / 2**30:.0f} GiB)" for g in facts.get("gpus") or ())
    rows = [("Started", _when(summary.started_s)), ("Ended", _when(summary.ended_s)),
            ("App", facts.get("app_version")), ("vLLM", facts.get("vllm_version")),
            ("torch", facts.get("torch_version")), ("Driver", facts.get("driver_version") or "none (no NVIDIA driver)"),
            ("GPUs", gpus or "none (CPU)")]
    return "<table class='facts'>" + "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows) + "</table>"


def _run_block(index: int, run: EngineRunRecord, figures: Mapping[str, float]) -> str:
    config = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in run.resolved_config().items())
    info = run.info or {}
    reported = "".join(f"<tr><th>{_e(k)}</th><td>{_e(info.get(k))}</td></tr>"
                       for k in ("vllm_version", "device", "max_model_len", "num_kv_blocks") if k in info)
    numbers = "".join(f"<tr><th>{_e(label)}</th><td class='n'>{_e(format_value(figures[name], unit))}</td></tr>"
                      for name, (label, unit, _) in FIGURES.items())
    return (f"<div class='run' id='run-{index}'><h3>Engine run {index}: {_e(run.model)}</h3>"
            f"<p>started {_e(_when(run.started_s))}, ready {_e(_when(run.ready_s))}, stopped "
            f"{_e(_when(run.stopped_s))}</p>"
            f"<div class='tables'><div><h4>Configuration</h4><table class='config'>{config}</table>"
            f"<h4>Reported by the engine</h4><table>{reported}</table></div>"
            f"<div><h4>Figures</h4><table class='figures'>{numbers}</table></div></div></div>")


def slowest(requests: list[RequestRecord], limit: int = MAX_TABLE_ROWS) -> list[RequestRecord]:
    """The ``limit`` slowest requests by end-to-end latency (those without one last)."""
    def key(r: RequestRecord) -> float:
        e2e = r.figures.get("e2e_s")
        return -e2e if e2e is not None else math.inf
    return sorted(requests, key=key)[:limit]


def _request_table(requests: list[RequestRecord], run_numbers: dict[str, int]) -> str:
    shown = slowest(requests)
    note = ""
    if len(requests) > len(shown):
        note = (f"<p class='note' id='table-note'>The table shows the {len(shown):,} slowest of {len(requests):,} "
                "requests (by end-to-end latency); requests.csv holds them all.</p>")
    head = "".join(f"<th>{_e(label)}</th>" for label, _ in TABLE_COLUMNS)
    rows = []
    for r in shown:
        cells = [run_numbers.get(r.run_key, ""), r.kind, r.source, r.item, r.status]
        text = "".join(f"<td>{_e(c)}</td>" for c in cells)
        for _, name in TABLE_COLUMNS[5:]:
            value = r.figures.get(name)
            if value is not None and name.endswith("_s"):
                value = f"{value * 1e3:.1f}"
            text += f"<td class='n'>{_e('' if value is None else value)}</td>"
        rows.append(f"<tr>{text}</tr>")
    return (f"{note}<table id='requests'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def build_report(summary: SessionSummary, runs: list[EngineRunRecord], figures: list[Mapping[str, float]],
                 requests: list[RequestRecord], plots: Mapping[str, tuple[str, bytes]],
                 heatmap_png: bytes | None) -> str:
    """The page; ``plots``: name -> (title, PNG bytes); ``figures``: each run's, as ``compare.run_figures``."""
    run_numbers = {run.run_key: index + 1 for index, run in enumerate(runs)}
    images = "".join(f"<figure class='plot' id='plot-{_e(name)}'><img alt='{_e(title)}' src='{data_uri(png)}'>"
                     f"<figcaption>{_e(title)}</figcaption></figure>" for name, (title, png) in plots.items())
    heatmap = (f"<figure class='heatmap'><img alt='KV-cache heatmap' src='{data_uri(heatmap_png)}'>"
               "<figcaption>KV-cache blocks at export time</figcaption></figure>" if heatmap_png else
               "<p>No heatmap (no engine was running at export time).</p>")
    blocks = "".join(_run_block(i + 1, run, f) for i, (run, f) in enumerate(zip(runs, figures)))
    models = ", ".join(summary.models) or "no model"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>vLLM Workbench session {_e(_when(summary.started_s))}</title>
<style>{STYLE}</style></head><body>
<h1>vLLM Workbench session, {_e(_when(summary.started_s))} ({_e(models)})</h1>
{_facts(summary)}
<h2>Engine runs and their configurations</h2><div class="runs">{blocks or "<p>No engine run.</p>"}</div>
<h2>Plots</h2><p>Seconds since the session started; each engine run one after the other.</p>
<div class="plots">{images}</div>
<h2>KV cache</h2><div class="heatmap">{heatmap}</div>
<h2>Requests ({len(requests):,})</h2>
{_request_table(requests, run_numbers)}
</body></html>
"""
