"""How long the GUI's event loop stalls while many requests stream and the heatmap, the live plots
and the memory panel update.

Runs the real window offscreen on the demo model. A probe timer asks for a tick every 5 ms; a
stall is how late a tick comes. 16 conversations stream through the chat pane (text rendered as a
person sees it) and the rest of the requests go straight to the engine host, as a batch would.
The GUI runs its own event loop (``QEventLoop.exec``) for the whole measurement. The same run
measures the whole path of a KV snapshot, engine to frame (``snapshot_path``).
"""
from __future__ import annotations

import statistics
import time
from dataclasses import replace

from PySide6.QtCore import QObject, QTimer, Slot

from workbench.bench.gui.snapshot_path import SnapshotPathRecorder
from workbench.bench.gui.window_driver import EndedRequests, application, run_until, type_and_send
from workbench.engine.metrics import percentile

PROBE_INTERVAL_MS = 5
TIMEOUT_MS = 600_000


class Probe(QObject):
    """Records the time of each tick of the probe timer."""

    def __init__(self):
        super().__init__()
        self.ticks: list[float] = []

    @Slot()
    def on_tick(self) -> None:
        self.ticks.append(time.perf_counter())


def _send_requests(window, engine, num_requests: int, num_chat: int, output_len: int) -> None:
    from workbench.engine.backend import ChatRequest, Message
    from workbench.engine.demo_model import default_system_prompt
    from workbench.engine.commands import Submit
    from workbench.engine.sampling import SamplingSettings

    chat = window.chat
    chat.sampling.ignore_eos.setChecked(True)
    chat.sampling.max_tokens.setValue(output_len)
    for i in range(min(num_chat, num_requests)):
        type_and_send(chat, f"Question {i}: what is a KV cache?")
    sampling = SamplingSettings(max_tokens=output_len, ignore_eos=True)
    system = Message("system", default_system_prompt())
    for i in range(num_requests - num_chat):
        request = ChatRequest(f"batch-{i}", (system, Message("user", f"Batch item {i}: what is a block?")), sampling)
        engine.host.post(Submit(request))


def _stall_figures(ticks: list[float], elapsed_s: float) -> dict:
    """How late each tick came (its stall), the longest gap between two ticks (the longest stretch
    the event loop could not run), and the share of the run's wall time spent in stalls."""
    gaps_ms = [(b - a) * 1e3 for a, b in zip(ticks, ticks[1:])]
    stalls = [max(0.0, g - PROBE_INTERVAL_MS) for g in gaps_ms]
    return {"stall_ms_p50": percentile(stalls, 50), "stall_ms_p90": percentile(stalls, 90),
            "stall_ms_p99": percentile(stalls, 99), "stall_ms_max": percentile(stalls, 100),
            "stall_ms_mean": statistics.mean(stalls) if stalls else float("nan"),
            "longest_gap_ms": max(gaps_ms, default=float("nan")),
            "blocked_share": sum(stalls) / (elapsed_s * 1e3) if elapsed_s > 0 else float("nan")}


def started_window(config, client: str | None = None, **build):
    """The real window, shown offscreen at 1500 × 900, its engine started and ready: (window, engine)."""
    from workbench.app import build_window

    application()
    window, engine = build_window(config, start_engine=False, client=client, **build)
    window.resize(1500, 900)
    window.show()
    model = window.model
    run_until(engine.host, lambda event: model.engine.settled(model.latest_start_id), TIMEOUT_MS,
              window.restart_engine)
    if not model.engine.ready:
        raise RuntimeError(f"engine did not start: {model.engine.message}")
    return window, engine


def run_gui_stall(num_requests: int, output_len: int, num_chat: int = 16, num_blocks: int = 8192,
                  client: str | None = None) -> dict:
    from workbench.app import demo_engine_config

    config = replace(demo_engine_config(), max_num_seqs=num_requests, num_gpu_blocks_override=num_blocks)
    window, engine = started_window(config, client)
    probe, ended, path = Probe(), EndedRequests(num_requests), SnapshotPathRecorder(window)
    timer = QTimer()
    timer.setInterval(PROBE_INTERVAL_MS)
    timer.timeout.connect(probe.on_tick)
    timer.start()
    path.start()
    started = time.perf_counter()
    receipts = getattr(engine.host, "snapshot_receipts", None)
    receipts_before = len(receipts) if receipts is not None else 0
    frames_before = window.heatmap._shown_version
    drawn_before = window.plots.num_draws, window.memory.num_draws
    run_until(engine.host, ended, TIMEOUT_MS, lambda: _send_requests(window, engine, num_requests, num_chat, output_len))
    elapsed = time.perf_counter() - started
    timer.stop()
    path.stop()
    frames = window.heatmap._shown_version - frames_before
    plots_drawn, memory_drawn = window.plots.num_draws - drawn_before[0], window.memory.num_draws - drawn_before[1]
    received = list(receipts)[receipts_before:] if receipts is not None else []
    window.close()
    return {"snapshot_receipts": received, "client": "process" if receipts is not None else "thread",
            "requests": num_requests, "finished": ended.finished, "elapsed_s": elapsed, "ticks": len(probe.ticks),
            **_stall_figures(probe.ticks, elapsed), "heatmap_versions_seen": frames, "num_blocks": num_blocks,
            "plots_drawn": plots_drawn, "memory_panel_drawn": memory_drawn, "snapshot_path": path.figures(elapsed)}
