"""Exporting one plot as PNG or SVG (pyqtgraph's exporters), and the menu actions that ask where."""
from __future__ import annotations

import importlib
from pathlib import Path

import pyqtgraph as pg
import pyqtgraph.exporters as exporters
from PySide6.QtWidgets import QFileDialog, QWidget

FORMATS = {".png": "PNG image (*.png)", ".svg": "SVG drawing (*.svg)"}


def _closed_paths_kept(correct):
    """pyqtgraph 0.14.0's SVG exporter fails on every plot with Qt 6: Qt writes the view box's
    outline as a closed path ("M0,0 L... Z") and the exporter's coordinate fix-up cannot parse the
    "Z" (pyqtgraph issue #3495, fixed after 0.14.0). The close command is taken off before the
    fix-up and put back after it."""
    def correct_coordinates(node, defs, item, options):
        closed = []
        for path in node.getElementsByTagName("path"):
            tokens = path.getAttribute("d").split()
            if "Z" in tokens:
                path.setAttribute("d", " ".join(t for t in tokens if t != "Z"))
                closed.append(path)
        correct(node, defs, item, options)
        for path in closed:
            path.setAttribute("d", path.getAttribute("d").strip() + " Z")

    correct_coordinates.keeps_closed_paths = True
    return correct_coordinates


_svg_module = importlib.import_module("pyqtgraph.exporters.SVGExporter")
if not getattr(getattr(_svg_module, "correctCoordinates", None), "keeps_closed_paths", False):
    _svg_module.correctCoordinates = _closed_paths_kept(_svg_module.correctCoordinates)


def export_plot(plot: pg.PlotItem, path: str | Path, width_px: int = 1200) -> Path:
    """Writes ``plot`` to ``path``; the suffix (.png or .svg) picks the format. Returns the path."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".png":
        exporter = exporters.ImageExporter(plot)
        exporter.parameters()["width"] = width_px
    elif suffix == ".svg":
        exporter = exporters.SVGExporter(plot)
    else:
        raise ValueError(f"{path.name}: plots export as .png or .svg")
    exporter.export(str(path))
    return path


def ask_and_export(parent: QWidget, plot: pg.PlotItem, name: str, suffix: str) -> Path | None:
    """A save dialog for ``plot`` in the format of ``suffix``; None when the person cancels."""
    chosen, _ = QFileDialog.getSaveFileName(parent, f"Export the {name} plot", f"{name}{suffix}", FORMATS[suffix])
    if not chosen:
        return None
    if not chosen.lower().endswith(suffix):
        chosen += suffix
    return export_plot(plot, chosen)


def add_export_actions(parent: QWidget, plot: pg.PlotItem, name: str) -> None:
    """"Export as PNG…" and "Export as SVG…" in the plot's own right-click menu."""
    menu = plot.getViewBox().menu
    menu.addSeparator()
    for suffix, label in ((".png", "Export as PNG…"), (".svg", "Export as SVG…")):
        action = menu.addAction(label)
        action.triggered.connect(lambda _=False, s=suffix: ask_and_export(parent, plot, name, s))
