"""What the engine-client pipe costs per KV snapshot and per statistics series, both ways of sending.

No engine and no Qt: a pool of the given size is filled, then frames of deltas shaped as vLLM makes
them (free blocks handed out in queue order, so one frame's changes cluster; ``num_running``
requests each growing its block table) are applied, as the client's mirror applies them. For each
frame the two ways of getting the snapshot to the window's process are timed:

- chunks: the client encodes the chunks and tables new since the last snapshot sent
  (``client_wire.SnapshotEncoder``) and pickles them; the window unpickles and rebuilds the snapshot
  sharing unchanged chunks (``SnapshotDecoder``);
- deltas: the client pickles the engine's delta dicts as they came; the window unpickles them, applies
  them to a mirror of its own and takes the snapshot from it (the work the client's loop does now).

The window-side figure is what its receiver thread spends per snapshot; the GUI thread only takes the
result from the mailbox. The statistics: the whole ring of 7,200 points pickled each time, against the
new points only (``StatsEncoder``).
"""
from __future__ import annotations

import pickle
import statistics
import time

import numpy as np

from workbench.engine.client_wire import SnapshotDecoder, SnapshotEncoder, StatsDecoder, StatsEncoder
from workbench.engine.kv_snapshot import KVPoolMirror
from workbench.engine.metrics import percentile
from workbench.engine.stats import CAPACITY, COLUMNS, StatsSeries, StatsTotals
from workbench.engine.ring_buffer import RingBuffer


def _delta(version: int, full: bool, num_blocks: int, ids: np.ndarray, states: np.ndarray,
           tables: list, table_ids: np.ndarray) -> dict:
    return {"version": version, "full": full, "num_blocks": num_blocks, "block_size": 16,
            "ids": ids.astype(np.int32).tobytes(), "states": states.astype(np.int8).tobytes(),
            "ref_cnts": (states >= 3).astype(np.int32).tobytes(), "hashed": np.zeros(ids.size, np.bool_).tobytes(),
            "tables": tables, "table_ids": table_ids.astype(np.int32).tobytes(), "removed": [],
            "counts": [1, 0, 0, 0, 0], "kv_usage": 0.5, "tokens_stored": 0, "engine_ns": 0}


class _Pool:
    """Frames of deltas: each running request takes ``blocks_per_frame`` blocks from the free queue."""

    def __init__(self, num_blocks: int, num_running: int, blocks_per_frame: int):
        self.num_blocks, self.num_running, self.per_frame = num_blocks, num_running, blocks_per_frame
        self.next_free, self.version = 1, 1
        self.lengths = [0] * num_running

    def first(self) -> dict:
        ids = np.arange(self.num_blocks)
        states = np.ones(self.num_blocks, np.int8)
        states[0] = 0
        return _delta(1, True, self.num_blocks, ids, states, [], np.zeros(0, np.int32))

    def frame(self) -> dict:
        self.version += 1
        count = self.num_running * self.per_frame
        ids = (self.next_free + np.arange(count)) % (self.num_blocks - 1) + 1
        self.next_free = int(ids[-1]) + 1
        tables = []
        for i in range(self.num_running):
            tables.append((f"engine-{i}", self.lengths[i], self.per_frame))
            self.lengths[i] += self.per_frame
        return _delta(self.version, False, self.num_blocks, ids, np.full(count, 3, np.int8), tables, ids)


def snapshot_cost(num_blocks: int, frames: int = 50, num_running: int = 64, blocks_per_frame: int = 1) -> dict:
    pool = _Pool(num_blocks, num_running, blocks_per_frame)
    client, window_mirror = KVPoolMirror(), KVPoolMirror()
    encoder, decoder = SnapshotEncoder(), SnapshotDecoder()
    first = pool.first()
    client.apply(first)
    window_mirror.apply(pickle.loads(pickle.dumps(first)))
    decoder.decode(pickle.loads(pickle.dumps(encoder.encode(client.snapshot({}, 0.0)))))
    window_mirror.snapshot({}, 0.0)
    figures: dict[str, list[float]] = {k: [] for k in ("chunks_client", "chunks_window", "chunks_bytes",
                                                       "deltas_client", "deltas_window", "deltas_bytes")}
    for _ in range(frames):
        delta = pool.frame()
        client.apply(delta)
        snapshot = client.snapshot({}, 0.0)
        started = time.perf_counter()
        wire = pickle.dumps(encoder.encode(snapshot), protocol=pickle.HIGHEST_PROTOCOL)
        sent = time.perf_counter()
        decoder.decode(pickle.loads(wire))
        figures["chunks_client"].append((sent - started) * 1e3)
        figures["chunks_window"].append((time.perf_counter() - sent) * 1e3)
        figures["chunks_bytes"].append(len(wire))
        started = time.perf_counter()
        wire = pickle.dumps(delta, protocol=pickle.HIGHEST_PROTOCOL)
        sent = time.perf_counter()
        window_mirror.apply(pickle.loads(wire))
        window_mirror.snapshot({}, 0.0)
        figures["deltas_client"].append((sent - started) * 1e3)
        figures["deltas_window"].append((time.perf_counter() - sent) * 1e3)
        figures["deltas_bytes"].append(len(wire))
    result = {"blocks": num_blocks, "running": num_running, "changed_per_frame": num_running * blocks_per_frame}
    for name, values in figures.items():
        result[f"{name}_p50"] = statistics.median(values)
        result[f"{name}_p99"] = percentile(values, 99)
    return result


