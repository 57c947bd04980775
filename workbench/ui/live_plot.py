"""What every live plot shares: curves drawn from ring buffers with clipping to the view and peak
downsampling, seconds on one time axis, a view that follows the data in steps, pausing (the
curves keep their data; zoom stays free), and the moments an engine ended: its points kept,
a labelled vertical line where it died, stopped or was restarted."""
from __future__ import annotations

import math

import time

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QApplication, QCheckBox, QLabel, QSizePolicy, QWidget

from workbench.engine.events import EngineState
from workbench.engine.process_death import death_label
from workbench.engine.ring_buffer import Series
from workbench.model.engine_status import EngineStatus

BACKGROUND = "#1e1f22"
# Following the data, the view moves in steps: a range that changes on every new point makes every
# axis and grid be laid out and painted again (36 ms a frame for the six plots on the CPU build, 2.5
# ms with ranges that hold still and no grid).
X_WINDOW_S = 120.0
X_STEP_S = 15.0
KEPT_POINTS = 14_400  # points of engines that ended, kept per curve (two engines' full series)
MAX_MARKS = 50  # engine ends marked; older marks go
DIED_COLOUR, ENDED_COLOUR = "#ef5350", "#9e9e9e"
MARK_FONT_PT = 7
TIME_LABEL = "s since the window opened"
LABEL_ROOM_PX = 12  # the least room either side of an axis label shown whole
LEFT_AXIS_PX = 54  # room for "2000" and the unit beside it at the window's font size
PREFERRED_WIDTH_PX = 300  # the canvas asks for no more width than a narrow engine region has
LEGEND_ALPHA = "a0"  # the legend's background: the plot's, 63 % opaque (the curves show through)


def live_curve(plot: pg.PlotItem, colour: str, name: str, width: float = 1.5, dots: bool = False) -> pg.PlotDataItem:
    """A curve for a series that grows: only what is in view is drawn, peaks kept when thinned;
    NaN (no figure for that point) leaves a gap. ``dots``: each point drawn as a dot too, for a series
    of few points between gaps (a point alone has no line to draw)."""
    symbol = {"symbol": "o", "symbolSize": 5, "symbolBrush": colour, "symbolPen": None} if dots else {}
    curve = plot.plot(pen=pg.mkPen(colour, width=width), name=name, connect="finite", **symbol)
    curve.setClipToView(True)
    curve.setDownsampling(auto=True, method="peak")
    return curve


def window_font() -> QFont:
    """The window's font, with its size in points (the size every plot text takes)."""
    font = QFont(QApplication.font())
    if font.pointSizeF() <= 0:
        font.setPointSizeF(font.pixelSize() * 0.75)
    return font


def text_size() -> str:
    """The window's font size as pyqtgraph's text options take it ("9pt")."""
    return f"{window_font().pointSizeF():g}pt"


def time_plot(plot: pg.PlotItem, title: str, unit: str = "", time_label: str = TIME_LABEL) -> pg.PlotItem:
    """Labels a plot of the shared time axis; its title, axis labels and legend at the window's font
    size. The legend lies in one row (two for four curves) at the top left, over a translucent
    background: the curves show through it."""
    size = text_size()
    plot.setTitle(title, size=size)
    plot.setLabel("left", unit, **{"font-size": size})
    plot.getAxis("left").setWidth(LEFT_AXIS_PX)  # a fixed width: a new tick label never lays the plots out again
    label_time_axis(plot, time_label)
    plot.disableAutoRange()  # no grid either: pyqtgraph's axes paint it over the whole plot, at every repaint
    plot.addLegend(offset=(2, 2), labelTextSize=size, verSpacing=-4, horSpacing=12,
                   brush=pg.mkBrush(BACKGROUND + LEGEND_ALPHA), colCount=2)
    plot.setMenuEnabled(True)
    return plot


def label_time_axis(plot: pg.PlotItem, text: str) -> None:
    """The time axis says what its seconds count from; on a plot too narrow for that, only its unit (its
    first word: the words had been cut off mid-word), the tooltip saying it in full either way."""
    axis = plot.getAxis("bottom")
    first = not hasattr(axis, "full_label")
    axis.full_label = text
    axis.setToolTip(f"Time axis: {text}. Every plot here shares it.")
    fit_time_label(axis)
    if first:
        plot.getViewBox().sigResized.connect(lambda _: fit_time_label(axis))


def fit_time_label(axis: pg.AxisItem) -> None:
    """The axis's whole label where the axis is wide enough for it, else its first word; laid out again only
    when that changes (a new label lays the axis out again)."""
    whole = axis.full_label
    fits = QFontMetrics(window_font()).horizontalAdvance(whole) + LABEL_ROOM_PX <= axis.geometry().width()
    wanted = whole if fits or axis.geometry().width() == 0 else whole.split(" ", 1)[0]
    if axis.labelText != wanted or not axis.label.isVisible():
        axis.setLabel(wanted, **{"font-size": text_size()})


