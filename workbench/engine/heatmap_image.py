"""The heatmap's picture of a block pool, in numpy: cell grid, binned image, colours, hover text.

No Qt: the widget (``ui/kv_heatmap.py``) draws what these functions compute, and the benchmarks time
them without a display. Pools larger than the cell budget are binned: a binned cell shows the
most-used state of its blocks (the state codes are ordered so that this is their maximum). Blocks
that changed since the previous frame take a brighter shade of their state. The cells after the pool's
last block (the last row's tail) hold no block and have a value of their own, :data:`NO_BLOCK`.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import Callable

import numpy as np

from workbench.engine.kv_snapshot import BLOCK_STATE_NAMES, NUM_BLOCK_STATES, KVSnapshot

STATE_COLOURS = [  # null, free, cached, in use, shared
    (40, 40, 40), (225, 228, 232), (96, 165, 250), (245, 158, 11), (220, 38, 38),
]
CHANGED_COLOURS = [  # the same states, highlighted: changed since the last frame
    (90, 90, 90), (255, 255, 255), (30, 64, 255), (255, 214, 0), (255, 0, 128),
]
NO_BLOCK = 2 * NUM_BLOCK_STATES  # past the pool's end; above every state and highlight (state + NUM_BLOCK_STATES)
NO_BLOCK_COLOUR = (255, 255, 255)  # the background it is drawn on: a page's white; the widget gives its own
NO_BLOCK_TEXT = "no block (past the pool's end)"
MAX_CELLS = 256 * 256
MIN_ASPECT = 0.25  # the grid follows the view's shape from 1:4 to 4:1


def colour_table(no_block: tuple[int, int, int] = NO_BLOCK_COLOUR) -> np.ndarray:
    """RGB per image value: the state colours, their highlighted shades, then ``no_block`` (:data:`NO_BLOCK`)."""
    return np.array(STATE_COLOURS + CHANGED_COLOURS + [no_block], dtype=np.ubyte)


@lru_cache(maxsize=256)  # called twice a frame with the same view: keep it off the frame's cost
def grid_shape(num_blocks: int, max_cells: int = MAX_CELLS, aspect: float = 1.0) -> tuple[int, int, int]:
    """(blocks per cell, rows, columns) for a pool: at most ``max_cells`` cells, laid out so that square
    cells are as large as they can be in a view ``aspect`` (its width over its height, 1/4 to 4) times
    as wide as it is tall; what is left of the view, across and down, is less than one cell (rows of
    cells with no block fill it where the last row would leave more)."""
    per_cell = max(1, math.ceil(num_blocks / max_cells))
    cells = max(1, math.ceil(num_blocks / per_cell))
    aspect = min(max(aspect, MIN_ASPECT), 1 / MIN_ASPECT)
    columns = _best_columns(cells, aspect)
    rows = math.ceil(cells / columns)
    cell_size = min(aspect / columns, 1.0 / rows)  # in view heights
    return per_cell, max(rows, int(1.0 / cell_size + 1e-9)), columns


def _best_columns(cells: int, aspect: float) -> int:
    """The number of columns that gives the largest square cells; of equals, the most columns (the
    grid then fills the view's width too)."""
    guess = math.sqrt(cells * aspect)
    columns = np.arange(max(1, int(guess / 2)), math.ceil(guess * 2) + 3)
    rows = -(-cells // columns)
    cell_size = np.minimum(aspect / columns, 1.0 / rows)
    return int(columns[len(columns) - 1 - np.argmax(cell_size[::-1])])


def heatmap_image(snapshot: KVSnapshot, since_version: int, max_cells: int = MAX_CELLS,
                  aspect: float = 1.0) -> np.ndarray:
    """The uint8 image: one cell per block (or per bin), changed blocks in the highlight colours; its
    shape is ``grid_shape``'s rows and columns for the same arguments."""
    per_cell, rows, columns = grid_shape(snapshot.num_blocks, max_cells, aspect)
    padded = rows * columns * per_cell
    states = np.zeros(padded, np.uint8)
    changed = np.zeros(padded, np.bool_)
    start = 0  # filled chunk by chunk: the snapshot's whole arrays are never joined for a frame
    for state_part, changed_part in zip(snapshot.chunks["states"], snapshot.chunks["changed_at"]):
        end = start + len(state_part)
        states[start:end] = state_part
        np.greater(changed_part, since_version, out=changed[start:end])
        start = end
    # Per-cell maximum and any-changed as per_cell strided passes: numpy reduces a short inner axis
    # (``reshape(-1, per_cell).max(axis=1)``) several times slower.
    by_cell, changed_by_cell = states.reshape(-1, per_cell), changed.reshape(-1, per_cell)
    cells, highlight = by_cell[:, 0].copy(), changed_by_cell[:, 0].copy()
    for k in range(1, per_cell):
        np.maximum(cells, by_cell[:, k], out=cells)
        np.logical_or(highlight, changed_by_cell[:, k], out=highlight)
    cells += NUM_BLOCK_STATES * highlight.view(np.uint8)
    cells[-(-snapshot.num_blocks // per_cell):] = NO_BLOCK
    return cells.reshape(rows, columns)


def cell_blocks(grid: tuple[int, int, int], num_blocks: int, row: int, column: int) -> range:
    """The block ids a cell of the grid ``grid_shape`` gave stands for (empty past the pool's end)."""
    per_cell, _rows, columns = grid
    first = (row * columns + column) * per_cell
    return range(first, min(first + per_cell, num_blocks))


def block_cells(grid: tuple[int, int, int], block_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, columns) of the cells of the grid ``grid_shape`` gave that hold ``block_ids``, one per cell."""
    per_cell, _rows, columns = grid
    cells = np.unique(np.asarray(block_ids, np.int64) // per_cell)
    return cells // columns, cells % columns


def describe_blocks(snapshot: KVSnapshot, blocks: range, owner_name: Callable[[str], str]) -> str:
    """Hover text for a cell: one block's state, ref_cnt, owners and hash, or a binned cell's mix."""
    if len(blocks) == 0:
        return ""
    if len(blocks) == 1:
        b = blocks[0]
        owners = ", ".join(sorted({owner_name(r) for r in snapshot.owners_of(b)})) or "none"
        return (f"Block {b}\nstate: {BLOCK_STATE_NAMES[snapshot.states[b]]}\nref_cnt: {snapshot.ref_cnts[b]}\n"
                f"owner: {owners}\nhashed: {'yes' if snapshot.hashed[b] else 'no'}")
    states = snapshot.states[blocks.start:blocks.stop]
    counts = np.bincount(states, minlength=NUM_BLOCK_STATES)
    detail = ", ".join(f"{n} {BLOCK_STATE_NAMES[s]}" for s, n in enumerate(counts) if n)
    return (f"Blocks {blocks.start}–{blocks.stop - 1} ({len(blocks)} per cell)\n"
            f"most used: {BLOCK_STATE_NAMES[states.max()]}\n{detail}\nmax ref_cnt: "
            f"{snapshot.ref_cnts[blocks.start:blocks.stop].max()}")


def summary_text(s: KVSnapshot) -> str:
    """The two short lines above the heatmap: blocks by state; vLLM's KV usage, token occupancy, snapshot cost."""
    counts = dict(zip(BLOCK_STATE_NAMES, s.counts))
    return (f"{s.num_in_use:,} used ({counts['shared']:,} shared) · {counts['cached']:,} cached · "
            f"{counts['free']:,} free of {s.num_blocks:,} blocks × {s.block_size} tokens\n"
            f"KV usage {s.kv_usage:.1%} · tokens {s.token_occupancy:.1%} of used slots · "
            f"snapshot {s.engine_ms:.2f} ms / {s.round_trip_ms:.1f} ms")


def summary_details(s: KVSnapshot) -> str:
    """The summary's figures in full, with what each means (the summary's tooltip)."""
    counts = dict(zip(BLOCK_STATE_NAMES, s.counts))
    slots = s.num_in_use * s.block_size
    return (f"Blocks: {s.num_in_use} used ({counts['shared']} shared) · {counts['cached']} cached · "
            f"{counts['free']} free of {s.num_blocks} × {s.block_size} tokens\n"
            f"vLLM KV usage {s.kv_usage:.1%}\ntoken occupancy {s.token_occupancy:.1%} "
            f"({s.tokens_stored} tokens in {slots} slots of the blocks in use)\nsnapshot {s.engine_ms:.2f} ms "
            f"in the engine, {s.round_trip_ms:.1f} ms round trip")
