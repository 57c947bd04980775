"""What one heatmap frame costs the GUI thread: ``heatmap_image`` on a pool of the given size, with
about 2 % of its blocks changed since the previous frame. No Qt (the image is computed in the engine
layer, as the GUI thread computes it) and no engine: the cost depends on the pool's size, not on which
model filled it.
"""
from __future__ import annotations

import statistics
import time

import numpy as np

from workbench.engine.heatmap_image import grid_shape, heatmap_image
from workbench.engine.kv_snapshot import NUM_BLOCK_STATES, KVPoolMirror, KVSnapshot
from workbench.engine.metrics import percentile


def _delta(version: int, full: bool, num_blocks: int, ids: np.ndarray, states: np.ndarray) -> dict:
    return {"version": version, "full": full, "num_blocks": num_blocks, "block_size": 16,
            "ids": ids.astype(np.int32).tobytes(), "states": states.astype(np.int8).tobytes(),
            "ref_cnts": (states >= 3).astype(np.int32).tobytes(), "hashed": np.zeros(ids.size, np.bool_).tobytes(),
            "tables": [], "table_ids": b"", "removed": []}


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
