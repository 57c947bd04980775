"""What the heatmap follows: one conversation's requests, the blocks they own, and where to look.

No Qt: the widget (``ui/kv_heatmap.py``) outlines the cells and sets the view's range these give.
A request's block table leaves the snapshot when it finishes; the last one seen is kept, so that
the view can still show where its blocks were (cached now, or reused by another request).
"""
from __future__ import annotations

import numpy as np

from workbench.engine.heatmap_image import block_cells
from workbench.engine.kv_snapshot import (
    BLOCK_STATE_CACHED, BLOCK_STATE_FREE, BLOCK_STATE_SHARED, CHUNK_BLOCKS, NUM_BLOCK_STATES, KVSnapshot,
)

MIN_FOLLOW_CELL_PX = 8.0  # a followed cell is drawn at least this large: legible, easy to hover
MAX_FOLLOW_CELL_PX = 20.0  # and at most this large, so a short chat is seen among its neighbours
_NO_IDS = np.zeros(0, np.int32)


class FollowedRequests:
    """The followed conversation's name and requests, and the last block table seen of each."""

    def __init__(self):
        self.label = ""
        self.request_ids: tuple[str, ...] = ()
        self.last_tables: dict[str, np.ndarray] = {}  # request id -> its block ids when last seen
        self.live: frozenset[str] = frozenset()  # the requests whose tables the latest snapshot holds
        self.block_ids = _NO_IDS  # every followed block id, sorted, once each

    def set(self, label: str, request_ids: tuple[str, ...]) -> None:
        """Follows these requests from now on; what was seen of those still followed is kept."""
        self.label, self.request_ids = label, tuple(request_ids)
        self.last_tables = {r: ids for r, ids in self.last_tables.items() if r in self.request_ids}
        self.live = self.live & set(self.request_ids)
        self._join()

    def update(self, snapshot: KVSnapshot) -> bool:
        """Takes the followed requests' tables from ``snapshot``; True where the followed blocks changed.
        Costs a dict look-up a request: unchanged tables are the snapshots' shared arrays."""
        changed = False
        live = set()
        for request_id in self.request_ids:
            table = snapshot.tables.get(request_id)
            if table is None:
                continue
            live.add(request_id)
            if self.last_tables.get(request_id) is not table:
                changed = changed or not np.array_equal(self.last_tables.get(request_id, _NO_IDS), table)
                self.last_tables[request_id] = table
        self.live = frozenset(live)
        if changed:
            self._join()
        return changed

    def _join(self) -> None:
        tables = [ids for ids in self.last_tables.values() if len(ids)]
        self.block_ids = np.unique(np.concatenate(tables)) if tables else _NO_IDS

    def newest_block(self) -> int | None:
        """The end of the newest request's block table: where decoding writes next."""
        for request_id in reversed(self.request_ids):
            table = self.last_tables.get(request_id)
            if table is not None and len(table):
                return int(table[-1])
        return None

    def describe(self, snapshot: KVSnapshot | None, image_block_ids: np.ndarray = _NO_IDS) -> str:
        """One line: what is followed and the state of its blocks ("following Chat 2: 37 blocks, 12 shared,
        3 with image tokens"; ``image_block_ids``: the blocks marked as holding image tokens, sorted)."""
        if not self.label:
            return "nothing to follow: no conversation selected"
        if snapshot is None or not len(self.block_ids):
            return f"following {self.label}: no blocks yet"
        ids = self.block_ids[self.block_ids < snapshot.num_blocks]
        counts = np.bincount(_states_of(snapshot, ids), minlength=NUM_BLOCK_STATES)
        num_image = int(np.isin(ids, image_block_ids, assume_unique=True).sum()) if len(image_block_ids) else 0
        images = f", {num_image:,} with image tokens" if num_image else ""
        if self.live:
            return f"following {self.label}: {len(ids):,} blocks, {counts[BLOCK_STATE_SHARED]:,} shared{images}"
        reused = len(ids) - counts[BLOCK_STATE_CACHED] - counts[BLOCK_STATE_FREE]
        return (f"following {self.label} (finished): its {len(ids):,} blocks are now "
                f"{counts[BLOCK_STATE_CACHED]:,} cached, {counts[BLOCK_STATE_FREE]:,} free, {reused:,} reused{images}")


def _states_of(snapshot: KVSnapshot, block_ids: np.ndarray) -> np.ndarray:
    """The states of a few blocks (sorted ids): read from their chunk where one holds them all (a
    chat's blocks, mostly), so that the snapshot's whole array is not joined for a frame."""
    if not len(block_ids):
        return block_ids.astype(np.int8)
    first, last = int(block_ids[0]) // CHUNK_BLOCKS, int(block_ids[-1]) // CHUNK_BLOCKS
    if first == last:
        return snapshot.chunks["states"][first][block_ids - first * CHUNK_BLOCKS]
    return snapshot.states[block_ids]


def follow_range(grid: tuple[int, int, int], block_ids: np.ndarray, newest: int | None,
                 view_px: tuple[float, float]) -> tuple[float, float, float, float]:
    """The part of the grid to show (x, y, width, height, in cells) for the view's size in pixels:
    the followed blocks' cells at MIN_ to MAX_FOLLOW_CELL_PX pixels a cell or, where they span more
    than fits at the minimum, that size centred on the ``newest`` block; never less than the whole
    grid where the whole grid's cells are larger already."""
    per_cell, rows, columns = grid
    width_px, height_px = view_px
    cell_rows, cell_columns = block_cells(grid, block_ids)
    top, bottom = int(cell_rows.min()), int(cell_rows.max()) + 1
    left, right = int(cell_columns.min()), int(cell_columns.max()) + 1
    fit_px = min(width_px / (right - left), height_px / (bottom - top))
    whole_px = min(width_px / columns, height_px / rows)
    cell_px = max(whole_px, min(max(fit_px, MIN_FOLLOW_CELL_PX), MAX_FOLLOW_CELL_PX))
    if fit_px >= cell_px or newest is None:
        centre = ((left + right) / 2, (top + bottom) / 2)
    else:
        row, column = divmod(newest // per_cell, columns)
        centre = (column + 0.5, row + 0.5)
    width, height = width_px / cell_px, height_px / cell_px
    return (_start(centre[0], width, columns), _start(centre[1], height, rows), width, height)


def _start(centre: float, span: float, size: int) -> float:
    """Where a span around ``centre`` starts, kept inside 0..size (centred where it is larger)."""
    if span >= size:
        return (size - span) / 2
    return min(max(centre - span / 2, 0.0), size - span)
