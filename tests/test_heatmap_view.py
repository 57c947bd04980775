"""The heatmap view's grid follows its shape and fills it with square cells, with the real view and
snapshots from the mirror; its legend and summary stay legible in a narrow view."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QPalette

from workbench.bench.heatmap_cost import synthetic_snapshot
from workbench.engine.heatmap_image import NO_BLOCK, NO_BLOCK_TEXT
from workbench.engine.kv_snapshot import BLOCK_STATE_NAMES
from workbench.ui.kv_heatmap import KVHeatmapView
from workbench.ui.pg_setup import configure_pyqtgraph


@pytest.fixture
def view(qtbot):
    configure_pyqtgraph()
    view = KVHeatmapView()
    qtbot.addWidget(view)
    return view


def shown(qtbot, view, width, height, snapshot):
    view.resize(width, height)
    with qtbot.waitExposed(view):
        view.show()
    view.show_snapshot(snapshot)
    return view


def test_the_grid_follows_the_views_shape_and_the_cells_still_name_their_blocks(qtbot, view):
    snapshot = synthetic_snapshot(1024, seed=1)
    shown(qtbot, view, 300, 900, snapshot)
    _, rows, columns = view.grid
    assert rows > 2 * columns, view.grid  # a tall view: a tall grid
    assert view.image.image.shape == (rows, columns)

    view.resize(1200, 300)
    qtbot.waitUntil(lambda: view.grid[2] > 2 * view.grid[1], timeout=2_000)  # wide now
    _, rows, columns = view.grid
    assert view.image.image.shape == (rows, columns)
    cells = np.zeros(rows * columns, np.int64)
    cells[:1024] = snapshot.states
    assert np.array_equal(view.image.image.ravel() % 5, cells)  # the same blocks, laid out anew
    last = divmod(1023, columns)
    assert "block 1023" in view.describe_cell(*last).lower()


def cell_px(view) -> tuple[float, float]:
    """Pixels a cell takes across and down, as drawn."""
    box = view.plot.getViewBox()
    shown_range = box.viewRect()
    return box.size().width() / shown_range.width(), box.size().height() / shown_range.height()


@pytest.mark.parametrize("size", [(300, 300), (600, 380), (1900, 900)])
@pytest.mark.parametrize("num_blocks", [1024, 65_536, 120_000])
def test_square_cells_fill_the_view_and_what_is_left_is_the_windows_colour(qtbot, view, size, num_blocks):
    shown(qtbot, view, *size, synthetic_snapshot(num_blocks))
    _, rows, columns = view.grid
    across, down = cell_px(view)
    assert across == pytest.approx(down, rel=1e-3)  # square
    box = view.plot.getViewBox().size()
    left_across, left_down = box.width() - columns * across, box.height() - rows * down
    assert -1e-6 < left_across < across and -1e-6 < left_down < down, (view.grid, box)  # less than a cell
    window = view.palette().color(QPalette.Window)
    assert view.plot.backgroundBrush().color() == window  # not black
    if num_blocks < rows * columns * view.grid[0]:  # the bottom right cell is past the pool's end
        view.image.render()
        assert view.image.qimage.pixelColor(columns - 1, rows - 1) == window


def test_the_cells_past_the_pools_end_are_no_block_and_say_so(qtbot, view):
    snapshot = synthetic_snapshot(1000, seed=2)
    shown(qtbot, view, 600, 380, snapshot)
    per_cell, rows, columns = view.grid
    cells = view.image.image.ravel()
    assert rows * columns > 1000 and per_cell == 1
    assert np.all(cells[1000:] == NO_BLOCK) and np.all(cells[:1000] < NO_BLOCK)
    assert view.describe_cell(rows - 1, columns - 1) == NO_BLOCK_TEXT
    assert view.describe_cell(*divmod(999, columns)).startswith("Block 999")
    assert view.describe_cell(0, columns) == "" and view.describe_cell(rows, 0) == ""  # outside the grid


def test_at_300_px_the_legend_wraps_whole_and_the_summary_keeps_to_two_lines(qtbot, view):
    shown(qtbot, view, 300, 300, synthetic_snapshot(65_536))
    qtbot.waitUntil(lambda: view.legend.height() >= view.legend.heightForWidth(view.legend.width()), timeout=2_000)
    legend = view.legend
    line = legend.fontMetrics().lineSpacing()
    assert legend.width() <= 300 and legend.geometry().right() < view.width()
    assert 2 * line <= legend.heightForWidth(legend.width()) <= 3 * line + 4  # two or three lines, none cut
    assert legend.font() == view.font()  # the window's font size
    text = legend.text().replace("&nbsp;", " ")
    for name in (*BLOCK_STATE_NAMES, "no block", "(bright: changed)"):
        assert name in text, name
    assert view.fit_button.isVisible() and view.fit_button.geometry().right() <= view.width()
    summary_height = view.summary.height()
    assert summary_height <= 2 * view.summary.fontMetrics().lineSpacing()
    assert "\n" in view.summary.text() and "free of 65,536 blocks" in view.summary.text()
    assert "token occupancy" in view.summary.toolTip()  # the full figures
    view.summary.setText("a much longer line than fits " * 10 + "\nand another one " * 10)
    assert view.summary.height() == summary_height  # cut, not grown


def test_the_view_can_be_narrow_and_asks_for_a_sensible_size(view):
    assert view.minimumSizeHint().width() <= 300
    assert view.sizeHint().width() >= 400 and view.sizeHint().height() >= 300
