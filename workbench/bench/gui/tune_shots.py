"""Offscreen pictures of Tools > Tune… for the docs, a real search on the demo model through the app's
window, on this machine as it is:

    python -m workbench.bench.gui.tune_shots docs [--trials 6] [--repeats 3]

writes ``tune-running.png`` (the Tune tab mid-search: the progress bar with trials done, time left and the
best so far, the plot's points and Pareto front, the table, and the engine region's heatmap and plots on
the running trial's requests), ``tune-verdict.png`` (the verdict's reruns under way) and ``tune-result.png``
(the finished search: every trial in the table, the verdict's ratio to vLLM's defaults with its spread, Apply
as preset and the serve line); with ``--setup-only``,
``tune-setup.png`` alone (the tab before a search; no engine is started). With ``--goodput TTFT_S:TPOT_MS``,
``tune-goodput-result.png`` alone: a burst of 64 requests (24 prompt, 64 output tokens) searched on
``max_num_seqs`` for goodput under those limits, where a TPOT limit below what vLLM's defaults give a full batch
shows the verdict for defaults that served no request within the goal. With ``--resume-only`` (no engine):
``tune-resume-reading.png`` (Resume reading a stored search on its worker: the phase line and the busy bar) and
``tune-resume-ask.png`` (the question asked before a search kept without its model resumes on the engine's). With
``--held-only``: ``tune-stop-to-restart.png``, the question Engine > Restart engine asks mid-search.
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

SEARCH_TIMEOUT_S = 3600.0
WORKLOAD = (("num_requests", 48), ("rate_per_s", 16.0), ("prompt_tokens_mean", 160), ("prompt_tokens_spread", 48),
            ("output_tokens_mean", 48), ("output_tokens_spread", 12), ("shared_prefix_share", 50),
            ("shared_prefix_tokens", 64))
BURST = (("num_requests", 64), ("rate_per_s", 0.0), ("prompt_tokens_mean", 24), ("prompt_tokens_spread", 0),
         ("output_tokens_mean", 64), ("output_tokens_spread", 0), ("shared_prefix_share", 0), ("shared_prefix_tokens", 0))


def set_up(pane, trials: int, repeats: int, goodput: tuple[float, float] | None = None) -> None:
    """A Poisson workload with a shared prefix, the highest output tok/s, TPE, ``trials`` trials; with
    ``goodput`` (TTFT s, TPOT ms), the burst searched on ``max_num_seqs`` alone for goodput under those limits."""
    form = pane.form
    form.workload_kind.setCurrentIndex(form.workload_kind.findData("generated"))
    for key, value in BURST if goodput else WORKLOAD:
        form.gen[key].setValue(value)
    if goodput:
        form.goal_kind.setCurrentIndex(form.goal_kind.findData("goodput"))
        form.ttft_limit.setValue(goodput[0])
        form.itl_limit.setValue(goodput[1])
        for parameter in pane.space.space().parameters:
            pane.space.set_ticked(parameter.name, parameter.name == "max_num_seqs")
    form.max_trials.setValue(trials)
    form.repeats.setValue(repeats)
    form.budget.setValue(20)
    form.name.setText(time.strftime("docs-%Y%m%d-%H%M%S"))


def running_enough(window, pane) -> bool:
    """Three trials ended (one of them a point off the defaults), a quarter of the next one's requests done
    and more of them in the engine."""
    ended = [t for t in pane.trials.trials if t.state != "running"]
    snapshot = window.heatmap.snapshot
    done = re.search(r"(\d+) of (\d+) requests done", pane.phase.text())
    return (len(ended) >= 3 and pane.plot.num_points >= 3 and any(t.state == "running" for t in pane.trials.trials)
            and done is not None and 4 * int(done[1]) >= int(done[2]) and snapshot is not None
            and snapshot.num_in_use > 8 and window.plots.num_draws >= 20)


def running_picture(window, pane, docs: Path, wait) -> None:
    """``tune-running.png``, once a moment worth it comes; a search that ends first (a very busy machine) ends
    the wait too."""
    from workbench.bench.gui.screenshot import save_small

    def in_verdict() -> bool:
        return "verdict" in pane.progress.format()

    if (wait(lambda: running_enough(window, pane) or not pane.running or in_verdict(), SEARCH_TIMEOUT_S)
            and pane.running and not in_verdict()):
        size = save_small(window, str(docs / "tune-running.png"))
        print("saved tune-running.png", f"{size:,} bytes |", pane.progress.format(), "|", pane.phase.text())
    else:
        print("tune-running.png not taken: the trials ended before three of them and a busy fourth were seen "
              "(run again on a quieter machine, or with more --trials)")


def verdict_picture(window, pane, docs: Path, wait) -> None:
    """``tune-verdict.png``: the verdict's reruns under way, the bar part-way (each rerun takes about a trial's
    time), the phase line naming the rerun."""
    from workbench.bench.gui.screenshot import save_small

    def reruns_under_way() -> bool:
        return "verdict" in pane.progress.format() and re.search(r"run [2-9] of", pane.phase.text()) is not None

    if wait(lambda: reruns_under_way() or not pane.running, SEARCH_TIMEOUT_S) and pane.running:
        size = save_small(window, str(docs / "tune-verdict.png"))
        print("saved tune-verdict.png", f"{size:,} bytes |", pane.progress.format(), "|", pane.phase.text(),
              f"| bar {pane.progress.value()} of {pane.progress.maximum()}")
    else:
        print("tune-verdict.png not taken: the search ended before its second rerun pair")


def answer_next_question(path: Path, answer) -> None:
    """The next modal question, once it shows, saved as ``path`` and answered (``answer(box)``)."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from workbench.bench.gui.screenshot import save_small

    def take() -> None:
        box = QApplication.activeModalWidget()
        if box is None:
            QTimer.singleShot(50, take)
            return
        size = save_small(box, str(path))
        print("saved", path.name, f"{size:,} bytes |", box.text().replace("\n", " "))
        answer(box)

    QTimer.singleShot(50, take)


