"""pyqtgraph's process-wide options, set once when the GUI starts (before any plot is made)."""
from __future__ import annotations

import pyqtgraph as pg


def configure_pyqtgraph() -> None:
    """Images are indexed [row, column], as numpy lays them out: the heatmap's image is
    ``(rows, columns)`` and a cell under the pointer is (y, x). Safe to call more than once."""
    pg.setConfigOptions(imageAxisOrder="row-major")
