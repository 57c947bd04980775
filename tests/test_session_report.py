"""report.html read as a report: plots drawn from stored series with their text at the window's font
size and axes in their units' natural range, the heatmap as the block grid with its legend, requests
named by their prompts, the session's output rate over the time the engine was generating; the page
laid out by a real headless browser."""
from __future__ import annotations

import re
import time

import numpy as np
from PySide6.QtWidgets import QGraphicsItem

from browser import measured
from test_session_storage import FACTS
from workbench.engine.kv_snapshot import BLOCK_STATE_CACHED, BLOCK_STATE_FREE, BLOCK_STATE_IN_USE, KVPoolMirror
from workbench.engine.stats import COLUMNS
from workbench.export.report import PICTURE_SCALE, build_report, png_size
from workbench.sessions.figures import generating_figures
from workbench.sessions.stored import FIGURE_COLUMNS, RequestRecord, SessionSummary
from workbench.ui.heatmap_picture import heatmap_caption, heatmap_png
from workbench.ui.stats_plots import PLOTS
from workbench.ui.stored_plots import render_one, stored_plots_view, window_font

NUM_POINTS = 40


def quiet_series(start_s: float) -> dict[str, np.ndarray]:
    """Points of a run that preempted nothing and hit no prefix, at under 1 % of the KV cache."""
    series = {name: np.zeros(NUM_POINTS) for name in COLUMNS}
    series["t"] = start_s + 0.25 * np.arange(NUM_POINTS)
    series["generation_tokens_per_s"] = np.linspace(0, 1900, NUM_POINTS)
    series["kv_usage_pct"] = np.linspace(0.2, 0.6, NUM_POINTS)
    series["num_running"] = np.full(NUM_POINTS, 3.0)
    return series


def svg_texts(svg: bytes) -> list[tuple[float, str]]:
    """(font size in px, text) of each text of an SVG that Qt wrote."""
    return [(float(size), text.strip()) for size, text in
            re.findall(r'<text[^>]*font-size="([\d.]+)"[^>]*>([^<]*)</text>', svg.decode("utf-8"))]


def snapshot_of(num_blocks: int):
    """A pool as the KV probe's deltas build it: the null block, some in use and cached, the rest free."""
    states = [BLOCK_STATE_FREE] * num_blocks
    states[0] = 0
    states[1:40] = [BLOCK_STATE_IN_USE] * 39
    states[40:60] = [BLOCK_STATE_CACHED] * 20
    mirror = KVPoolMirror()
    mirror.apply({"version": 1, "full": True, "num_blocks": num_blocks, "block_size": 32,
                  "ids": np.arange(num_blocks, dtype=np.int32).tobytes(), "states": np.array(states, np.int8).tobytes(),
                  "ref_cnts": np.zeros(num_blocks, np.int32).tobytes(), "hashed": np.zeros(num_blocks, np.bool_).tobytes(),
                  "tables": [], "table_ids": b"", "removed": [], "counts": [1, num_blocks - 60, 20, 39, 0],
                  "kv_usage": 39 / num_blocks, "tokens_stored": 900, "engine_ns": 0})
    return mirror.snapshot({}, 1.0)


def test_report_plots_read_at_the_window_font_in_their_units_range(qtbot, tmp_path):
    origin = time.time() - 60
    view = stored_plots_view(quiet_series(origin + 60), origin)
    qtbot.addWidget(view)
    font_px = window_font().pointSizeF() * 96 / 72  # Qt's SVG is drawn at 96 dots an inch
    plots = {}
    for name, plot in view.plots.items():
        title, png, svg = plots[name] = render_one(view, name, plot)
        texts = svg_texts(svg)
        for _, legend, _ in PLOTS[name][2]:
            assert any(text == legend for _, text in texts), (name, legend)
        assert min(size for size, _ in texts) >= font_px - 0.01, (name, texts)  # the legends were 7 pt
        # the legend scales with the picture (pyqtgraph keeps it one size on screen: a third of the text in the PNG)
        assert not plot.legend.flags() & QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations
        assert png_size(png)[0] == round(plot.sceneBoundingRect().width()) * PICTURE_SCALE
        assert "(x" not in plot.getAxis("left").labelString()  # no "% (x0.001)"
    ranges = {name: tuple(plot.getViewBox().viewRange()[1]) for name, plot in view.plots.items()}
    assert ranges["kv"] == ranges["prefix"] == (0.0, 100.0)  # percentages: 0 to 100, not 0.2 to 0.6 scaled by 1000
    assert ranges["preemptions"] == (0.0, 1.0)  # a series of zeros: 0 to 1, not −400 to 400
    assert ranges["tokens"] == (0.0, 2000.0)  # a round figure above the peak
    ticks = {text for _, text in svg_texts(plots["preemptions"][2])}
    assert {"0", "1.0"} <= ticks and not {"1000", "-400", "400"} & ticks
    assert {"0", "100"} <= {text for _, text in svg_texts(plots["kv"][2])}

    snapshot = snapshot_of(1024)
    page = tmp_path / "report.html"
    page.write_text(build_report(SessionSummary("s", origin, None, FACTS), [], [], [],
                                 {name: (title, png) for name, (title, png, _) in plots.items()},
                                 heatmap_png(snapshot, window_font()), heatmap_caption(snapshot)), encoding="utf-8")
    shown = measured(page, "[...document.images].map(i => [i.alt, i.naturalWidth, i.clientWidth, i.clientHeight])")
    assert len(shown) == len(plots) + 1
    for alt, natural, width, height in shown:  # each picture at its drawn size: its text at the window's
        assert natural == width * PICTURE_SCALE and height > 0, alt
    dom_text = page.read_text()
    assert "1,024 blocks of 32 tokens" in dom_text and "39 in use" in dom_text


