"""The live plots and the memory panel's plot drawn from stored series (a past session, or this one for
an export), and each plot rendered as PNG and SVG bytes."""
from __future__ import annotations

import tempfile
from pathlib import Path
from types import MappingProxyType

import numpy as np
from PySide6.QtCore import Qt

from workbench.engine.ring_buffer import Series
from workbench.engine.stats import StatsSeries, StatsTotals
from workbench.sessions.thinning import thin_series
from workbench.ui.memory_panel import LAYERS, MemoryPanel
from workbench.ui.plot_export import export_plot
from workbench.ui.stats_plots import PLOTS, StatsPlotsView


def stored_plots_view(series: dict[str, np.ndarray], origin_s: float) -> StatsPlotsView:
    """The plots of ``series`` (stored columns, ``t`` in time.time() seconds) on seconds since ``origin_s``,
    the whole of it in view."""
    view = StatsPlotsView(origin_s)
    view.paused.hide()
    view.follow.hide()
    show_series(view, series)
    return view


def show_series(view: StatsPlotsView, series: dict[str, np.ndarray]) -> None:
    """Draws ``series`` thinned to its peaks (a picture of 2 h of points is drawn from 800 a run)."""
    view.clear()
    if not series or not len(series.get("t", ())):
        view.totals.setText("No plotted points were stored for this session.")
        return
    num_points = int(np.isfinite(series["t"]).sum())
    columns = {name: np.asarray(values, dtype=np.float64) for name, values in thin_series(series).items()}
    stats = StatsSeries(Series(len(columns["t"]), MappingProxyType(columns)), StatsTotals())
    for _ in range(len(PLOTS) + 1):  # live plots may draw one plot a call: every plot draws it here
        if not view.show_stats(stats):
            break
    x = columns["t"][np.isfinite(columns["t"])] - view.time_origin
    view.view.show_all(float(x[0]), float(x[-1]))
    for plot in view.plots.values():
        plot.enableAutoRange(axis="y")
    view.totals.setText(f"{num_points:,} stored points over {x[-1] - x[0]:,.0f} s")


def stored_memory_panel(series: dict[str, np.ndarray], origin_s: float) -> MemoryPanel:
    """The memory plot of ``series`` (the stored memory columns) on seconds since ``origin_s``."""
    panel = MemoryPanel(origin_s)
    panel.paused.hide()
    show_memory_series(panel, series)
    return panel


def show_memory_series(panel: MemoryPanel, series: dict[str, np.ndarray]) -> None:
    """Draws the stored memory ``series`` thinned to its peaks, the whole of it in view."""
    if not series or not len(series.get("t", ())):
        panel.draw_series({name: np.zeros(0) for name in ("t", "gpu_total", "process", *(column for column, _, _ in LAYERS))}, True)
        panel.text.setText("No memory points were stored for this session.")
        return
    num_points = int(np.isfinite(series["t"]).sum())
    columns = {name: np.asarray(values, dtype=np.float64) for name, values in thin_series(series).items()}
    on_gpu = bool(np.isfinite(columns["gpu_total"]).any())
    panel.draw_series(columns, on_gpu)  # sets the unit (which may put the view back to following)
    x = columns["t"][np.isfinite(columns["t"])] - panel.time_origin
    panel.view.show_all(float(x[0]), float(x[-1]))
    panel.draw_series(columns, on_gpu)  # again, in view: the fills are drawn from what is in view
    panel.plot.enableAutoRange(axis="y")
    panel.text.setText(f"{num_points:,} stored memory points over {x[-1] - x[0]:,.0f} s")


def render_live_plot(plot, title: str, name: str) -> tuple[str, bytes, bytes]:
    """One plot as it is drawn now: (title, PNG bytes, SVG bytes)."""
    with tempfile.TemporaryDirectory(prefix="workbench-plots-") as folder:
        png = export_plot(plot, Path(folder) / f"{name}.png", width_px=900).read_bytes()
        svg = export_plot(plot, Path(folder) / f"{name}.svg").read_bytes()
        return title, png, svg


def render_one(view: StatsPlotsView, name: str, plot) -> tuple[str, bytes, bytes]:
    """One plot of ``view`` as (title, PNG bytes, SVG bytes); the view is laid out off screen first."""
    return render_off_screen(view, plot, PLOTS[name][0], name)


def render_off_screen(widget, plot, title: str, name: str) -> tuple[str, bytes, bytes]:
    """``plot`` of ``widget`` (a stored view or panel, not shown) as (title, PNG bytes, SVG bytes)."""
    if not widget.isVisible():
        widget.setAttribute(Qt.WA_DontShowOnScreen, True)
        widget.resize(1400, 900)
        widget.show()
    return render_live_plot(plot, title, name)
