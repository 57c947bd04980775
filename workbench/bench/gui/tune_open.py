"""How long the Tune tab keeps the GUI thread when it opens an ended search, or resumes one, offscreen, no engine:

    python -m workbench.bench.gui.tune_open FOLDER NAME [--repeats 3] [--resume]

FOLDER holds the searches' storage (``searches.db``; W1's, 1,217 trials with the settings refused before their
start: ``docs/results/h100-tune-2026-12-05-night/w1/store/searches.db.xz``, unpacked). Each repeat opens NAME in a
fresh tab while a 10 ms timer ticks, and prints how long ``open_past`` took to return, how long until the table
showed the trials, and the longest gap between two ticks: the longest the window could not answer.

``--resume``: each repeat resumes NAME instead, from a copy of the storage in which the search is made unfinished
(its end and its verdict's reruns cleared), on an engine configuration named as the one it ran on. The engine
commands it posts go nowhere; it prints how long until the search ran (its next run's engine asked for).
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

TICK_MS = 10
SETTLE_S = 1.0


def unfinished_copy(folder: Path, name: str) -> tuple[Path, object]:
    """A copy of the storage with ``name`` unfinished (as an app killed during it leaves it), and the engine
    configuration it ran on."""
    from workbench.engine.spec import EngineConfig
    from workbench.tune.study import SearchStudy

    copy = Path(tempfile.mkdtemp(prefix="tune-resume-"))
    shutil.copy2(folder / "searches.db", copy / "searches.db")
    study = SearchStudy.open(copy, name)
    study.study.set_user_attr("ended", "")
    study.study.set_user_attr("verdict_runs", [])
    return copy, study.base_config or EngineConfig(model="demo", max_model_len=512)


def open_once(app, folder: Path, name: str, resume: bool = False) -> tuple[float, float, float, int]:
    from PySide6.QtCore import QTimer

    from workbench.engine.spec import EngineConfig
    from workbench.model.app_model import AppModel
    from workbench.model.engine_commands import EngineCommands
    from workbench.tune.run import TuneRun
    from workbench.tune.space import default_space
    from workbench.ui.tune_pane import TunePane

    config = EngineConfig(model="demo", max_model_len=512)
    if resume:
        folder, config = unfinished_copy(folder, name)
    model = AppModel(config)
    pane = TunePane(TuneRun(model, EngineCommands(model, lambda command: None), folder),
                    default_space("0.32.0", "cpu"))
    pane.confirm_unknown_model = lambda name, on: True  # a search kept before its model was (W1): yes, resume it
    pane.resize(900, 860)
    pane.show()
    listed = pane.resumable if resume else pane.past
    _pump(app, lambda: listed.count() > 0 and not pane.workers)
    gaps, last = [], [time.perf_counter()]

    def tick() -> None:
        now = time.perf_counter()
        gaps.append(now - last[0])
        last[0] = now

    timer = QTimer()
    timer.timeout.connect(tick)
    timer.start(TICK_MS)
    begun = time.perf_counter()
    pane.resume(name) if resume else pane.open_past(name)
    returned_s = time.perf_counter() - begun
    _pump(app, lambda: pane.trials.rowCount() > 0 and (pane.running or not resume))
    shown_s = time.perf_counter() - begun
    settle = time.monotonic() + SETTLE_S
    _pump(app, lambda: time.monotonic() > settle and not pane.workers)
    timer.stop()
    rows = pane.trials.rowCount()
    if resume:
        pane.stop()
        _pump(app, lambda: not pane.running and not pane.workers)  # the lists read again
        shutil.rmtree(folder, ignore_errors=True)
    pane.close()
    pane.deleteLater()
    return returned_s, shown_s, max(gaps), rows


def _pump(app, done) -> None:
    while not done():
        app.processEvents()
        time.sleep(0.001)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("name")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--resume", action="store_true", help="resume NAME (made unfinished, in a copy)")
    args = parser.parse_args(argv)
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    doing, call = ("resuming", "resume") if args.resume else ("opening", "open_past")
    print(f"{doing} {args.name!r} from {args.folder}, a {TICK_MS} ms timer ticking")
    for repeat in range(1, args.repeats + 1):
        returned_s, shown_s, gap_s, rows = open_once(app, args.folder, args.name, args.resume)
        shown = "shown, the search running," if args.resume else "shown"
        print(f"repeat {repeat}: {call} returned in {returned_s * 1e3:.1f} ms; {rows:,} trials {shown} after "
              f"{shown_s * 1e3:.0f} ms; longest gap between ticks {gap_s * 1e3:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