def _plain(series: StatsSeries) -> tuple:
    """The whole series as it would cross the pipe (a read-only mapping does not pickle)."""
    return series.series.version, dict(series.series.columns), series.totals


def stats_cost(points: int = CAPACITY, repeats: int = 50) -> dict:
    """Pickling the whole series (``points`` points) against the one new point, and rebuilding it."""
    ring = RingBuffer(COLUMNS, CAPACITY)
    rng = np.random.default_rng(0)
    for _ in range(points):
        ring.append(rng.random(len(COLUMNS)))
    encoder, decoder = StatsEncoder(), StatsDecoder()
    decoder.decode(pickle.loads(pickle.dumps(encoder.encode(StatsSeries(ring.publish(), StatsTotals())))))
    whole, new_points, new_bytes = [], [], 0
    for _ in range(repeats):
        ring.append(rng.random(len(COLUMNS)))
        series = StatsSeries(ring.publish(), StatsTotals())
        started = time.perf_counter()
        pickle.loads(pickle.dumps(_plain(series), protocol=pickle.HIGHEST_PROTOCOL))
        whole.append((time.perf_counter() - started) * 1e3)
        started = time.perf_counter()
        wire = pickle.dumps(encoder.encode(series), protocol=pickle.HIGHEST_PROTOCOL)
        decoder.decode(pickle.loads(wire))
        new_points.append((time.perf_counter() - started) * 1e3)
        new_bytes = len(wire)
    return {"points": points, "whole_ms_p50": statistics.median(whole), "new_points_ms_p50": statistics.median(new_points),
            "whole_bytes": len(pickle.dumps(_plain(series))), "new_points_bytes": new_bytes}


def cmd_client_wire(args) -> int:
    """``bench client-wire``: both ways of sending a snapshot, per pool size, and the series."""
    print("KV snapshot over the engine-client pipe, per snapshot: changed chunks (sent) against the engine's "
          "deltas to a mirror in the window's process (ms p50 / p99; client: encode + pickle; window: unpickle "
          "+ rebuild, on its receiver thread)")
    print("| blocks | changed | chunks: client | chunks: window | chunks KiB | deltas: client | deltas: window "
          "| deltas KiB |")
    print("|---|---|---|---|---|---|---|---|")
    for num_blocks in args.blocks:
        c = snapshot_cost(num_blocks, args.frames, args.running)
        print(f"| {num_blocks:,} | {c['changed_per_frame']} | {c['chunks_client_p50']:.3f} / {c['chunks_client_p99']:.3f} "
              f"| {c['chunks_window_p50']:.3f} / {c['chunks_window_p99']:.3f} | {c['chunks_bytes_p50'] / 1024:.0f} "
              f"| {c['deltas_client_p50']:.3f} / {c['deltas_client_p99']:.3f} "
              f"| {c['deltas_window_p50']:.3f} / {c['deltas_window_p99']:.3f} | {c['deltas_bytes_p50'] / 1024:.1f} |")
    s = stats_cost()
    print(f"\nStatistics series of {s['points']:,} points: the whole series pickled and unpickled "
          f"{s['whole_ms_p50']:.3f} ms ({s['whole_bytes'] / 1024:.0f} KiB); the new point sent and the window's "
          f"ring rebuilt {s['new_points_ms_p50']:.3f} ms ({s['new_points_bytes'] / 1024:.1f} KiB)")
    return 0


def print_receipts(client: str, receipts: list[tuple[int, float]]) -> None:
    """``bench gui-stall`` with the process client: what receiving a snapshot cost the window's process
    (its receiver thread), per batch that brought one."""
    if client != "process" or not receipts:
        print(f"Engine client: {client} (the snapshot is handed over in the process, nothing received)")
        return
    sizes, times = [b / 1024 for b, _ in receipts], [ms for _, ms in receipts]
    print(f"Engine client: process. {len(receipts)} batches with a KV snapshot received; unpickle + rebuild on "
          f"the receiver thread {percentile(times, 50):.3f} ms p50 / {percentile(times, 99):.3f} ms p99 "
          f"(max {max(times):.3f}); batch size {percentile(sizes, 50):.0f} KiB p50 / {percentile(sizes, 99):.0f} "
          f"KiB p99 (max {max(sizes):.0f})")
