"""Live plots of vLLM's own statistics: tokens/s, requests, KV usage beside token occupancy,
prefix-cache hit rate and, where the engine reports it (a multimodal model's), the multimodal cache's,
preemptions, and TTFT and inter-token latency p50/p99.

The figures come from the engine layer's published :class:`~workbench.engine.stats.StatsSeries`
(vLLM's stat logger, binned in ring buffers); this widget only draws them, at most as often as the
window's timer asks (10 Hz) and only when a new point has come. Every plot shares one time axis
(seconds since the window opened), which the memory panel's plot joins. The view follows the last
two minutes; Pause stops new data from being drawn; the mouse zooms and pans (and stops following);
"Show all" shows the whole history, "Follow" the latest again; each plot's right-click menu exports
it as PNG or SVG. When the engine dies, stops or restarts, its points stay drawn, a labelled line
marks the moment ("engine died: SIGKILL"), and the next engine's points go on on the same axis.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QToolButton, QVBoxLayout
from superqt import QElidingLabel

from workbench.engine.stats import StatsSeries, StatsTotals
from workbench.model.engine_status import EngineStatus
from workbench.ui.live_plot import (
    X_WINDOW_S, EngineMarks, FollowView, KeptCurve, LivePlotsWidget, engine_end_label, fixed_size_text, live_curve, seconds_since,
    time_plot, visible_peak,
)
from workbench.ui.plot_export import add_export_actions
from workbench.ui.plot_grid import PlotGrid

# plot name -> (title, unit, ((column, legend, colour), ...))
PLOTS = {
    "tokens": ("Tokens/s", "tok/s", (("generation_tokens_per_s", "generation", "#4fc3f7"),
                                     ("prompt_tokens_per_s", "prompt", "#ffb74d"))),
    "requests": ("Requests", "", (("num_running", "running", "#81c784"), ("num_waiting", "waiting", "#e57373"))),
    "kv": ("KV cache", "%", (("kv_usage_pct", "vLLM usage (blocks)", "#ba68c8"),
                             ("token_occupancy_pct", "tokens stored", "#fff176"))),
    "prefix": ("Prefix-cache hit rate", "%", (("prefix_hit_pct", "hits / queried tokens", "#4db6ac"),)),
    "mm_cache": ("Multimodal cache hit rate", "%", (("mm_cache_hit_pct", "hits / images looked up", "#f06292"),)),
    "preemptions": ("Preemptions", "per 0.25 s", (("preemptions", "preempted", "#ef5350"),)),
    "latency": ("Latency, last 10 s", "ms", (("ttft_ms_p50", "TTFT p50", "#90caf9"), ("ttft_ms_p99", "TTFT p99", "#1e88e5"),
                                            ("itl_ms_p50", "ITL p50", "#ffcc80"), ("itl_ms_p99", "ITL p99", "#fb8c00"))),
}
# Plots shown only once the engine reports their figures: an engine that does not has no empty plot.
OPTIONAL_PLOTS = ("mm_cache",)
# Percentages: their height is fixed, at 100 (a dotted one a little above, so that a dot at 100 % shows whole)
PERCENT_PLOTS = {"kv": 100.0, "prefix": 100.0, "mm_cache": 105.0}
DOTTED_COLUMNS = ("mm_cache_hit_pct",)  # a figure only in the bins where an image was looked up: dots show one alone


def reports_mm_cache(stats: StatsSeries) -> bool:
    """Whether the engine reported its multimodal cache (a stored series: whether it holds a point of it)."""
    column = stats.series.columns.get("mm_cache_hit_pct")
    return stats.totals.mm_cache_reports > 0 or (column is not None and bool(np.isfinite(column).any()))


def totals_text(totals: StatsTotals) -> str:
    """The line beside the buttons: the engine's totals since it started (images where it looks them up)."""
    images = (f", {totals.mm_queries:,} images looked up ({totals.mm_hits:,} in the multimodal cache)"
              if totals.mm_cache_reports else "")
    return (f"since start: {totals.generation_tokens:,} generated, {totals.prompt_tokens:,} prompt tokens, "
            f"{totals.preemptions:,} preemptions{images}")