def held_picture(window, pane, docs: Path, wait) -> None:
    """``tune-stop-to-restart.png``: Engine > Restart engine asked for mid-search, the question it asks first
    (answered "Let the search run")."""
    model = window.model
    wait(lambda: model.engine.ready and model.engine.start_id == model.latest_start_id and pane.running, 600)
    answer_next_question(docs / "tune-stop-to-restart.png",
                         lambda box: next(b for b in box.buttons() if b.text() == "Let the search run").click())
    print("Restart engine mid-search:", window.restart_engine() or "nothing started", "| search running:",
          pane.running)


def setup_picture(folder: Path) -> int:
    """``tune-setup.png``: the Tune tab before a search, its setup whole (no engine is started)."""
    import tempfile

    from PySide6.QtWidgets import QApplication

    from workbench.bench.gui.screenshot import save_small
    from workbench.engine.spec import EngineConfig
    from workbench.model.app_model import AppModel
    from workbench.model.engine_commands import EngineCommands
    from workbench.tune.run import TuneRun
    from workbench.tune.space import default_space, gpu_only
    from workbench.ui.tune_pane import TunePane

    app = QApplication.instance() or QApplication([])
    model = AppModel(EngineConfig(model="demo", max_model_len=2048))
    search = TuneRun(model, EngineCommands(model, lambda command: None), Path(tempfile.mkdtemp()) / "tune")
    pane = TunePane(search, default_space("0.32.0", "cpu"), gpu_only=gpu_only("0.32.0"))  # as on this CPU
    pane.resize(760, 1000)
    pane.show()
    app.processEvents()
    size = save_small(pane, str(folder / "tune-setup.png"))
    print("saved tune-setup.png", f"{size:,} bytes")
    pane.close()
    return 0


