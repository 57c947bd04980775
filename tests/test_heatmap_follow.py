"""Following a conversation in a large pool: the view zooms to its blocks at a legible size, outlines
them, remembers them after the request finishes, and leaves follow mode on a zoom by the mouse."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication

from workbench.bench.heatmap_cost import synthetic_snapshot
from workbench.engine.heatmap_follow import MIN_FOLLOW_CELL_PX, FollowedRequests, follow_range
from workbench.engine.heatmap_image import block_cells, grid_shape
from workbench.ui.kv_heatmap import KVHeatmapView
from workbench.ui.pg_setup import configure_pyqtgraph

FIRST = np.arange(30_000, 30_037, dtype=np.int32)  # 37 blocks, in one or two rows of the grid
SECOND = np.array([12, 40_000, 40_001, 65_000], dtype=np.int32)  # a later request, its blocks spread out


def with_tables(snapshot, version, **tables):
    return replace(snapshot, version=version, tables=tables)


@pytest.fixture
def view(qtbot):
    configure_pyqtgraph()
    view = KVHeatmapView()
    qtbot.addWidget(view)
    view.resize(300, 300)
    with qtbot.waitExposed(view):
        view.show()
    return view


def cell_px(view) -> float:
    box = view.plot.getViewBox()
    return box.size().width() / box.viewRect().width()


def in_view(view, block_ids) -> bool:
    shown = view.plot.getViewBox().viewRect()
    rows, columns = block_cells(view.grid, block_ids)
    return bool(np.all((columns >= shown.left()) & (columns + 1 <= shown.right() + 1e-6)
                       & (rows >= shown.top()) & (rows + 1 <= shown.bottom() + 1e-6)))


def whole_pool_shown(view) -> bool:
    _, rows, columns = view.grid
    shown = view.plot.getViewBox().viewRect()
    return shown.left() <= 1e-6 and shown.top() <= 1e-6 and shown.right() >= columns - 1e-6 \
        and shown.bottom() >= rows - 1e-6


def test_following_a_chat_in_a_65536_block_pool_zooms_to_its_blocks(qtbot, view):
    base = synthetic_snapshot(65_536)
    view.show_snapshot(with_tables(base, 3, r1=FIRST))
    assert cell_px(view) < 2  # the whole pool: a cell is about a pixel
    view.set_followed("Chat 2", ("r1",))
    assert not view.follow_button.isChecked() and whole_pool_shown(view)  # following is the user's choice
    button = view.findChild(type(view.follow_button), "kvFollowButton")
    button.click()
    qtbot.waitUntil(lambda: cell_px(view) >= MIN_FOLLOW_CELL_PX, timeout=2_000)
    assert in_view(view, FIRST)
    assert view.follow_status.text().startswith("following Chat 2: 37 blocks")
    outlined = view.outline.getData()
    rows, columns = block_cells(view.grid, FIRST)
    assert sorted(zip(outlined[1] - 0.5, outlined[0] - 0.5)) == sorted(zip(rows, columns))

    # A second request, its blocks far apart: the view goes to the newest block, where decoding writes.
    view.set_followed("Chat 2", ("r1", "r2"))
    view.show_snapshot(with_tables(base, 4, r1=FIRST, r2=SECOND))
    qtbot.waitUntil(lambda: in_view(view, SECOND[-1:]), timeout=2_000)
    assert cell_px(view) >= MIN_FOLLOW_CELL_PX and "41 blocks" in view.follow_status.text()

    # Both finish: their tables leave the snapshot; the view still shows where their blocks were.
    view.show_snapshot(with_tables(base, 5))
    assert "(finished)" in view.follow_status.text() and "41 blocks" in view.follow_status.text()
    assert len(view.outline.getData()[0]) == len(FIRST) + len(SECOND)


def wheel(view, steps: int = 1) -> None:
    viewport = view.plot.viewport()
    centre = QPointF(viewport.width() / 2, viewport.height() / 2)
    event = QWheelEvent(centre, viewport.mapToGlobal(centre), QPoint(0, 0), QPoint(0, 120 * steps),
                        Qt.NoButton, Qt.NoModifier, Qt.NoScrollPhase, False)
    QApplication.sendEvent(viewport, event)


def test_a_zoom_by_the_mouse_stops_following_and_fit_shows_the_whole_pool(qtbot, view):
    view.show_snapshot(with_tables(synthetic_snapshot(65_536), 3, r1=FIRST))
    view.set_followed("Chat 1", ("r1",))
    view.follow_button.setChecked(True)
    qtbot.waitUntil(lambda: cell_px(view) >= MIN_FOLLOW_CELL_PX, timeout=2_000)
    followed_px = cell_px(view)
    wheel(view)
    qtbot.waitUntil(lambda: not view.follow_button.isChecked(), timeout=2_000)
    assert cell_px(view) != pytest.approx(followed_px)  # the user's zoom is kept
    assert view.follow_status.text() == "" and len(view.outline.getData()[0]) == 0
    view.show_snapshot(with_tables(synthetic_snapshot(65_536, seed=1), 4, r1=FIRST[:10]))
    assert not view.follow_button.isChecked()  # new frames do not take the view back

    view.follow_button.setChecked(True)
    qtbot.waitUntil(lambda: in_view(view, FIRST[:10]) and cell_px(view) >= MIN_FOLLOW_CELL_PX, timeout=2_000)
    view.fit_button.click()
    assert not view.follow_button.isChecked() and whole_pool_shown(view)


def test_a_binned_pool_outlines_the_cells_that_hold_the_followed_blocks(qtbot, view):
    base = synthetic_snapshot(200_000)
    view.show_snapshot(with_tables(base, 3, r1=np.array([7, 8, 150_001], np.int32)))
    per_cell, _, columns = view.grid
    assert per_cell == 4
    view.set_followed("Batch", ("r1",))
    view.follow_button.setChecked(True)
    x, y = view.outline.getData()
    expected = {divmod(1, columns), divmod(2, columns), divmod(37_500, columns)}  # blocks 4-7, 8-11, 150,000-3
    assert set(zip((y - 0.5).astype(int), (x - 0.5).astype(int))) == expected
    assert view.describe_cell(*divmod(37_500, columns)).startswith("Blocks 150000–150003 (4 per cell)")


def test_followed_requests_keep_their_last_tables_and_the_range_stays_in_the_grid():
    followed = FollowedRequests()
    snapshot = synthetic_snapshot(1024)
    assert followed.describe(snapshot).startswith("nothing to follow")
    followed.set("Chat 1", ("a", "b"))
    assert followed.update(with_tables(snapshot, 3, a=np.array([5, 6], np.int32)))
    assert not followed.update(with_tables(snapshot, 4, a=np.array([5, 6], np.int32)))  # same blocks
    assert followed.newest_block() == 6
    followed.set("Chat 1", ("b",))  # a forgets "a"
    assert len(followed.block_ids) == 0
    grid = grid_shape(65_536, aspect=1.0)
    x, y, width, height = follow_range(grid, np.array([0], np.int32), 0, (300.0, 300.0))
    assert x == 0 and y == 0 and 300 / width >= MIN_FOLLOW_CELL_PX  # at the corner: kept inside the grid
