"""The whole path of a KV snapshot as the app runs it, as one figure per frame the window draws:

1. engine: the plugin's delta, inside the engine-core process, between two steps (its thread CPU);
2. transport: from the engine core's answer being ready to its arrival, decoded, in the client;
3. client: the engine thread applies the delta to its mirror and publishes an immutable snapshot;
4. draw: on the GUI thread, the heatmap's 10 Hz timer turns the snapshot into the image, and the
   plot is painted (every paint of the heatmap until the next tick).

A recorder listens to the window's own heatmap timer, after the window's slot, and notes each
snapshot version the view took. Snapshots that the engine thread published but the GUI skipped (its
mailbox keeps the latest only) cost the engine, transport and client parts too: the CPU share counts
them from the versions published.

Two totals per frame. The cost: the work done for it on the three threads (the engine core's thread
CPU, the client's apply and publish, the GUI's draw). The latency: from the delta taken to the frame
painted, with the transport's wall time, which is mostly the client's decoding thread waiting for the
GIL and the ZMQ poller, not work. The frame the view showed when the run began (the pool's first,
full resync at the engine's start) is kept apart, as ``first_frame``.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, Slot

from workbench.engine.metrics import percentile


COST = ("engine", "client", "draw")  # work on a thread: the engine core's (its CPU), the engine thread's, the GUI's
LATENCY = ("engine_wall", "transport", "client", "draw")  # engine core's answer to the frame on screen


class SnapshotPathRecorder(QObject):
    """Lives on the GUI thread; ``start()`` connects it to the window's heatmap timer."""

    def __init__(self, window):
        super().__init__()
        self.window = window
        self.frames: list[dict[str, float]] = []  # one per snapshot version the view drew
        self.first_frame: dict[str, float] | None = None
        self._pending: dict[str, float] | None = None  # the last frame, its paints not yet counted
        self._paint_ms_before = 0.0
        self._first_version = self._last_version = None

    def start(self) -> None:
        view = self.window.heatmap
        self._paint_ms_before = view.plot.paint_ms_total
        if view.snapshot is not None:  # drawn before the run: its figures are reported apart
            self._last_version = view.snapshot.version
            self.first_frame = self._frame_of(view)
        self.window.heatmap_timer.timeout.connect(self.on_heatmap_tick)

    def stop(self) -> None:
        self.window.heatmap_timer.timeout.disconnect(self.on_heatmap_tick)
        self._close_pending()

    @Slot()
    def on_heatmap_tick(self) -> None:
        view = self.window.heatmap
        snapshot = view.snapshot
        if snapshot is None or snapshot.version == self._last_version:
            return
        self._close_pending()
        self._first_version = self._first_version or snapshot.version
        self._last_version = snapshot.version
        self._pending = self._frame_of(view)

    @staticmethod
    def _frame_of(view) -> dict[str, float]:
        snapshot = view.snapshot
        return {"version": snapshot.version, "engine": snapshot.engine_cpu_ms, "engine_wall": snapshot.engine_ms,
                "transport": snapshot.transport_ms, "client": snapshot.client_ms, "update": view.last_update_ms}

    def _close_pending(self) -> None:
        """The paints since the last frame was taken belong to it."""
        painted = self.window.heatmap.plot.paint_ms_total
        if self._pending is not None:
            frame = self._pending
            frame["paint"] = painted - self._paint_ms_before
            frame["draw"] = frame["update"] + frame["paint"]
            frame["cost"] = sum(frame[part] for part in COST)
            frame["latency"] = sum(frame[part] for part in LATENCY)
            self.frames.append(frame)
            self._pending = None
        self._paint_ms_before = painted

    def figures(self, elapsed_s: float) -> dict:
        """p50 / p99 / max of each part and of the total per frame, and the share of one core."""
        result: dict = {"frames": len(self.frames), "each_frame": list(self.frames), "first_frame": self.first_frame}
        if not self.frames:
            return result
        for name in ("engine", "engine_wall", "transport", "client", "update", "paint", "draw", "cost", "latency"):
            values = [frame[name] for frame in self.frames]
            result[f"{name}_ms_p50"] = percentile(values, 50)
            result[f"{name}_ms_p99"] = percentile(values, 99)
            result[f"{name}_ms_max"] = percentile(values, 100)
        published = self._last_version - self._first_version + 1
        per_snapshot = [frame["engine"] + frame["client"] for frame in self.frames]
        busy_ms = sum(per_snapshot) / len(per_snapshot) * published + sum(frame["draw"] for frame in self.frames)
        result["snapshots_published"] = published
        result["core_share"] = busy_ms / (elapsed_s * 1e3) if elapsed_s > 0 else float("nan")
        return result