def fixed_size_text(label: QLabel) -> QLabel:
    """A label whose text changes as the figures do, kept from laying the window out again: its size
    no longer follows its text (a longer text is elided by the label's width, not made room for by
    shrinking the plots beside it, which re-lays and repaints every axis)."""
    label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
    label.setMinimumWidth(1)
    return label


def seconds_since(series: Series, origin: float) -> np.ndarray:
    """The series' times on the shared axis."""
    return series["t"] - origin


class PauseState:
    """Paused plots take no new data until resumed; a resumed plot draws the latest at once."""

    def __init__(self):
        self.paused = False
        self.shown_version = -1

    def wants(self, version: int) -> bool:
        """True when a series of ``version`` should be drawn now."""
        if self.paused or version == self.shown_version:
            return False
        self.shown_version = version
        return True

    def set_paused(self, paused: bool) -> None:
        self.paused = paused
        if not paused:
            self.shown_version = -1


def nice_ceiling(value: float) -> float:
    """The next of 1, 2, 5 × 10^k at or above ``value`` (1 for nothing to show)."""
    if not value > 0 or not math.isfinite(value):
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 5, 10) if step * power >= value)


class FollowView:
    """Keeps plots on the latest data while ``following``: time in steps of :data:`X_STEP_S` over the
    last :data:`X_WINDOW_S`, each plot's height at a round figure above its peak, changed only when
    the data leaves it. A zoom or pan by the mouse stops following."""

    def __init__(self, plots: list[pg.PlotItem], fixed_heights: dict[int, float] | None = None):
        self.plots = plots
        self.fixed = fixed_heights or {}  # plot index -> fixed top (percentages: 100)
        self.following = True
        self._x = (0.0, 0.0)
        self._tops = [0.0] * len(plots)
        self._setting = False
        for plot in plots:
            plot.getViewBox().sigRangeChangedManually.connect(self._on_range_changed_manually)

    def follow(self, x_last: float, peaks: list[float]) -> None:
        """Every plot: the time step that holds ``x_last``, each height above its peak."""
        for index, peak in enumerate(peaks):
            self.follow_one(index, x_last, peak)

    def follow_one(self, index: int, x_last: float, peak: float) -> None:
        """Plot ``index`` only (and the shared time axis, when ``x_last`` has left the step)."""
        if not self.following:
            return
        self._setting = True
        right = math.ceil((x_last + 1e-9) / X_STEP_S) * X_STEP_S
        if (max(0.0, right - X_WINDOW_S), right) != self._x:
            self._x = (max(0.0, right - X_WINDOW_S), right)
            self.plots[0].setXRange(*self._x, padding=0)
        top = self.fixed.get(index) or nice_ceiling(peak * 1.05)
        if top != self._tops[index]:
            self._tops[index] = top
            self.plots[index].setYRange(0, top, padding=0)
        self._setting = False

    def show_all(self, x_first: float, x_last: float) -> None:
        """The whole history in view, once; following stops."""
        self.following = False
        self.plots[0].setXRange(x_first, max(x_last, x_first + 1), padding=0.02)

    def resume(self) -> None:
        self.following = True
        self._x, self._tops = (0.0, 0.0), [0.0] * len(self.plots)

    def _on_range_changed_manually(self, *args) -> None:
        if not self._setting:
            self.following = False


def share_time_axis(first: pg.PlotItem, second: pg.PlotItem) -> None:
    """The two plots show the same seconds whichever of them moves. (pyqtgraph's ``setXLink`` maps
    a linked range through screen positions, which only holds for plots in one widget.)"""
    def copy(source: pg.PlotItem, target: pg.PlotItem):
        def on_range_changed(_, x_range):
            if tuple(target.getViewBox().viewRange()[0]) != tuple(x_range):
                target.setXRange(*x_range, padding=0)
        source.getViewBox().sigXRangeChanged.connect(on_range_changed)

    copy(first, second)
    copy(second, first)


def visible_peak(x: np.ndarray, columns: list[np.ndarray]) -> float:
    """The largest finite value of ``columns`` in the last :data:`X_WINDOW_S` of ``x``."""
    if not len(x):
        return 0.0
    start = int(np.searchsorted(x, x[-1] - X_WINDOW_S))
    values = [column[start:] for column in columns]
    peak = max((np.nanmax(v, initial=0.0) for v in values if np.isfinite(v).any()), default=0.0)
    return float(peak)


