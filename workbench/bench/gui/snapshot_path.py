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
"""
from __future__ import annotations

from PySide6.QtCore import QObject, Slot

from workbench.engine.metrics import percentile

PARTS = ("engine", "transport", "client", "draw")


class SnapshotPathRecorder(QObject):
    """Lives on the GUI thread; ``start()`` connects it to the window's heatmap timer."""

    def __init__(self, window):
        super().__init__()
        self.window = window
        self.frames: list[dict[str, float]] = []  # one per snapshot version the view drew
        self._pending: dict[str, float] | None = None  # the last frame, its paints not yet counted
        self._paint_ms_before = 0.0
        self._first_version = self._last_version = None

    def start(self) -> None:
        self._paint_ms_before = self.window.heatmap.plot.paint_ms_total
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
        self._pending = {"engine": snapshot.engine_cpu_ms, "engine_wall": snapshot.engine_ms,
                         "transport": snapshot.transport_ms, "client": snapshot.client_ms,
                         "update": view.last_update_ms}

    def _close_pending(self) -> None:
        """The paints since the last frame was taken belong to it."""
        painted = self.window.heatmap.plot.paint_ms_total
        if self._pending is not None:
            frame = self._pending
            frame["paint"] = painted - self._paint_ms_before
            frame["draw"] = frame["update"] + frame["paint"]
            frame["total"] = sum(frame[part] for part in PARTS)
            self.frames.append(frame)
            self._pending = None
        self._paint_ms_before = painted

    def figures(self, elapsed_s: float) -> dict:
        """p50 / p99 / max of each part and of the total per frame, and the share of one core."""
        result: dict = {"frames": len(self.frames)}
        if not self.frames:
            return result
        for name in (*PARTS, "total"):
            values = [frame[name] for frame in self.frames]
            result[f"{name}_ms_p50"] = percentile(values, 50)
            result[f"{name}_ms_p99"] = percentile(values, 99)
            result[f"{name}_ms_max"] = percentile(values, 100)
        published = self._last_version - self._first_version + 1
        per_snapshot = [frame["engine"] + frame["transport"] + frame["client"] for frame in self.frames]
        busy_ms = sum(per_snapshot) / len(per_snapshot) * published + sum(frame["draw"] for frame in self.frames)
        result["snapshots_published"] = published
        result["core_share"] = busy_ms / (elapsed_s * 1e3) if elapsed_s > 0 else float("nan")
        return result
