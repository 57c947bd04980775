"""The live plots' grid: as many columns as the width holds, each plot at least a readable height.

The plots are laid out again only when the number of columns changes (a resize that crosses one of
:data:`COLUMN_BREAKS_PX`), never as data comes: removing and adding six plot items costs a few
milliseconds once, where a layout per frame would cost that every frame. The canvas states a
minimum height (its rows of plots, each view box at least :data:`MIN_VIEW_HEIGHT_PX` tall) and no
minimum width: a scroll area around it scrolls down instead of squashing the plots into slivers.
"""
from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import Qt

COLUMN_BREAKS_PX = (560, 1200)  # at this width or more: one column more (1 below 560, 2 to 1199, 3 above)
MIN_VIEW_HEIGHT_PX = 110  # a view box's least height: the curves, not counting title and axes
LEGEND_ENTRY_PX = 160  # one legend entry's room: its line sample and the longest name at 9 pt
AXIS_ROOM_PX = 60  # of a plot's width, what its left axis and margins take


def columns_for(width_px: int) -> int:
    """How many columns of plots ``width_px`` holds."""
    return 1 + sum(width_px >= at for at in COLUMN_BREAKS_PX)


def legend_columns(plot_width_px: float, num_entries: int) -> int:
    """How many columns a legend of ``num_entries`` takes in a plot ``plot_width_px`` wide: all in one
    row where they fit, else rows of equal length (two of two for four curves), one column at the least."""
    fits = max(1, int((plot_width_px - AXIS_ROOM_PX) // LEGEND_ENTRY_PX))
    return num_entries if fits >= num_entries else max(1, min(fits, math.ceil(num_entries / 2)))


def fit_legend(plot: pg.PlotItem, plot_width_px: float) -> None:
    """Lays ``plot``'s legend out in the columns its width holds; nothing when that is how it lies."""
    legend = plot.legend
    if legend is not None and legend.items:
        legend.setColumnCount(legend_columns(plot_width_px, len(legend.items)))  # a no-op when unchanged


def hold_min_height(graphics: pg.GraphicsLayoutWidget) -> int:
    """Gives ``graphics`` the least height its layout needs (each view box's minimum, plus titles and
    axes); returns it."""
    height = math.ceil(graphics.ci.effectiveSizeHint(Qt.MinimumSize).height())
    graphics.setMinimumHeight(height)
    return height


class PlotGrid:
    """``plots`` in rows of :func:`columns_for` the canvas's width, or of a pinned number of columns."""

    def __init__(self, graphics: pg.GraphicsLayoutWidget, plots: list[pg.PlotItem]):
        self.graphics = graphics
        self.plots = plots
        self.columns = 0  # none laid out yet
        self.pinned: int | None = None
        for plot in plots:
            plot.getViewBox().setMinimumHeight(MIN_VIEW_HEIGHT_PX)

    @property
    def rows(self) -> int:
        return math.ceil(len(self.plots) / max(self.columns, 1))

    def set_plots(self, plots: list[pg.PlotItem]) -> None:
        """Lays out ``plots`` instead (a plot shown once the engine reports its figures, or hidden again)."""
        layout = self.graphics.ci
        for plot in self.plots:
            if plot in layout.items:
                layout.removeItem(plot)
        self.plots = plots
        for plot in plots:
            plot.getViewBox().setMinimumHeight(MIN_VIEW_HEIGHT_PX)
        self.columns = 0
        self.fit(self.graphics.width())

    def pin(self, columns: int | None) -> None:
        """Always ``columns`` columns (a picture for the report); None: as many as the width holds."""
        self.pinned = columns
        self.fit(self.graphics.width())

    def fit(self, width_px: int) -> bool:
        """Lays the plots out in the columns ``width_px`` holds if that is not how they lie; True if it did."""
        columns = self.pinned or columns_for(width_px)
        for plot in self.plots:
            fit_legend(plot, width_px / columns)
        if columns == self.columns:
            return False
        layout = self.graphics.ci
        for plot in self.plots:
            if plot in layout.items:
                layout.removeItem(plot)
        for index, plot in enumerate(self.plots):
            row, column = divmod(index, columns)
            layout.addItem(plot, row=row, col=column)
        self.columns = columns
        hold_min_height(self.graphics)
        return True