class PlotCanvas(pg.GraphicsLayoutWidget):
    """The plots' canvas: it asks for its least height (:meth:`setMinimumHeight`, from its rows of
    plots) and no width; what more a layout or a scroll area gives it, the plots take."""

    def sizeHint(self) -> QSize:
        return QSize(PREFERRED_WIDTH_PX, self.minimumHeight())


class LivePlotsWidget(QWidget):
    """A pane of live plots on the shared time axis: its plots' canvas, its Pause box, and how often
    it drew (the benchmarks read ``num_draws``)."""

    def __init__(self, object_name: str, time_origin: float):
        super().__init__()
        self.setObjectName(object_name)
        self.time_origin = time_origin
        self.pause = PauseState()
        self.num_draws = 0
        self.graphics = PlotCanvas()
        self.graphics.setBackground(BACKGROUND)
        self.paused = QCheckBox("Pause")
        self.paused.toggled.connect(self.pause.set_paused)
        self.marks: EngineMarks | None = None  # set by a pane that marks engine ends, once it has its plots

    def mark_engine_end(self, status: EngineStatus, at: float | None = None) -> None:
        """The engine left READY for ``status`` at ``at`` (``time.monotonic()``; None: now): a labelled
        line there; what was drawn stays."""
        if self.marks is not None:
            self.marks.add((time.monotonic() if at is None else at) - self.time_origin, engine_end_label(status))


def engine_end_label(status: EngineStatus) -> str:
    """What the mark says where the engine left READY for ``status``: "engine died: SIGKILL",
    "engine stopped", "restarted"."""
    if status.state is EngineState.DIED:
        return death_label(status.message)
    return "restarted" if status.state is EngineState.STARTING else f"engine {status.state.value}"


class KeptCurve:
    """The points of engines that ended, drawn as ``live`` draws them (its pen, no legend entry):
    :meth:`keep` moves the live curve's points here, a gap before them."""

    def __init__(self, plot: pg.PlotItem, live: pg.PlotDataItem):
        dots = {key: live.opts[key] for key in ("symbol", "symbolSize", "symbolBrush", "symbolPen")} \
            if live.opts.get("symbol") is not None else {}
        self.curve = plot.plot(pen=live.opts["pen"], connect="finite", **dots)
        self.curve.setClipToView(True)
        self.curve.setDownsampling(auto=True, method="peak")
        self.x, self.y = np.zeros(0), np.zeros(0)

    def keep(self, live: pg.PlotDataItem) -> None:
        x, y = live.getOriginalDataset()
        live.setData([], [])
        if x is None or not len(x):
            return
        self.x = np.concatenate([self.x, [x[0]], x])[-KEPT_POINTS:]  # a NaN point: no line from the last engine
        self.y = np.concatenate([self.y, [np.nan], y])[-KEPT_POINTS:]
        self.curve.setData(self.x, self.y)

    def peak_since(self, x_first: float) -> float:
        start = int(np.searchsorted(self.x, x_first))
        values = self.y[start:]
        return float(np.nanmax(values)) if np.isfinite(values).any() else 0.0

    def clear(self) -> None:
        self.x, self.y = np.zeros(0), np.zeros(0)
        self.curve.setData([], [])


class EngineMarks:
    """Vertical lines across ``plots`` at the moments an engine ended, each labelled ("engine died:
    SIGKILL"); a death in red, a stop or restart in grey."""

    def __init__(self, plots: list[pg.PlotItem]):
        self.plots = plots
        self.marks: list[tuple[float, str, list[pg.InfiniteLine]]] = []

    def add(self, x_s: float, label: str) -> None:
        colour = DIED_COLOUR if label.startswith("engine died") else ENDED_COLOUR
        font = QFont()
        font.setPointSize(MARK_FONT_PT)
        lines = []
        for plot in self.plots:
            # The label runs up along the line, on its left: the latest end is at the plot's right edge,
            # and the legend holds the top left.
            line = pg.InfiniteLine(pos=x_s, angle=90, movable=False, label=label,
                                   pen=pg.mkPen(colour, width=1.5, style=Qt.DashLine),
                                   labelOpts={"position": 0.5, "color": colour,
                                              "rotateAxis": (1, 0), "anchors": [(0.5, 1), (0.5, 1)]})
            line.label.setFont(font)
            plot.addItem(line, ignoreBounds=True)
            lines.append(line)
        self.marks.append((x_s, label, lines))
        if len(self.marks) > MAX_MARKS:
            self._remove(self.marks.pop(0))

    @property
    def last_x(self) -> float | None:
        return self.marks[-1][0] if self.marks else None

    def labels(self) -> list[str]:
        return [label for _, label, _ in self.marks]

    def clear(self) -> None:
        while self.marks:
            self._remove(self.marks.pop())

    def _remove(self, mark) -> None:
        for plot, line in zip(self.plots, mark[2]):
            plot.removeItem(line)
