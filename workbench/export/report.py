"""report.html: one self-contained page (no network: styles inline, pictures as data URIs) with the
session's facts and output rate while generating, each engine run's configuration and figures, the
plots and the heatmap's block grid, and the requests, each named by the start of its prompt and its
conversation or batch row: the 1,000 slowest by end-to-end latency (requests.csv holds them all)."""
from __future__ import annotations

import base64
import html
import math
import struct
import time
from typing import Mapping

from workbench.sessions.figures import GeneratingFigures, generating_figures
from workbench.sessions.compare import FIGURES, format_value
from workbench.sessions.stored import EngineRunRecord, RequestRecord, SessionSummary

MAX_TABLE_ROWS = 1000
PICTURE_SCALE = 2  # pixels of a PNG per CSS pixel of the page: sharp on a high-density screen and in print
PROMPT_CHARS = 80  # of a prompt in the table (its whole text in the cell's tooltip, up to TOOLTIP_CHARS)
TOOLTIP_CHARS = 1000
TEXT_COLUMNS = ("run", "request (its prompt)", "from", "status")
TABLE_COLUMNS = (("prompt tok", "prompt_tokens"), ("output tok", "output_tokens"),
                 ("cached tok", "cached_prompt_tokens"), ("queue ms", "queue_s"), ("TTFT ms", "ttft_s"),
                 ("ITL ms", "itl_s"), ("e2e ms", "e2e_s"))
STYLE = """
body{font-family:system-ui,sans-serif;margin:16px 24px;color:#1d1d1f;background:#fff;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:12px;margin:8px 0}th,td{border:1px solid #ddd;padding:3px 6px}
th{background:#f3f3f3;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
.runs{display:flex;gap:12px;flex-wrap:wrap}.run{border:1px solid #ccc;border-radius:6px;padding:6px 8px;width:600px}
.run .tables{display:flex;gap:12px;align-items:flex-start}.run h4{margin:4px 0}.run p{font-size:12px;color:#555}
.plots{display:flex;flex-wrap:wrap;gap:12px}figure{margin:0}
figure img{max-width:100%;height:auto;display:block}
figcaption{font-size:13px;color:#555;max-width:900px}.note{color:#8a5300;font-size:13px}
p.explain{font-size:13px;color:#444;max-width:900px}td.prompt{max-width:420px}
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


def _session_figures(session: GeneratingFigures, num_runs: int) -> str:
    rows = [("Engine runs", format_value(num_runs)), ("Requests answered", format_value(session.num_requests)),
            ("Output tokens", format_value(session.output_tokens)),
            ("Time generating", format_value(session.generating_s, "s")),
            ("Output tokens/s while generating", format_value(session.output_tokens_per_s, "tok/s"))]
    table = "".join(f"<tr><th>{_e(k)}</th><td class='n'>{_e(v)}</td></tr>" for k, v in rows)
    return (f"<table id='session-figures'>{table}</table><p class='explain'>Time generating: the time at least one "
            f"request was in the engine (from its arrival to its last token), {format_value(session.generating_s, 's')} "
            f"of the {format_value(session.span_s, 's')} from the session's first request to its last reply; idle "
            "time between requests does not count. Each engine run below has the same figure, and its "
            "“Output tokens/s”, counted from the run's first arrival to its last end, idle time and all.</p>")


def _config_value(name: str, value, resolved: Mapping) -> str:
    """A configured value, or where the run left it to vLLM, the value vLLM chose."""
    if value is not None:
        return str(value)
    return f"vLLM default: {resolved[name]}" if resolved.get(name) is not None else "vLLM default"


def _run_block(index: int, run: EngineRunRecord, figures: Mapping[str, float], generating: GeneratingFigures) -> str:
    info = run.info or {}
    resolved = info.get("resolved") or {}
    config = "".join(f"<tr><th>{_e(k)}</th><td>{_e(_config_value(k, v, resolved))}</td></tr>"
                     for k, v in run.resolved_config().items())
    reported = "".join(f"<tr><th>{_e(k)}</th><td>{_e(info.get(k))}</td></tr>"
                       for k in ("vllm_version", "device", "max_model_len", "num_kv_blocks") if k in info)
    shown = [(label, format_value(figures[name], unit)) for name, (label, unit, _) in FIGURES.items()]
    at = list(FIGURES).index("output_tokens_per_s") + 1
    shown.insert(at, ("Output tokens/s while generating", format_value(generating.output_tokens_per_s, "tok/s")))
    numbers = "".join(f"<tr><th>{_e(label)}</th><td class='n'>{_e(text)}</td></tr>" for label, text in shown)
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


def _prompt_start(prompt: str) -> str:
    """The start of a prompt on one line, cut at a word with an ellipsis."""
    text = " ".join(prompt.split())
    if len(text) <= PROMPT_CHARS:
        return text or "(empty prompt)"
    cut = text[:PROMPT_CHARS].rsplit(" ", 1)[0]
    return (cut if len(cut) > PROMPT_CHARS // 2 else text[:PROMPT_CHARS]) + "…"


def request_origin(request: RequestRecord) -> str:
    """Where a request came from: its conversation, or its batch run's line (and custom_id)."""
    if request.kind == "chat":
        return f"chat “{request.source}”"
    custom = f" ({request.request_id})" if request.request_id else ""
    return f"{request.source}, line {request.item}{custom}"


