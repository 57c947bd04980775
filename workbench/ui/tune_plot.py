"""The search's live plot: each trial a point of its throughput (the goal's: goodput tok/s for a goodput goal,
output tok/s otherwise) against p99 TTFT, the Pareto front
(the trials no other beats on both) drawn as a staircase, vLLM's defaults (trial 0) and the best so
far marked, failed trials as red crosses along the bottom (they measured nothing). Redrawn only when
a trial ends or the front changes: a search has tens of points, not a stream."""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtWidgets import QVBoxLayout, QWidget

from workbench.tune.values import Goal, TrialResult
from workbench.ui.live_plot import BACKGROUND, LEFT_AXIS_PX, text_size
from workbench.ui.plot_export import add_export_actions

TRIAL_COLOUR, DEFAULTS_COLOUR, BEST_COLOUR = "#4fc3f7", "#bdbdbd", "#ffd54f"
FAILED_COLOUR, FRONT_COLOUR, RUNNING_COLOUR = "#ef5350", "#ffb74d", "#81c784"
POINT_SIZE = 10
LABEL_COLOUR = "#c8c8c8"  # the axis labels, readable on the dark background
BOTTOM_AXIS_PX = 48


def pareto_staircase(points: list[tuple[float, float]]) -> tuple[list[float], list[float]]:
    """The front's points ``(ttft_s, tokens_per_s)`` joined as a staircase: from each point the line
    runs right at its throughput to the next point's TTFT, then up (more throughput costs TTFT)."""
    ordered = sorted(points)
    xs: list[float] = []
    ys: list[float] = []
    for index, (x, y) in enumerate(ordered):
        if index:
            xs.append(x)
            ys.append(ys[-1])
        xs.append(x)
        ys.append(y)
    return xs, ys


def legend_html() -> str:
    """What each mark means, in one line above the plot."""
    marks = ((TRIAL_COLOUR, "●", "trial"), (DEFAULTS_COLOUR, "■", "vLLM's defaults"), (BEST_COLOUR, "★", "best"),
             (FAILED_COLOUR, "✕", "failed"), (FRONT_COLOUR, "━", "Pareto front"))
    return "&nbsp;&nbsp;".join(f"<span style='color:{c}'>{m}</span>&nbsp;{t}" for c, m, t in marks)


def trial_tip(trial: TrialResult, goal: Goal) -> str:
    """What hovering over a trial's point says: its number, figures and the settings it tried."""
    settings = ", ".join(f"{name}={value}" for name, value in trial.params.items()) or "vLLM's defaults"
    if trial.state == "failed":
        return f"Trial {trial.number} failed: {trial.error}\n{settings}"
    goodput = f", {trial.goodput_tokens_per_s:,.0f} goodput tok/s" if goal.kind == "goodput" else ""
    return (f"Trial {trial.number}: {trial.output_tokens_per_s:,.0f} output tok/s{goodput}, p99 TTFT "
            f"{trial.ttft_p99_s or 0:.3f} s\n{settings}")


class TunePlot(QWidget):
    """:meth:`show_trials` draws the trials measured so far; :attr:`num_points` and :attr:`front` say
    what is drawn (the tests read them)."""

    def __init__(self):
        super().__init__(objectName="tunePlot")
        self.widget = pg.PlotWidget(background=BACKGROUND)
        self.widget.setMinimumHeight(200)
        plot = self.plot = self.widget.getPlotItem()
        size = text_size()
        plot.setTitle(legend_html(), size=size)  # the legend above the points, never over them
        self.goal = Goal()
        self._label_style = label_style = {"font-size": size, "color": LABEL_COLOUR}
        plot.setLabel("left", self.goal.throughput_name, **label_style)
        plot.setLabel("bottom", "p99 TTFT, s", **label_style)
        plot.getAxis("bottom").setHeight(BOTTOM_AXIS_PX)  # room for the tick labels and the label under them
        plot.getAxis("left").setWidth(LEFT_AXIS_PX + 8)
        for side in ("left", "bottom"):  # seconds stay seconds: no "(x0.001)" rescaling of the axis
            plot.getAxis(side).enableAutoSIPrefix(False)
        plot.showGrid(x=True, y=True, alpha=0.15)
        self.front_curve = plot.plot(pen=pg.mkPen(FRONT_COLOUR, width=2))
        self.trials_item = self._scatter(TRIAL_COLOUR, "o")
        self.defaults_item = self._scatter(DEFAULTS_COLOUR, "s")
        self.failed_item = self._scatter(FAILED_COLOUR, "x")
        self.best_item = self._scatter(BEST_COLOUR, "star", size=POINT_SIZE + 8)
        add_export_actions(self, plot, "tune")
        self.num_points = 0
        self.front: tuple[int, ...] = ()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.widget)

    def _scatter(self, colour: str, symbol: str, size: int = POINT_SIZE) -> pg.ScatterPlotItem:
        item = pg.ScatterPlotItem(size=size, symbol=symbol, pen=pg.mkPen("#111111", width=0.8),
                                  brush=pg.mkBrush(colour), hoverable=True,
                                  tip=lambda x, y, data: trial_tip(data, self.goal))
        self.plot.addItem(item)
        return item

    def set_goal(self, goal: Goal) -> None:
        """The search's goal: its throughput is the height of the points (goodput for a goodput goal)."""
        self.goal = goal
        self.plot.setLabel("left", goal.throughput_name, **self._label_style)

    def show_trials(self, trials: list[TrialResult], pareto_numbers: tuple[int, ...] = (),
                    best_number: int | None = None) -> None:
        """Every trial measured or failed so far (running ones are not points yet)."""
        measured = [t for t in trials if t.state == "complete" and t.ttft_p99_s is not None]
        failed = [t for t in trials if t.state == "failed"]
        self._set(self.trials_item, [t for t in measured if t.number not in (0, best_number)])
        self._set(self.defaults_item, [t for t in measured if t.number == 0])
        self._set(self.best_item, [t for t in measured if t.number == best_number])
        self.failed_item.setData([{"pos": (t.ttft_p99_s or 0.0, 0.0), "data": t} for t in failed])
        on_front = [t for t in measured if t.number in pareto_numbers]
        xs, ys = pareto_staircase([(t.ttft_p99_s, self.goal.throughput_of(t.figures)) for t in on_front])
        self.front_curve.setData(xs, ys)
        self.front = tuple(sorted(t.number for t in on_front))
        self.num_points = len(measured) + len(failed)
        self._fit([t.ttft_p99_s or 0.0 for t in measured + failed],
                  [self.goal.throughput_of(t.figures) for t in measured])

    def _fit(self, xs: list[float], ys: list[float]) -> None:
        """Both axes from 0 (a ratio to the defaults reads as the height it looks), the points off the edges;
        the failed crosses on the 0 line, just above the bottom."""
        right = max(xs, default=0.0) * 1.1 or 1.0
        top = max(ys, default=0.0) * 1.1 or 1.0
        self.plot.setXRange(0, right, padding=0)
        self.plot.setYRange(-0.04 * top, top, padding=0)

    def _set(self, item: pg.ScatterPlotItem, trials: list[TrialResult]) -> None:
        item.setData([{"pos": (t.ttft_p99_s, self.goal.throughput_of(t.figures)), "data": t} for t in trials])

    def clear(self) -> None:
        self.show_trials([])
