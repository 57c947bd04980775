"""How long the GUI's event loop stalls while many requests stream and the heatmap updates.

Runs the real window offscreen on the demo model. A probe timer asks for a tick every 5 ms; a
stall is how late a tick comes. 16 conversations stream through the chat pane (text rendered as a
person sees it) and the rest of the requests go straight to the engine worker, as a batch would.
"""
from __future__ import annotations

import os
import statistics
import time
from dataclasses import replace

PROBE_INTERVAL_MS = 5


def run_gui_stall(num_requests: int, output_len: int, num_chat: int = 16) -> dict:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QEventLoop, QObject, QTimer, Slot
    from PySide6.QtWidgets import QApplication

    from workbench.app import build_window, demo_engine_config
    from workbench.engine.backend import ChatRequest, Message, SamplingSettings
    from workbench.engine.demo_model import default_system_prompt
    from workbench.engine.loop import Submit

    app = QApplication.instance() or QApplication([])
    config = replace(demo_engine_config(), max_num_seqs=num_requests, num_gpu_blocks_override=8192)
    window, engine = build_window(config)
    window.resize(1500, 900)
    window.show()

    class Probe(QObject):
        def __init__(self):
            super().__init__()
            self.ticks: list[float] = []
            self.finished = 0

        @Slot()
        def on_tick(self):
            self.ticks.append(time.perf_counter())

        @Slot(object)
        def on_worker_request_finished(self, event):
            self.finished += 1

    probe = Probe()
    engine.worker.request_finished.connect(probe.on_worker_request_finished)
    deadline = time.monotonic() + 600
    while window.status.state != "ready" and time.monotonic() < deadline:
        app.processEvents(QEventLoop.AllEvents, 50)
        time.sleep(0.01)
    if window.status.state != "ready":
        raise RuntimeError(f"engine did not start: {window.status.message.text()}")
    timer = QTimer()
    timer.setInterval(PROBE_INTERVAL_MS)
    timer.timeout.connect(probe.on_tick)
    chat = window.chat
    chat.sampling.ignore_eos.setChecked(True)
    chat.sampling.max_tokens.setValue(output_len)
    timer.start()
    started = time.perf_counter()
    for i in range(min(num_chat, num_requests)):
        if chat.current.turns:
            chat.new_conversation()
        chat.input.setPlainText(f"Question {i}: what is a KV cache?")
        chat.send()
    sampling = SamplingSettings(max_tokens=output_len, ignore_eos=True)
    system = Message("system", default_system_prompt())
    for i in range(num_requests - num_chat):
        request = ChatRequest(f"batch-{i}", (system, Message("user", f"Batch item {i}: what is a block?")), sampling)
        engine.worker.post(Submit(request))
    frames_before = window.heatmap._shown_version
    while probe.finished < num_requests and time.monotonic() < deadline:
        app.processEvents(QEventLoop.AllEvents, 50)
        time.sleep(0.001)
    elapsed = time.perf_counter() - started
    timer.stop()
    gaps_ms = [(b - a) * 1e3 for a, b in zip(probe.ticks, probe.ticks[1:])]
    stalls = sorted(max(0.0, g - PROBE_INTERVAL_MS) for g in gaps_ms)
    window.close()
    pick = lambda q: stalls[min(len(stalls) - 1, int(q / 100 * (len(stalls) - 1)))] if stalls else float("nan")
    return {
        "requests": num_requests, "finished": probe.finished, "elapsed_s": elapsed, "ticks": len(probe.ticks),
        "stall_ms_p50": pick(50), "stall_ms_p90": pick(90), "stall_ms_p99": pick(99), "stall_ms_max": pick(100),
        "stall_ms_mean": statistics.mean(stalls) if stalls else float("nan"),
        "heatmap_versions_seen": window.heatmap._shown_version - frames_before,
    }