def test_the_heatmap_picture_is_the_grid_with_its_legend():
    from PySide6.QtGui import QImage

    from workbench.engine.heatmap_image import STATE_COLOURS, grid_shape
    from workbench.ui.heatmap_picture import GRID_ASPECT, MARGIN_PX

    snapshot = snapshot_of(1024)
    image = QImage.fromData(heatmap_png(snapshot, window_font()))
    _, rows, columns = grid_shape(1024, aspect=GRID_ASPECT)
    margin = MARGIN_PX * PICTURE_SCALE
    cell = (image.width() - 2 * margin) // columns
    for block in (0, 5, 45, 1023):
        row, column = divmod(block, columns)
        x, y = margin + column * cell + cell // 2, margin + row * cell + cell // 2
        assert image.pixelColor(x, y).getRgb()[:3] == STATE_COLOURS[snapshot.states[block]], block
    row, column = divmod(1024, columns)  # past the pool's end: no block there, and none drawn
    assert image.pixelColor(margin + column * cell + cell // 2, margin + row * cell + cell // 2).getRgb()[:3] == (255,) * 3
    legend = [image.pixelColor(x, y).getRgb()[:3] for y in range(margin + rows * cell + margin, image.height())
              for x in range(0, image.width(), 2)]
    assert set(map(tuple, STATE_COLOURS)) <= set(legend)  # a swatch of each state under the grid


def record(kind: str, item: str, prompt: str, end_s: float, e2e_s: float, output_tokens: int,
           source: str = "batch1", request_id: str = "") -> RequestRecord:
    figures = {**dict.fromkeys(FIGURE_COLUMNS), "e2e_s": e2e_s, "output_tokens": output_tokens, "prompt_tokens": 5}
    return RequestRecord(kind, source, source, item, request_id, "k", "done", "length", end_s, figures, prompt, "o")


def test_the_session_rate_counts_only_the_time_generating_and_requests_are_named_by_prompt():
    long_prompt = "Explain how the scheduler picks which requests run in the next step when the pool is nearly full"
    found = [record("chat", "3f9c2a7e5b1d4c6e8f0a1b2c3d4e5f60", "What is a KV cache?", 1002.0, 2.0, 10,
                    source="Chat 1", request_id="chatcmpl-3f9c"),
             record("batch", "3", long_prompt, 1003.0, 2.0, 20, request_id="q2"),  # overlaps the chat
             record("batch", "4", "Why?", 1101.0, 1.0, 30)]  # after 98 s of nothing
    session = generating_figures(found)
    assert (session.generating_s, session.span_s) == (4.0, 101.0)
    assert session.output_tokens_per_s == 60 / 4.0  # not 60 / 101: idle time does not count
    page = build_report(SessionSummary("s", 900.0, 1200.0, FACTS), [], [], found, {}, None)
    figures = page[page.index("<table id='session-figures'>"):]
    assert "<th>Output tokens/s while generating</th><td class='n'>15 tok/s</td>" in figures
    assert "4 s of the 101 s" in page
    table = page[page.index("<table id='requests'>"):]
    assert ">What is a KV cache?</td><td>chat “Chat 1”</td>" in table
    assert ">Explain how the scheduler picks which requests run in the next step when the…</td>" in table
    assert f"title='{long_prompt}'" in table
    assert "<td>batch1, line 3 (q2)</td>" in table and "<td>batch1, line 4</td>" in table
    assert "3f9c2a7e" not in table  # no hex id names a request


def test_a_setting_left_to_vllm_says_what_vllm_chose():
    from workbench.sessions.stored import EngineRunRecord

    run = EngineRunRecord("k", "s", 1, {"model": "demo", "block_size": None, "max_num_seqs": 8}, {"resolved": {"block_size": 32}},
                          1.0, 2.0, None, "")
    page = build_report(SessionSummary("s", 0.0, None, FACTS), [run], [dict.fromkeys(
        ("num_requests", "output_tokens", "output_tokens_per_s", "ttft_ms_p50", "ttft_ms_p99", "itl_ms_p50", "itl_ms_p99",
         "kv_usage_pct_mean", "kv_usage_pct_peak", "prefix_hit_pct", "preemptions"), float("nan"))], [], {}, None)
    assert "<th>block_size</th><td>vLLM default: 32</td>" in page and "None" not in page
