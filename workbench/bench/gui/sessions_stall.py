"""How long File > Sessions… stalls the GUI thread on a large database: two sessions of N batch rows each
(100,000 by default) and hours of plotted points, kept through the app's own storage as
``bench session-export`` keeps them. A probe timer asks for a tick every 5 ms; a stall is how late a tick
comes. Python's cycle collector runs on the GUI thread, as in the app. Timed: the window opening until its
sessions are listed and the two latest runs compared, its first half second on the screen (shown), then
Refresh, then Open (the session's stored plots drawn):

    python -m workbench.bench.gui.sessions_stall [--requests 100000] [--hours 2] [--db PATH]

Prints one JSON object: for each step, the seconds until it was shown, the longest stall in ms and the
number of stalls over 100 ms.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QTimer  # noqa: E402

from workbench.bench.gui.gui_stall import PROBE_INTERVAL_MS, Probe  # noqa: E402
from workbench.bench.gui.ui_stalls import _run_loop_until, _stalls  # noqa: E402
from workbench.bench.gui.window_driver import application  # noqa: E402
from workbench.engine.stats import BIN_S  # noqa: E402


def build_database(path: Path, num_requests: int, hours: float, sessions: int = 2) -> None:
    """``sessions`` runs of the app, each a batch run of ``num_requests`` rows and ``hours`` of points."""
    from workbench.bench.session_export_bench import _store
    from workbench.engine.spec import EngineConfig
    from workbench.model.app_model import AppModel
    from workbench.storage.store import Storage

    for _ in range(sessions):
        storage, model = Storage.open(path), AppModel(EngineConfig("demo"), "")
        storage.restore_into(model)
        storage.start(model, {"app_version": "bench"})
        _store(storage, model, num_requests, int(hours * 3600 / BIN_S))
        assert storage.flush(600), storage.problem
        storage.close()


def _busy(view) -> bool:
    """True while the window still reads (a window that reads on its GUI thread is never busy after a call)."""
    return getattr(view, "reading", None) is not None or getattr(view, "comparing", None) is not None


def measure(path: Path) -> dict:
    from workbench.app import collect_garbage_on_gui_thread
    from workbench.ui.sessions_view import SessionsView

    application()
    collector = collect_garbage_on_gui_thread()  # noqa: F841 (as the app: Python's collector on the GUI thread)
    probe = Probe()
    timer = QTimer(interval=PROBE_INTERVAL_MS)
    timer.timeout.connect(probe.on_tick)
    timer.start()
    figures, views = {}, []

    def step(name: str, action, settle_s: float = 0.0) -> object:
        began = time.perf_counter()
        result = action()
        views.append(result if name == "open" else views[-1])
        assert _run_loop_until(lambda: not _busy(views[-1]), 600_000), f"{name}: not shown in 10 minutes"
        _run_loop_until(lambda: time.perf_counter() > began + settle_s, int(settle_s * 1000) + 1000)
        ended = time.perf_counter()
        figures[name] = {"shown_s": round(ended - began, 3),
                         **{k: round(v, 1) if isinstance(v, float) else v
                            for k, v in _stalls(probe.ticks, began, ended).items() if k != "span_s"}}
        return result

    view = step("open", lambda: SessionsView(path, "none"))
    # its first paint on the screen, a step of its own (it had fallen into Refresh's figures)
    step("show", view.show, settle_s=0.5)
    figures["sessions"], figures["runs"] = view.session_table.rowCount(), len(view.runs)
    step("refresh", view.refresh)
    step("open_selected", view.open_selected)
    timer.stop()
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--hours", type=float, default=2.0)
    parser.add_argument("--db", help="an existing database to open (else one is built in a temporary folder)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-sessions-") as folder:
        path = Path(args.db) if args.db else Path(folder) / "workbench.db"
        if not path.exists():
            began = time.perf_counter()
            build_database(path, args.requests, args.hours)
            print(f"built {path} in {time.perf_counter() - began:.1f} s", file=sys.stderr)
        figures = {"requests_a_session": args.requests, "hours": args.hours, "cpus": os.cpu_count(), **measure(path)}
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
