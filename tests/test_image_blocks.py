"""The heatmap's image marks without an engine: a snapshot's image spans cross the engine-client pipe with
their tables, the blocks holding an image's tokens are hatched (and stay so while cached after the request
ends, until the block is reused), the hover names the owner, the image and its tokens, and a pool of
640,000 blocks is marked without its whole arrays being joined."""
from __future__ import annotations

import numpy as np
import pytest
from test_client_wire import _delta, _over_the_pipe

from workbench.engine.client_wire import SnapshotDecoder, SnapshotEncoder
from workbench.engine.heatmap_image import grid_shape
from workbench.engine.image_blocks import ImageBlocks, hatch_lines
from workbench.engine.images import ImageSpan
from workbench.engine.kv_snapshot import KVPoolMirror
from workbench.ui.kv_heatmap import KVHeatmapView
from workbench.ui.pg_setup import configure_pyqtgraph

CAT = ImageSpan(index=0, offset=12, length=20, mm_hash="cat")  # tokens 12-31: the table's blocks 0 and 1
DOG = ImageSpan(index=1, offset=40, length=20, mm_hash="dog")  # tokens 40-59: blocks 2 and 3
LABELS = {"r1": "Chat 2", "r2": "Chat 3", "r9": "Batch row 4 (line 5)"}
NAMES = {"r1": ("cat.png", "dog.png"), "r2": ("cat.png",)}


def _pool(num_blocks: int = 64) -> KVPoolMirror:
    mirror = KVPoolMirror()
    mirror.apply(_delta(1, True, num_blocks, np.arange(num_blocks), np.ones(num_blocks)))
    return mirror


def _with_first_request(mirror: KVPoolMirror, first_block: int = 10):
    ids = list(range(first_block, first_block + 5))
    mirror.apply(_delta(2, False, mirror.states.size, ids, [3] * 5, tables=[("engine-1", 0, ids)]))
    return mirror.snapshot({"engine-1": "r1"}, 1.0, image_spans={"r1": (CAT, DOG), "gone": (CAT,)})


@pytest.fixture
def view(qtbot):
    configure_pyqtgraph()
    view = KVHeatmapView(owner_name=lambda r: LABELS.get(r, r), image_names=lambda r: NAMES.get(r, ()))
    qtbot.addWidget(view)
    view.resize(320, 320)
    with qtbot.waitExposed(view):
        view.show()
    return view


def hatched_cells(view) -> set[tuple[int, int]]:
    """(row, column) of each cell the hatch crosses: its first line starts at the cell's (left, middle)."""
    x, y = view.image_marks.getData()
    if x is None:
        return set()
    return {(int(row), int(column)) for column, row in zip(x[0::6], y[0::6])}