def resume_pictures(folder: Path) -> int:
    """``tune-resume-reading.png`` and ``tune-resume-ask.png``, from two stored searches (no engine is started)."""
    import tempfile
    from dataclasses import replace

    from PySide6.QtWidgets import QApplication

    from workbench.bench.gui.screenshot import save_small
    from workbench.engine.spec import EngineConfig
    from workbench.model.app_model import AppModel
    from workbench.model.engine_commands import EngineCommands
    from workbench.tune.run import TuneRun
    from workbench.tune.space import default_space
    from workbench.tune.study import SearchStudy
    from workbench.tune.values import Goal, TuneSpec, WorkloadSpec
    from workbench.ui.tune_pane import TunePane

    app = QApplication.instance() or QApplication([])
    model = AppModel(EngineConfig(model="demo", max_model_len=2048))
    stored = Path(tempfile.mkdtemp()) / "tune"
    spec = TuneSpec(WorkloadSpec(num_requests=64), Goal(), default_space("0.32.0", "cpu"), name="chat workload")
    SearchStudy.create(stored, spec, model.config)  # as an app closed mid-search leaves it
    SearchStudy.create(stored, replace(spec, name="nightly batch"))  # no model noted
    pane = TunePane(TuneRun(model, EngineCommands(model, lambda command: None), stored), default_space("0.32.0", "cpu"))
    pane.resize(760, 420)
    pane.show()
    while pane.resumable.count() < 2 or pane.workers:
        app.processEvents()
    pane.resume("chat workload")
    app.processEvents()
    size = save_small(pane, str(folder / "tune-resume-reading.png"))
    print("saved tune-resume-reading.png", f"{size:,} bytes |", pane.phase.text())
    while pane.checking or not pane.running:
        app.processEvents()
    pane.stop()
    while pane.running or pane.workers:
        app.processEvents()

    answer_next_question(folder / "tune-resume-ask.png", lambda box: box.reject())
    pane.resume("nightly batch")
    while pane.checking:
        app.processEvents()
    print(pane.message.text())
    pane.close()
    return 0


def model_settled(window) -> bool:
    model = window.model
    return model.engine.settled(model.latest_start_id)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default="docs")
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)  # the app's default, the fewest the verdict should have
    parser.add_argument("--setup-only", action="store_true", help="only tune-setup.png (no engine)")
    parser.add_argument("--resume-only", action="store_true", help="only the two pictures of Resume (no engine)")
    parser.add_argument("--held-only", action="store_true",
                        help="only tune-stop-to-restart.png: Restart engine asked for mid-search")
    parser.add_argument("--goodput", default="", metavar="TTFT_S:TPOT_MS",
                        help="only tune-goodput-result.png: the burst, max_num_seqs, goodput under these limits")
    args = parser.parse_args(argv)
    goodput = tuple(float(v) for v in args.goodput.split(":")) if args.goodput else None
    if args.setup_only:
        return setup_picture(Path(args.folder))
    if args.resume_only:
        return resume_pictures(Path(args.folder))
    from workbench.bench.gui.screenshot import _started_window, close_window, save_small

    window, wait = _started_window((1500, 940))
    if window is None:
        return 1
    docs = Path(args.folder)
    pane = window.tune.show_tab()
    set_up(pane, args.trials, args.repeats, goodput)
    pane.start()  # checked on a worker thread first
    wait(lambda: pane.running or pane.buttons["start"].isEnabled(), 600)
    if not pane.running:
        print("the search did not start:", pane.message.text())
        close_window(window)
        return 1
    if args.held_only:
        held_picture(window, pane, docs, wait)
        pane.stop()
        wait(lambda: not pane.running and model_settled(window), 600)
        close_window(window)
        return 0
    if not goodput:  # a burst's trial lasts a second: no moment mid-trial worth a picture
        running_picture(window, pane, docs, wait)
        verdict_picture(window, pane, docs, wait)
    wait(lambda: not pane.running, SEARCH_TIMEOUT_S)
    pane.table.selectRow(pane.trials.row_of(pane.trials.best_number or 0) or 0)
    wait(lambda: model_settled(window), 600)  # the user's engine back: the search's last start
    wait(lambda: False, 0.5)
    name = "tune-goodput-result.png" if goodput else "tune-result.png"
    size = save_small(window, str(docs / name))
    print("saved", name, f"{size:,} bytes |", pane.message.text() or pane.verdict_label.text()[:200])
    close_window(window)
    return 0


if __name__ == "__main__":
    sys.exit(main())