def _request_cells(request: RequestRecord, run_numbers: dict[str, int]) -> str:
    prompt = " ".join(request.prompt.split())
    tooltip = prompt if len(prompt) <= TOOLTIP_CHARS else prompt[:TOOLTIP_CHARS] + "…"
    return (f"<td>{_e(run_numbers.get(request.run_key, ''))}</td>"
            f"<td class='prompt' title='{_e(tooltip)}'>{_e(_prompt_start(request.prompt))}</td>"
            f"<td>{_e(request_origin(request))}</td><td>{_e(request.status)}</td>")


def _request_table(requests: list[RequestRecord], run_numbers: dict[str, int]) -> str:
    shown = slowest(requests)
    note = ""
    if len(requests) > len(shown):
        note = (f"<p class='note' id='table-note'>The table shows the {len(shown):,} slowest of {len(requests):,} "
                "requests (by end-to-end latency); requests.csv holds them all.</p>")
    head = "".join(f"<th>{_e(label)}</th>" for label in (*TEXT_COLUMNS, *(label for label, _ in TABLE_COLUMNS)))
    rows = []
    for r in shown:
        text = _request_cells(r, run_numbers)
        for _, name in TABLE_COLUMNS:
            value = r.figures.get(name)
            if value is not None and name.endswith("_s"):
                value = f"{value * 1e3:.1f}"
            text += f"<td class='n'>{_e('' if value is None else value)}</td>"
        rows.append(f"<tr>{text}</tr>")
    return (f"{note}<table id='requests'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) in pixels, from the PNG's header."""
    return struct.unpack(">II", png[16:24])


def _picture(png: bytes, alt: str, caption: str, attributes: str = "") -> str:
    """A picture drawn at :data:`PICTURE_SCALE` pixels per CSS pixel, shown at its drawn size."""
    width, height = (size // PICTURE_SCALE for size in png_size(png))
    caption = f"<figcaption>{_e(caption)}</figcaption>" if caption else ""
    return (f"<figure {attributes}><img alt='{_e(alt)}' width='{width}' height='{height}' src='{data_uri(png)}'>"
            f"{caption}</figure>")


def build_report(summary: SessionSummary, runs: list[EngineRunRecord], figures: list[Mapping[str, float]],
                 requests: list[RequestRecord], plots: Mapping[str, tuple[str, bytes]],
                 heatmap_png: bytes | None, heatmap_caption: str = "") -> str:
    """The page; ``plots``: name -> (title, PNG bytes); ``figures``: each run's, as ``compare.run_figures``;
    pictures are drawn at :data:`PICTURE_SCALE` pixels per CSS pixel."""
    run_numbers = {run.run_key: index + 1 for index, run in enumerate(runs)}
    images = "".join(_picture(png, title, "", f"class='plot' id='plot-{_e(name)}'")  # titled in the picture
                     for name, (title, png) in plots.items())
    heatmap = (_picture(heatmap_png, "KV-cache blocks", heatmap_caption or "KV-cache blocks at export time",
                        "class='heatmap'") if heatmap_png else
               "<p>No heatmap (no engine was running at export time).</p>")
    blocks = "".join(_run_block(i + 1, run, f, generating_figures([r for r in requests if r.run_key == run.run_key]))
                     for i, (run, f) in enumerate(zip(runs, figures)))
    models = ", ".join(summary.models) or "no model"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>vLLM Workbench session {_e(_when(summary.started_s))}</title>
<style>{STYLE}</style></head><body>
<h1>vLLM Workbench session, {_e(_when(summary.started_s))} ({_e(models)})</h1>
{_facts(summary)}
<h2>The session in figures</h2>{_session_figures(generating_figures(requests), len(runs))}
<h2>Engine runs and their configurations</h2><div class="runs">{blocks or "<p>No engine run.</p>"}</div>
<h2>Plots</h2><p class="explain">vLLM's own statistics, a point every 0.25 s, on seconds since the session
started; each engine run one after the other.</p>
<div class="plots">{images}</div>
<h2>KV cache</h2>{heatmap}
<h2>Requests ({len(requests):,})</h2>
{_request_table(requests, run_numbers)}
</body></html>
"""
