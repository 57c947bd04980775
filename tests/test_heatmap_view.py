"""The heatmap view's grid follows its shape, with the real view and a snapshot from the mirror."""
from __future__ import annotations

import numpy as np

from workbench.bench.heatmap_cost import synthetic_snapshot
from workbench.ui.kv_heatmap import KVHeatmapView


def test_the_grid_follows_the_views_shape_and_the_cells_still_name_their_blocks(qtbot):
    view = KVHeatmapView()
    qtbot.addWidget(view)
    view.resize(300, 900)
    view.show()
    qtbot.waitExposed(view)
    snapshot = synthetic_snapshot(1024, seed=1)
    view.show_snapshot(snapshot)
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
