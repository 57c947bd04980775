"""How long the GUI thread stalls when the user applies a preset for the first time and when the
user closes the window: the two actions that used to freeze it for seconds.

Runs the real window offscreen on the demo model, with its storage in a temporary folder and vLLM's
client loop where the app puts it. A probe timer asks for a tick every 5 ms; a stall is how late a tick
comes. The first Apply is timed from the click until the new engine is ready (the preset's checks,
which import vLLM into the window's process the first time, and the switch); the close from
``window.close()`` until the engine thread has ended and the database is closed, the window hidden
before (or, where the close blocks, until it returns and that is done).
"""
from __future__ import annotations

import collections
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

from PySide6.QtCore import QEventLoop, QTimer

from workbench.bench.gui.gui_stall import PROBE_INTERVAL_MS, Probe, started_window

TIMEOUT_MS = 600_000


def _stalls(ticks: list[float], start: float, end: float) -> dict:
    """The probe's ticks between ``start`` and ``end`` (perf_counter): the longest stall and the
    number of stalls over 100 ms (the promise: no user action blocks the GUI thread longer)."""
    inside = [t for t in ticks if start <= t <= end] + [end]
    gaps = [(b - a) * 1e3 for a, b in zip([start] + inside, inside)]
    stalls = [max(0.0, g - PROBE_INTERVAL_MS) for g in gaps]
    return {"longest_stall_ms": max(stalls, default=0.0), "stalls_over_100ms": sum(s > 100 for s in stalls),
            "ticks": len(inside) - 1, "span_s": end - start}


def _run_loop_until(condition, timeout_ms: int) -> bool:
    """Runs the GUI's event loop until ``condition()`` holds (asked every 20 ms)."""
    loop = QEventLoop()
    poll = QTimer(interval=20)
    poll.timeout.connect(lambda: condition() and loop.quit())
    limit = QTimer(singleShot=True)
    limit.timeout.connect(loop.quit)
    poll.start()
    limit.start(timeout_ms)
    if not condition():
        loop.exec()
    poll.stop()
    limit.stop()
    return condition()


class StallSampler:
    """Where the GUI thread is while it stalls: a thread of its own that, every 20 ms, looks at the
    probe's last tick and, where it is over 100 ms old, takes the GUI thread's stack
    (``sys._current_frames``). Counts the innermost frames of the workbench and of Qt's Python
    bindings seen, so that the report names what held the thread. A stall where another thread holds
    the GIL shows the GUI thread waiting for it (its stack at a Python line that does nothing slow)."""

    def __init__(self, probe, gui_ident: int):
        self.probe, self.gui_ident = probe, gui_ident
        self.samples: collections.Counter = collections.Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stall-sampler", daemon=True)

    def start(self) -> StallSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            ticks = self.probe.ticks
            if not ticks or time.perf_counter() - ticks[-1] < 0.1:
                continue
            frame = sys._current_frames().get(self.gui_ident)
            if frame is None:
                continue
            stack = traceback.extract_stack(frame)
            ours = [f for f in stack if "/workbench/" in f.filename and "/bench/" not in f.filename]
            where = stack[-1]
            key = (f"{where.filename.rsplit('/', 2)[-1]}:{where.lineno} {where.name}"
                   + (f" ← {ours[-1].filename.rsplit('/', 1)[-1]}:{ours[-1].lineno} {ours[-1].name}" if ours else ""))
            self.samples[key] += 1

    def top(self, n: int = 12) -> list[tuple[str, int]]:
        return self.samples.most_common(n)


def run_ui_stalls(preset: str, client: str | None = None) -> dict:
    from workbench.app import demo_engine_config
    from workbench.storage.store import Storage

    folder = Path(tempfile.mkdtemp(prefix="workbench-ui-stalls-"))
    window, engine = started_window(demo_engine_config(), client, storage=Storage.open(folder / "workbench.db"))
    model = window.model
    vllm_before = "vllm" in sys.modules
    probe = Probe()
    timer = QTimer(interval=PROBE_INTERVAL_MS)
    timer.timeout.connect(probe.on_tick)
    timer.start()
    sampler = StallSampler(probe, threading.get_ident()).start()
    panel = window.presets
    panel.choose(preset)
    first_start = model.latest_start_id
    clicked = time.perf_counter()
    panel.buttons["apply"].click()
    _run_loop_until(lambda: model.latest_start_id > first_start and model.engine.settled(model.latest_start_id),
                    TIMEOUT_MS)
    applied = time.perf_counter()
    ready_after_apply = model.engine.ready and model.preset_name == preset
    storage = window.storage
    closing = time.perf_counter()
    window.close()
    returned = time.perf_counter()
    hidden = not window.isVisible()
    _run_loop_until(lambda: not engine.thread.isRunning() and storage.opened.lock is None, 120_000)
    closed = time.perf_counter()
    timer.stop()
    sampler.stop()
    return {"preset": preset, "client": "process" if hasattr(engine.host, "client_pid") else "thread",
            "vllm_in_window_before_apply": vllm_before, "ready_after_apply": ready_after_apply,
            "apply": _stalls(probe.ticks, clicked, applied), "close": _stalls(probe.ticks, closing, closed),
            "close_returned_s": returned - closing, "hidden_when_close_returned": hidden,
            "engine_stopped": not engine.thread.isRunning(), "storage_closed": storage.opened.lock is None,
            "stalled_at": sampler.top()}


def print_ui_stalls(r: dict) -> None:
    print(f"\nGUI thread stalls (5 ms probe timer), the first Apply of {r['preset']!r} and the close; "
          f"vLLM's client loop: {r['client']}; vLLM imported in the window's process before the Apply: "
          f"{r['vllm_in_window_before_apply']}")
    print("| action | longest stall ms | stalls over 100 ms | ticks | span s |")
    print("|---|---|---|---|---|")
    for name in ("apply", "close"):
        s = r[name]
        print(f"| {name} | {s['longest_stall_ms']:.1f} | {s['stalls_over_100ms']} | {s['ticks']} | {s['span_s']:.1f} |")
    print(f"close() returned after {r['close_returned_s'] * 1e3:.0f} ms, window hidden then: "
          f"{r['hidden_when_close_returned']}; engine stopped: {r['engine_stopped']}, database closed: "
          f"{r['storage_closed']}; the preset's engine ready after the Apply: {r['ready_after_apply']}")
    if r.get("stalled_at"):
        print("\nWhere the GUI thread was while a tick was over 100 ms late (20 ms samples, innermost frame "
              "← innermost workbench frame):")
        for where, count in r["stalled_at"]:
            print(f"  {count:5d}  {where}")
