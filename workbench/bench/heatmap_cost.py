"""What one heatmap frame costs the GUI thread: ``heatmap_image`` on a pool of the given size, with
about 2 % of its blocks changed since the previous frame, and the image marks' update
(``ImageBlocks.update``) with 256 image requests running and 512 finished ones' blocks cached. No Qt
(the image is computed in the engine layer, as the GUI thread computes it) and no engine: the cost
depends on the pool's size, not on which model filled it.
"""
from __future__ import annotations

import statistics
import time

import numpy as np

from workbench.engine.heatmap_image import grid_shape, heatmap_image
from workbench.engine.image_blocks import ImageBlocks
from workbench.engine.images import ImageSpan
from workbench.engine.kv_snapshot import NUM_BLOCK_STATES, KVPoolMirror, KVSnapshot
from workbench.engine.metrics import percentile


def _delta(version: int, full: bool, num_blocks: int, ids: np.ndarray, states: np.ndarray,
           tables: list | None = None, removed: list | None = None) -> dict:
    """``tables``: (request id, block ids) of tables that are new; ``removed``: request ids whose tables went."""
    tables = tables or []
    table_ids = np.concatenate([blocks for _, blocks in tables]) if tables else np.zeros(0, np.int32)
    return {"version": version, "full": full, "num_blocks": num_blocks, "block_size": 16,
            "ids": ids.astype(np.int32).tobytes(), "states": states.astype(np.int8).tobytes(),
            "ref_cnts": (states >= 3).astype(np.int32).tobytes(), "hashed": np.zeros(ids.size, np.bool_).tobytes(),
            "tables": [(request_id, 0, len(blocks)) for request_id, blocks in tables],
            "table_ids": table_ids.astype(np.int32).tobytes(), "removed": removed or []}


def synthetic_snapshot(num_blocks: int, changed_fraction: float = 0.02, seed: int = 0) -> KVSnapshot:
    """A pool in random states, then a delta changing ``changed_fraction`` of it (version 2)."""
    rng = np.random.default_rng(seed)
    mirror = KVPoolMirror()
    everything = np.arange(num_blocks)
    mirror.apply(_delta(1, True, num_blocks, everything, rng.integers(1, NUM_BLOCK_STATES, num_blocks)))
    changed = rng.choice(num_blocks, max(1, int(num_blocks * changed_fraction)), replace=False)
    mirror.apply(_delta(2, False, num_blocks, changed, rng.integers(1, NUM_BLOCK_STATES, changed.size)))
    return mirror.snapshot({}, 0.0)


def frame_cost(num_blocks: int, frames: int) -> dict:
    snapshot = synthetic_snapshot(num_blocks)
    heatmap_image(snapshot, 1)  # warm-up
    times = []
    for _ in range(frames):
        started = time.perf_counter()
        heatmap_image(snapshot, 1)
        times.append(time.perf_counter() - started)
    per_cell, rows, columns = grid_shape(num_blocks)
    return {"blocks": num_blocks, "per_cell": per_cell, "rows": rows, "columns": columns,
            "ms_p50": statistics.median(times) * 1e3, "ms_p99": percentile(times, 99) * 1e3}


IMAGE_SPANS = (ImageSpan(0, 12, 20), ImageSpan(1, 40, 20))  # two images of 20 tokens: 4 of a request's 12 blocks


def image_marks_cost(num_blocks: int, frames: int, num_running: int = 256, num_finished: int = 512) -> dict:
    """``ImageBlocks.update`` per snapshot once the marks are known: ``num_running`` image requests of
    12 blocks and ``num_finished`` more whose blocks are cached, 2 % of the pool changing a snapshot."""
    rng = np.random.default_rng(1)
    mirror = KVPoolMirror()
    mirror.apply(_delta(1, True, num_blocks, np.arange(num_blocks), np.ones(num_blocks)))
    count = num_running + num_finished
    tables = [(f"r{i}", np.arange(12 * i, 12 * i + 12, dtype=np.int32) % num_blocks) for i in range(count)]
    used = np.concatenate([blocks for _, blocks in tables])
    mirror.apply(_delta(2, False, num_blocks, used, np.full(used.size, 3), tables=tables))
    spans = {request_id: IMAGE_SPANS for request_id, _ in tables}
    marks = ImageBlocks()
    marks.update(mirror.snapshot({}, 0.0, image_spans=spans))
    done = used[:12 * num_finished]
    finished = [request_id for request_id, _ in tables[:num_finished]]
    mirror.apply(_delta(3, False, num_blocks, done, np.full(done.size, 2), removed=finished))
    marks.update(mirror.snapshot({}, 0.0, image_spans=spans))
    times = []
    for version in range(4, 4 + frames):
        changed = rng.choice(np.arange(12 * count, num_blocks), max(1, num_blocks // 50), replace=False)
        mirror.apply(_delta(version, False, num_blocks, changed, rng.integers(1, 3, changed.size)))
        snapshot = mirror.snapshot({}, 0.0, image_spans=spans)
        started = time.perf_counter()
        marks.update(snapshot)
        times.append(time.perf_counter() - started)
    return {"marks_ms_p50": statistics.median(times) * 1e3, "marks_ms_p99": percentile(times, 99) * 1e3,
            "num_marked": len(marks.block_ids)}
