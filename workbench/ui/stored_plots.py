"""The live plots drawn from stored series (a past session, or this one for an export), and each plot
rendered as PNG and SVG bytes."""
from __future__ import annotations

import tempfile
from pathlib import Path
from types import MappingProxyType

import numpy as np
from PySide6.QtCore import Qt

from workbench.engine.ring_buffer import Series
from workbench.engine.stats import StatsSeries, StatsTotals
from workbench.sessions.thinning import thin_series
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


def render_live_plot(plot, title: str, name: str) -> tuple[str, bytes, bytes]:
    """One plot as it is drawn now: (title, PNG bytes, SVG bytes)."""
    with tempfile.TemporaryDirectory(prefix="workbench-plots-") as folder:
        png = export_plot(plot, Path(folder) / f"{name}.png", width_px=900).read_bytes()
        svg = export_plot(plot, Path(folder) / f"{name}.svg").read_bytes()
        return title, png, svg


def render_one(view: StatsPlotsView, name: str, plot) -> tuple[str, bytes, bytes]:
    """One plot of ``view`` as (title, PNG bytes, SVG bytes); the view is laid out off screen first."""
    if not view.isVisible():
        view.setAttribute(Qt.WA_DontShowOnScreen, True)
        view.resize(1400, 900)
        view.show()
    return render_live_plot(plot, PLOTS[name][0], name)
