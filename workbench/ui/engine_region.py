"""The window's right-hand region: what the engine does and the panels that change how it runs.

Its first tab, "Engine", holds the KV-cache heatmap (or, for an attached server, the prefix-cache
view in its place) above the live plots and the memory panel, which scroll as one column; the
panels (Presets, Server) are tabs beside it, each in a scroll area that scrolls only up and down:
a panel lays itself out in the region's width (its tables' columns share it, long values elide), so
no tab needs a horizontal scroll bar at a 1280-pixel screen.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QScrollArea, QSplitter, QStackedWidget, QTabWidget, QVBoxLayout, QWidget

from workbench.ui.scrolling import scrolling

HEAT_AREA_SHARE = 0.66  # of the Engine tab's height, the heatmap's; the plots and memory scroll below


def panel_area(widget: QWidget) -> QScrollArea:
    """A panel in a scroll area (``ui.scrolling``) that follows the region's width, named after it: it
    scrolls when taller than the region, and only shows a horizontal bar when the region is made
    narrower than the panel's minimum."""
    area = scrolling(widget)
    area.setObjectName(f"{widget.objectName() or 'panel'}Area")
    return area


class EngineRegion(QTabWidget):
    """The engine region's tabs; the window adds the panels (:meth:`add_panel`)."""

    def __init__(self, heatmap: QWidget, plots: QWidget, memory: QWidget):
        super().__init__(objectName="engineRegion")
        self.heatmap = heatmap
        self.heat_area = QStackedWidget(objectName="heatArea")  # the heatmap, or a server's prefix-cache view
        self.heat_area.addWidget(heatmap)
        monitors = QWidget(objectName="monitors")
        column = QVBoxLayout(monitors)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(plots, 3)
        column.addWidget(memory, 2)
        self.monitors = panel_area(monitors)
        # the plots follow the width; a region made narrower than the bar above them scrolls across, hiding nothing
        self.splitter = QSplitter(Qt.Vertical, objectName="engineSplitter")  # named: its sizes are remembered
        self.splitter.addWidget(self.heat_area)
        self.splitter.addWidget(self.monitors)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.addTab(self.splitter, "Engine")
        self.panels: dict[str, QScrollArea] = {}

    def add_panel(self, title: str, panel: QWidget) -> QScrollArea:
        area = panel_area(panel)
        self.panels[title] = area
        self.addTab(area, title)
        return area

    def show_panel(self, title: str) -> None:
        self.setCurrentWidget(self.panels[title])

    def show_engine(self) -> None:
        self.setCurrentWidget(self.splitter)

    def show_in_heat_area(self, widget: QWidget | None) -> None:
        """``widget`` in the heatmap's place (a server's prefix-cache view); None: the heatmap again."""
        if widget is not None and self.heat_area.indexOf(widget) < 0:
            self.heat_area.addWidget(widget)
        self.heat_area.setCurrentWidget(widget if widget is not None else self.heatmap)

    def share_heights(self) -> None:
        """The heatmap takes :data:`HEAT_AREA_SHARE` of the tab's height (a first window; the user's own
        sizes are kept by the window's layout)."""
        total = max(1, self.splitter.height())
        heat = round(total * HEAT_AREA_SHARE)
        self.splitter.setSizes([heat, total - heat])
