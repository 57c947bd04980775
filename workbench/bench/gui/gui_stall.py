"""How long the GUI's event loop stalls while many requests stream and the heatmap updates.

Runs the real window offscreen on the demo model. A probe timer asks for a tick every 5 ms; a
stall is how late a tick comes. 16 conversations stream through the chat pane (text rendered as a
person sees it) and the rest of the requests go straight to the engine worker, as a batch would.
The GUI runs its own event loop (``QEventLoop.exec``) for the whole measurement.
"""
from __future__ import annotations

import os
import statistics
import time
from dataclasses import replace

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QEventLoop, QObject, QTimer, Signal, Slot  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from workbench.engine.events import EngineState, RequestFailed, RequestFinished, StateChanged  # noqa: E402
from workbench.engine.metrics import percentile  # noqa: E402

PROBE_INTERVAL_MS = 5
TIMEOUT_MS = 600_000


class Probe(QObject):
    """Records tick times and counts finished requests; ``all_finished`` fires after the last one."""

    all_finished = Signal()

    def __init__(self, expected: int):
        super().__init__()
        self.expected, self.finished = expected, 0
        self.ticks: list[float] = []

    @Slot()
    def on_tick(self) -> None:
        self.ticks.append(time.perf_counter())

    @Slot(object)
    def on_worker_event_emitted(self, event) -> None:
        if isinstance(event, (RequestFinished, RequestFailed)):
            self.finished += 1
            if self.finished == self.expected:
                self.all_finished.emit()
        elif isinstance(event, StateChanged) and event.state is not EngineState.STARTING:
            self.all_finished.emit()  # ends a wait for the engine (or a run it broke)


def _run_event_loop(probe: Probe) -> None:
    loop = QEventLoop()
    probe.all_finished.connect(loop.quit)
    QTimer.singleShot(TIMEOUT_MS, loop.quit)
    loop.exec()
    probe.all_finished.disconnect(loop.quit)


def _send_requests(window, engine, num_requests: int, num_chat: int, output_len: int) -> None:
    from workbench.engine.backend import ChatRequest, Message
    from workbench.engine.demo_model import default_system_prompt
    from workbench.engine.commands import Submit
    from workbench.engine.sampling import SamplingSettings

    chat = window.chat
    chat.sampling.ignore_eos.setChecked(True)
    chat.sampling.max_tokens.setValue(output_len)
    for i in range(min(num_chat, num_requests)):
        if chat.current.messages:
            chat.new_conversation()
        chat.input.setPlainText(f"Question {i}: what is a KV cache?")
        chat.send()
    sampling = SamplingSettings(max_tokens=output_len, ignore_eos=True)
    system = Message("system", default_system_prompt())
    for i in range(num_requests - num_chat):
        request = ChatRequest(f"batch-{i}", (system, Message("user", f"Batch item {i}: what is a block?")), sampling)
        engine.worker.post(Submit(request))


def _stall_figures(ticks: list[float]) -> dict:
    gaps_ms = [(b - a) * 1e3 for a, b in zip(ticks, ticks[1:])]
    stalls = [max(0.0, g - PROBE_INTERVAL_MS) for g in gaps_ms]
    return {"stall_ms_p50": percentile(stalls, 50), "stall_ms_p90": percentile(stalls, 90),
            "stall_ms_p99": percentile(stalls, 99), "stall_ms_max": percentile(stalls, 100),
            "stall_ms_mean": statistics.mean(stalls) if stalls else float("nan")}


def run_gui_stall(num_requests: int, output_len: int, num_chat: int = 16) -> dict:
    from workbench.app import build_window, demo_engine_config

    app = QApplication.instance() or QApplication([])  # noqa: F841 (kept alive for the window)
    config = replace(demo_engine_config(), max_num_seqs=num_requests, num_gpu_blocks_override=8192)
    window, engine = build_window(config)
    window.resize(1500, 900)
    window.show()
    probe = Probe(num_requests)
    engine.worker.event_emitted.connect(probe.on_worker_event_emitted)
    if not window.model.engine.ready:
        _run_event_loop(probe)
    if not window.model.engine.ready:
        raise RuntimeError(f"engine did not start: {window.model.engine.message}")
    probe.finished = 0
    timer = QTimer()
    timer.setInterval(PROBE_INTERVAL_MS)
    timer.timeout.connect(probe.on_tick)
    timer.start()
    started = time.perf_counter()
    _send_requests(window, engine, num_requests, num_chat, output_len)
    frames_before = window.heatmap._shown_version
    _run_event_loop(probe)
    elapsed = time.perf_counter() - started
    timer.stop()
    frames = window.heatmap._shown_version - frames_before
    window.close()
    return {"requests": num_requests, "finished": probe.finished, "elapsed_s": elapsed, "ticks": len(probe.ticks),
            **_stall_figures(probe.ticks), "heatmap_versions_seen": frames}
