"""What every live plot shares: curves drawn from ring buffers with clipping to the view and peak
downsampling, seconds on one time axis, and pausing (the curves keep their data; zoom stays free)."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from workbench.engine.ring_buffer import Series

BACKGROUND = "#1e1f22"


def live_curve(plot: pg.PlotItem, colour: str, name: str, width: float = 1.5) -> pg.PlotDataItem:
    """A curve for a series that grows: only what is in view is drawn, peaks kept when thinned;
    NaN (no figure for that point) leaves a gap."""
    curve = plot.plot(pen=pg.mkPen(colour, width=width), name=name, connect="finite")
    curve.setClipToView(True)
    curve.setDownsampling(auto=True, method="peak")
    return curve


def time_plot(plot: pg.PlotItem, title: str, unit: str = "") -> pg.PlotItem:
    """Labels a plot of the shared time axis (seconds since the window opened)."""
    plot.setTitle(title, size="9pt")
    plot.setLabel("left", unit)
    plot.showGrid(x=True, y=True, alpha=0.2)
    plot.addLegend(offset=(4, 4), labelTextSize="7pt", verSpacing=-6)
    plot.setMenuEnabled(True)
    return plot


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
