"""The live plots and the memory panel's plot drawn from stored series (a past session, or this one for
an export), and each plot rendered for the report as PNG and SVG bytes: its text at the window's font
size, its height from 0 to the unit's natural top."""
from __future__ import annotations

import math
import tempfile
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from workbench.engine.ring_buffer import Series
from workbench.engine.stats import StatsSeries, StatsTotals
from workbench.export.report import PICTURE_SCALE
from workbench.sessions.thinning import thin_series
from workbench.ui.live_plot import label_time_axis, window_font
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


def label_stored_time_axes(view: StatsPlotsView) -> None:
    """The plots' time axes count from the session's start, not from the window's opening."""
    for plot in view.plots.values():
        label_time_axis(plot, TIME_LABEL)


def show_series(view: StatsPlotsView, series: dict[str, np.ndarray]) -> None:
    """Draws ``series`` thinned to its peaks (a picture of 2 h of points is drawn from 800 a run)."""
    view.clear()
    label_stored_time_axes(view)
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
    label_time_axis(panel.plot, TIME_LABEL)
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


REPORT_PLOT_PX = (660, 320)  # a plot's size in report.html, in CSS pixels
REPORT_COLUMNS = 2  # the stored view's columns while its plots are drawn for the report
TIME_LABEL = "seconds since the session started"
LABEL_COLOUR = "#c8c8c8"
ROUND_STEPS = (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10)  # a report's axis ends on one of these × 10^k


def round_top(peak: float) -> float:
    """The first of :data:`ROUND_STEPS` × 10^k above ``peak``; 1 where there is no peak (all zeros)."""
    if not peak > 0 or not math.isfinite(peak):
        return 1.0
    power = 10 ** math.floor(math.log10(peak))
    return next(step * power for step in ROUND_STEPS if step * power >= peak)


def natural_top(plot) -> float:
    """The top of ``plot``'s y axis: 100 for a percentage, else a round figure above the peak of its
    curves (1 for a series of zeros, which has no peak)."""
    if plot.getAxis("left").labelText.strip() == "%":
        return 100.0
    peaks = [np.nanmax(item.yData) for item in plot.listDataItems()
             if item.yData is not None and np.isfinite(item.yData).any()]
    return round_top(max(peaks, default=0.0) * 1.05)


def style_for_report(plot) -> None:
    """Legend, ticks and axis labels at the window's font size (the title a point larger and bold);
    the y axis from 0 to :func:`natural_top`, its figures as they are (no SI-prefix scaling: 5 %
    reads 5, not "50 (x0.1)"); the time axis labelled."""
    font = window_font()
    size = f"{font.pointSizeF():g}pt"
    plot.setTitle(plot.titleLabel.text, size=f"{font.pointSizeF() + 1:g}pt", bold=True)
    plot.setLabel("bottom", TIME_LABEL)
    for name in ("left", "bottom"):
        axis = plot.getAxis(name)
        # no range scales the figures (pyqtgraph's default scales a 0–1 range by 1000, and the flag alone
        # leaves the ticks scaled from before it)
        axis.setSIPrefixEnableRanges(())
        axis.enableAutoSIPrefix(False)
        axis.setTickFont(font)
        axis.setLabel(axis.labelText, **{"font-size": size, "color": LABEL_COLOUR})
    plot.getAxis("left").setWidth(None)  # as wide as its tick labels at this size
    legend = plot.legend
    if legend is not None:
        # pyqtgraph keeps a legend at one size on screen whatever the zoom; an exporter scales the picture,
        # and such a legend stayed at a third of the rest of the text in the report
        legend.setFlag(legend.GraphicsItemFlag.ItemIgnoresTransformations, False)
        legend.setLabelTextSize(size)
        for _, label in legend.items:
            label.setText(label.text, size=size)
        legend.layout.setVerticalSpacing(0)
    for item in plot.listDataItems():  # the curves as wide in the picture as on screen
        pen = pg.mkPen(item.opts["pen"])
        pen.setWidthF(max(pen.widthF(), 1.0) * PICTURE_SCALE)
        item.setPen(pen)
    plot.disableAutoRange(axis="y")
    plot.setYRange(0, natural_top(plot), padding=0)


def render_plot(plot, title: str, name: str) -> tuple[str, bytes, bytes]:
    """One plot as it is drawn now: (title, PNG bytes at :data:`PICTURE_SCALE` pixels per pixel of the
    plot, SVG bytes)."""
    width_px = round(plot.sceneBoundingRect().width()) * PICTURE_SCALE  # whole CSS pixels in the report
    with tempfile.TemporaryDirectory(prefix="workbench-plots-") as folder:
        png = export_plot(plot, Path(folder) / f"{name}.png", width_px=width_px).read_bytes()
        svg = export_plot(plot, Path(folder) / f"{name}.svg").read_bytes()
        return title, png, svg


def render_one(view: StatsPlotsView, name: str, plot) -> tuple[str, bytes, bytes]:
    """One plot of ``view`` as (title, PNG bytes, SVG bytes); the view is laid out off screen first, in
    :data:`REPORT_COLUMNS` columns whatever its width (grown for the picture, it would take more)."""
    view.grid.pin(REPORT_COLUMNS)
    return render_off_screen(view, plot, PLOTS[name][0], name)


def render_off_screen(widget, plot, title: str, name: str) -> tuple[str, bytes, bytes]:
    """``plot`` of ``widget`` (a stored view or panel, not shown), styled for the report and about
    :data:`REPORT_PLOT_PX` in size, as (title, PNG bytes, SVG bytes)."""
    if not widget.isVisible():
        widget.setAttribute(Qt.WA_DontShowOnScreen, True)
        widget.show()
    style_for_report(plot)
    for _ in range(3):  # the layout's share for the plot, then the widget grown by what it lacks
        QApplication.sendPostedEvents()
        size = plot.size()
        missing = (REPORT_PLOT_PX[0] - size.width(), REPORT_PLOT_PX[1] - size.height())
        if max(map(abs, missing)) < 2:
            break
        widget.resize(max(200, int(widget.width() + missing[0] * widget.width() / max(size.width(), 1))),
                      max(200, int(widget.height() + missing[1] * widget.height() / max(size.height(), 1))))
    return render_plot(plot, title, name)