def cells_of(view, block_ids) -> set[tuple[int, int]]:
    per_cell, _, columns = view.grid
    return {divmod(b // per_cell, columns) for b in block_ids}


def test_spans_kept_for_the_requests_in_the_snapshot_and_sent_once_with_their_table():
    mirror = _pool()
    snapshot = _with_first_request(mirror)
    assert dict(snapshot.image_spans) == {"r1": (CAT, DOG)}, "only requests whose tables the snapshot holds"
    encoder, decoder = SnapshotEncoder(), SnapshotDecoder()
    update = _over_the_pipe(encoder.encode(snapshot))
    assert update.image_spans == {"r1": (CAT, DOG)}
    assert dict(decoder.decode(update).image_spans) == {"r1": (CAT, DOG)}
    mirror.apply(_delta(3, False, 64, [30], [3], tables=[("engine-2", 0, [30])]))
    second = mirror.snapshot({"engine-1": "r1", "engine-2": "r2"}, 1.0, image_spans={"r1": (CAT, DOG)})
    update = _over_the_pipe(encoder.encode(second))
    assert update.image_spans == {}, "spans already sent are not sent again"
    assert dict(decoder.decode(update).image_spans) == {"r1": (CAT, DOG)}, "kept with the table"
    mirror.apply(_delta(4, False, 64, [10], [2], removed=["engine-1"]))
    third = decoder.decode(_over_the_pipe(encoder.encode(mirror.snapshot({"engine-2": "r2"}, 1.0))))
    assert dict(third.image_spans) == {}, "a request's spans leave with its table"


def test_an_images_blocks_are_its_tables_blocks_at_the_spans_token_range():
    blocks = ImageBlocks()
    assert blocks.update(_with_first_request(_pool()))
    assert blocks.block_ids.tolist() == [10, 11, 12, 13], "tokens 12-31 and 40-59 of blocks of 16"
    assert [(i.request_id, i.span.mm_hash, i.live) for i in blocks.images_at(11)] == [("r1", "cat", True)]
    assert [(i.request_id, i.span.mm_hash) for i in blocks.images_at(12)] == [("r1", "dog")]
    assert blocks.images_at(14) == [], "the table's last block holds text only"


def test_the_view_hatches_image_blocks_and_the_hover_names_owner_image_and_tokens(view):
    view.show_snapshot(_with_first_request(_pool()))
    assert hatched_cells(view) == cells_of(view, [10, 11, 12, 13])
    row, column = divmod(11 // view.grid[0], view.grid[2])
    text = view.describe_cell(row, column)
    assert "Chat 2 · cat.png, tokens 12–31 of the prompt" in text
    row, column = divmod(13 // view.grid[0], view.grid[2])
    assert "Chat 2 · dog.png, tokens 40–59 of the prompt" in view.describe_cell(row, column)
    row, column = divmod(14 // view.grid[0], view.grid[2])
    assert "image" not in view.describe_cell(row, column)
    assert "image&nbsp;tokens" in view.legend.text()


def test_a_second_request_with_the_same_image_shares_its_blocks_still_marked(view):
    mirror = _pool()
    view.show_snapshot(_with_first_request(mirror))
    # the second request's prefix (the same image at the same place) hits the first one's blocks 10 and 11
    mirror.apply(_delta(3, False, 64, [10, 11, 40], [4, 4, 3], tables=[("engine-2", 0, [10, 11, 40])]))
    view.show_snapshot(mirror.snapshot({"engine-1": "r1", "engine-2": "r2"}, 1.0,
                                       image_spans={"r1": (CAT, DOG), "r2": (CAT,)}))
    assert hatched_cells(view) == cells_of(view, [10, 11, 12, 13])
    row, column = divmod(10 // view.grid[0], view.grid[2])
    text = view.describe_cell(row, column)
    assert "state: shared" in text
    assert "Chat 3 · cat.png, tokens 12–31 of the prompt, shared with Chat 2" in text


def test_a_finished_requests_image_blocks_stay_marked_while_cached_reused_by_the_same_image(view):
    mirror = _pool()
    view.show_snapshot(_with_first_request(mirror))
    mirror.apply(_delta(3, False, 64, list(range(10, 15)), [2] * 5, removed=["engine-1"]))
    view.show_snapshot(mirror.snapshot({}, 1.0, image_spans={}))
    assert hatched_cells(view) == cells_of(view, [10, 11, 12, 13]), "cached: reusable by the same image"
    row, column = divmod(10 // view.grid[0], view.grid[2])
    assert "Chat 2 · cat.png, tokens 12–31 of the prompt (finished; cached" in view.describe_cell(row, column)
    # a later request with the same picture at the same place takes block 10 from the prefix cache
    mirror.apply(_delta(4, False, 64, [10, 50], [3, 3], tables=[("engine-2", 0, [10, 50])]))
    view.show_snapshot(mirror.snapshot({"engine-2": "r2"}, 1.0, image_spans={"r2": (CAT,)}))
    assert hatched_cells(view) == cells_of(view, [10, 11, 12, 13, 50])
    assert "Chat 3 · cat.png, tokens 12–31 of the prompt, reused from the prefix cache (Chat 2)" in \
        view.describe_cell(row, column)
    # block 11 evicted and filled by a request without images: its mark goes, the others stay
    mirror.apply(_delta(5, False, 64, [11], [3], tables=[("engine-9", 0, [11])]))
    view.show_snapshot(mirror.snapshot({"engine-2": "r2", "engine-9": "r9"}, 1.0, image_spans={"r2": (CAT,)}))
    assert hatched_cells(view) == cells_of(view, [10, 12, 13, 50])
    row, column = divmod(11 // view.grid[0], view.grid[2])
    assert "image" not in view.describe_cell(row, column)


def test_a_640000_block_pool_marks_binned_cells_without_joining_its_arrays(view):
    num_blocks = 640_000
    mirror = _pool(num_blocks)
    ids = [500_000, 500_001, 500_002, 500_003, 500_004]
    mirror.apply(_delta(2, False, num_blocks, ids, [3] * 5, tables=[("engine-1", 0, ids)]))
    snapshot = mirror.snapshot({"engine-1": "r1"}, 1.0, image_spans={"r1": (CAT, DOG)})
    view.show_snapshot(snapshot)
    assert view.grid[0] > 1, "binned: several blocks a cell"
    assert hatched_cells(view) == cells_of(view, ids[:4])
    assert not {"states", "changed_at"} & set(vars(snapshot)), "the marks read only the chunks they need"
    row, column = divmod(500_000 // view.grid[0], view.grid[2])
    assert "image tokens in" in view.describe_cell(row, column) and "Chat 2" in view.describe_cell(row, column)


def test_hatch_lines_cross_each_marked_cell_once():
    grid = grid_shape(1000)
    x, y = hatch_lines(grid, np.array([3, 3, 7]))
    assert len(x) == len(y) == 2 * 6, "three segments, two points each, for each of two cells"


def test_the_reports_heatmap_picture_hatches_running_image_blocks():
    from PySide6.QtGui import QImage

    from workbench.export.report import PICTURE_SCALE
    from workbench.ui.heatmap_picture import GRID_ASPECT, MARGIN_PX, heatmap_caption, heatmap_png
    from workbench.ui.live_plot import window_font

    snapshot = _with_first_request(_pool(1024))
    image = QImage.fromData(heatmap_png(snapshot, window_font()))
    _, rows, columns = grid_shape(1024, aspect=GRID_ASPECT)
    margin = MARGIN_PX * PICTURE_SCALE
    cell = (image.width() - 2 * margin) // columns

    def dark_pixels(block: int) -> int:
        row, column = divmod(block, columns)
        return sum(max(image.pixelColor(margin + column * cell + dx, margin + row * cell + dy).getRgb()[:3]) < 60
                   for dx in range(1, cell - 1) for dy in range(1, cell - 1))

    assert dark_pixels(11) > cell, "an image block: hatched"
    assert dark_pixels(14) == 0, "the same state, text only: not hatched"
    assert "Hatched: the 4 blocks holding images' tokens." in heatmap_caption(snapshot)


def test_a_finished_rows_images_keep_their_names_for_the_hover_the_oldest_let_go_past_the_bound():
    from workbench.engine.requests import GONE_WITH_IMAGES, Owner, RequestRegistry

    registry = RequestRegistry()
    registry.add("run1-0", Owner("batch", "run1", "0", "Batch row 1", ("cat.png", "dog.webp")))
    registry.add("run1-1", Owner("batch", "run1", "1", "Batch row 2"))
    registry.discard("run1-0")  # its request ended: the results hold its figures
    registry.discard("run1-1")
    assert registry.get("run1-0") is None and len(registry) == 0
    assert registry.image_names("run1-0") == ("cat.png", "dog.webp") and registry.label("run1-0") == "Batch row 1"
    assert registry.image_names("run1-1") == () and registry.label("run1-1") == "run1-1"  # no images: not kept
    for row in range(2, GONE_WITH_IMAGES + 2):
        registry.add(f"run1-{row}", Owner("batch", "run1", str(row), f"Batch row {row + 1}", ("p.png",)))
        registry.discard(f"run1-{row}")
    assert registry.image_names("run1-0") == () and registry.image_names(f"run1-{GONE_WITH_IMAGES + 1}") == ("p.png",)