class StatsPlotsView(LivePlotsWidget):
    """The plots; :meth:`show_stats` draws a published series when it is new and the view is not paused."""

    built = Signal()  # every plot is made (at once, or a plot a turn of the event loop: ``made_at_once=False``)

    def __init__(self, time_origin: float, made_at_once: bool = True):
        """``made_at_once=False``: the plots are made one a turn of the event loop once this returns, each turn
        a few milliseconds instead of one stall of all seven (about 150 ms on a laptop's CPU): for a window
        made when the user asks for it (the Sessions window); :meth:`make_the_rest` finishes at once."""
        super().__init__("statsPlots", time_origin)
        self.all_plots: dict[str, pg.PlotItem] = {}  # every plot, :data:`PLOTS`' order
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.kept: dict[str, KeptCurve] = {}  # column -> the points of engines that ended
        self.plots: dict[str, pg.PlotItem] = {}  # the plots laid out and drawn
        self.grid: PlotGrid | None = None
        self.view: FollowView | None = None
        self._to_make = iter(PLOTS.items())
        self._maker = QTimer(self, interval=0)
        self._maker.timeout.connect(self._make_one)
        if made_at_once:
            self.make_the_rest()
        else:
            self._maker.start()
        self._x = None
        self._shown = dict.fromkeys(PLOTS, -1)  # plot name -> the series version it shows
        self._next = 0  # the plot whose turn it is
        self.paused.toggled.connect(lambda _: self.draw_all_again())
        # tool buttons: as wide as their words (a push button is 80 px at the least), so that the bar fits the
        # engine region however narrow the window is made
        self.show_all = QToolButton(text="Show all", toolTip="Every point since the window opened, in one view.")
        self.show_all.clicked.connect(self._on_show_all_clicked)
        self.follow = QToolButton(text="Follow", toolTip="Follow the newest points again.")
        self.follow.clicked.connect(self._on_follow_clicked)
        self.totals = QElidingLabel("No statistics yet.", objectName="statsTotals")
        self._totals_line = self.totals.text()  # the totals as last drawn, without an engine's end before them
        fixed_size_text(self.totals)  # a longer line is elided (its whole text in the tooltip), never made room for
        bar = QHBoxLayout()
        for widget in (self.paused, self.show_all, self.follow):
            bar.addWidget(widget)
        bar.addWidget(self.totals, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.graphics, 1)

    @property
    def is_built(self) -> bool:
        return self.view is not None

    def make_the_rest(self) -> None:
        """Makes the plots not made yet, at once."""
        while not self.is_built:
            self._make_one()

    def _make_one(self) -> None:
        """Makes the next plot; after the last, lays them out and emits ``built``."""
        made = next(self._to_make, None)
        if made is None:
            self._maker.stop()
            self._lay_plots_out()
            return
        name, (title, unit, curves) = made
        plot = time_plot(pg.PlotItem(), title, unit)
        for key, legend, colour in curves:
            self.curves[key] = live_curve(plot, colour, legend, dots=key in DOTTED_COLUMNS)
            self.kept[key] = KeptCurve(plot, self.curves[key])
        if self.all_plots:
            plot.setXLink(next(iter(self.all_plots.values())))
        add_export_actions(self, plot, name)
        self.all_plots[name] = plot

    def _lay_plots_out(self) -> None:
        self.plots = self._shown_plots(())
        self.grid = PlotGrid(self.graphics, list(self.plots.values()))
        self.grid.fit(self.width())
        self.marks = EngineMarks(list(self.all_plots.values()))
        fixed_tops = {list(PLOTS).index(name): top for name, top in PERCENT_PLOTS.items()}
        self.view = FollowView(list(self.all_plots.values()), fixed_tops)
        self.built.emit()

    def _shown_plots(self, optional: tuple[str, ...]) -> dict[str, pg.PlotItem]:
        return {name: plot for name, plot in self.all_plots.items() if name not in OPTIONAL_PLOTS or name in optional}

    def _show_optional(self, stats: StatsSeries) -> None:
        """Lays out the optional plots whose figures ``stats`` reports (once shown, a plot stays)."""
        if "mm_cache" not in self.plots and reports_mm_cache(stats):
            self.plots = self._shown_plots(("mm_cache",))
            self.grid.set_plots(list(self.plots.values()))

    def resizeEvent(self, event) -> None:
        """As many columns as the new width holds (laid out again only when that number changes)."""
        super().resizeEvent(event)
        if self.grid is not None:
            self.grid.fit(event.size().width())

    @property
    def time_plot(self) -> pg.PlotItem:
        """The plot the others follow in time (the memory panel links to it)."""
        return self.plots["tokens"]

    def show_stats(self, stats: StatsSeries) -> bool:
        """Draws the next plot, in turn, that does not show ``stats`` yet; True if it drew.

        One plot a call: the window calls at 10 Hz, so each plot is drawn at about 1.7 Hz (the
        series is binned at 4 Hz), and a tick of the GUI thread costs one plot's update and paint,
        not six (about 6 ms at once on the CPU build, the GIL held all the while)."""
        if not len(stats.series) or self.pause.paused or self._ended_before(stats):
            return False
        self._show_optional(stats)
        name = self._next_due(stats.version)
        if name is None:
            return False
        index = list(PLOTS).index(name)
        self._next = (index + 1) % len(PLOTS)
        x = self._x = seconds_since(stats.series, self.time_origin)
        series = stats.series
        columns = PLOTS[name][2]
        for key, _, _ in columns:
            self.curves[key].setData(x, series[key])
        peak = visible_peak(x, [series[key] for key, _, _ in columns])
        if self.marks.marks:  # the engines before, still in view
            peak = max(peak, *(self.kept[key].peak_since(x[-1] - X_WINDOW_S) for key, _, _ in columns))
        self.view.follow_one(index, x[-1], peak)
        self._shown[name] = stats.version
        if index == 0:
            self._totals_line = totals_text(stats.totals)
            self._set_totals(self._totals_line)
        self.pause.shown_version = min(self._shown[name] for name in self.plots)  # the oldest series a plot shows
        self.num_draws += 1
        return True

    def show_stats_whole(self, stats: StatsSeries) -> None:
        """Every plot that does not show ``stats`` yet draws it (an engine's last figures, before its end is
        marked and the plots stop following it)."""
        for _ in PLOTS:
            if not self.show_stats(stats):
                return

    def _next_due(self, version: int) -> str | None:
        """The next plot shown, in turn from the one after the last drawn, that does not show ``version``."""
        names = list(PLOTS)
        due = [names[(self._next + offset) % len(names)] for offset in range(len(names))]
        return next((name for name in due if name in self.plots and self._shown[name] != version), None)

    def _ended_before(self, stats: StatsSeries) -> bool:
        """True for the series of an engine that ended at the last mark (still in the mailbox when
        the next one starts): its points are kept already."""
        last_mark = self.marks.last_x
        return last_mark is not None and stats.series["t"][-1] - self.time_origin <= last_mark

    def mark_engine_end(self, status: EngineStatus, at: float | None = None) -> None:
        """The engine left READY: its points move to the kept curves, a line marks the moment, and the
        next engine's points start afresh on the same time axis."""
        for key, curve in self.curves.items():
            self.kept[key].keep(curve)
        super().mark_engine_end(status, at)
        self.draw_all_again()
        self._set_totals(f"{engine_end_label(status)} — {self._totals_line}")  # one label: engines in a row

    def _set_totals(self, text: str) -> None:
        """The totals line, only when it changed (a new text repaints the bar); elided to its width."""
        if text != self.totals.text():
            self.totals.setText(text)
            self.totals.setToolTip(text)

    def draw_all_again(self) -> None:
        """Each plot is drawn again, in turn, from the next series on."""
        self._shown = dict.fromkeys(PLOTS, -1)
        self.pause.shown_version = -1

    def clear(self) -> None:
        """Nothing drawn: no points, kept or live, and no marks."""
        for curve in self.curves.values():
            curve.setData([], [])
        for kept in self.kept.values():
            kept.clear()
        self.marks.clear()
        if len(self.plots) != len(self._shown_plots(())):
            self.plots = self._shown_plots(())
            self.grid.set_plots(list(self.plots.values()))
        self.draw_all_again()
        self._totals_line = "No engine running."
        self.totals.setText(self._totals_line)

    def _on_show_all_clicked(self) -> None:
        spans = [x for x in [*(kept.x for kept in self.kept.values()), self._x] if x is not None and len(x)]
        if spans:  # the engines that ended too
            self.view.show_all(float(min(x[0] for x in spans)), float(max(x[-1] for x in spans)))

    def _on_follow_clicked(self) -> None:
        self.view.resume()
        self.draw_all_again()  # drawn again, in the followed view, from the next tick
