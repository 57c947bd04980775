"""The Tune tab's own widgets, no engine: the search space's table (output-changing arguments unticked
and marked, a range edited and read back, one that does not read named on its row, the text kept),
the form read as a TuneSpec, what a search reports drawn (points, failed crosses, the Pareto front,
the table's rows replaced as trials end, the verdict's ratio and spread) and a refusal's messages put
beside their fields. The search here is a stand-in that only emits what a search emits: these are
layout tests; the real search runs in test_tune_window.py."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from psygnal import Signal
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from workbench.tune.problems import TuneRefused
from workbench.tune.space import default_space
from workbench.tune.values import (
    Goal, TrialFigures, TrialResult, TuneProgress, TuneSpec, Verdict, WorkloadSpec,
)
from workbench.ui.tune_pane import TunePane
from workbench.ui.tune_space import SpaceProblem, read_range
from workbench.ui.tune_text import ENDED, end_text


class SearchStandIn:
    """Emits what a search emits; records what the pane asked of it."""

    progress_changed = Signal(object)
    trial_finished = Signal(object)
    finished = Signal(object, str)

    def __init__(self, refusal: list[str] | None = None):
        self.refusal, self.started, self.stopped, self.opened, self.shown = refusal, None, False, None, []

    def check(self, spec):  # on the pane's worker thread
        return list(self.refusal or ())

    def start(self, spec):
        if self.refusal:
            raise TuneRefused(self.refusal)
        self.started = spec
        self.trial_finished.emit(TrialResult(0, {}, "running"))  # a search reports its first trial within start

    def stop(self):
        self.stopped = True

    def prepare_resume(self, name):  # on the pane's worker thread
        return name

    def resume(self, name, ready=None):
        self.started = ready

    def resumable(self):
        return ["tune-killed"]

    def past(self):  # newest first: the search started here once it ended
        ended = [self.started.name] if isinstance(self.started, TuneSpec) else []
        return ended + ["tune-done"]

    def read_stored(self, name):  # on the pane's worker thread
        if name != "tune-done":
            raise KeyError(f"no search named {name!r} is kept")
        return (trial(0, 1000, 0.8), trial(1, 1300, 0.5, max_num_seqs=16))

    def open(self, name, stored):  # an ended search, shown as it ended: its trials, then its verdict
        self.opened, self.shown = name, list(stored)
        self.study = SimpleNamespace(spec=TuneSpec(WorkloadSpec(num_requests=8), Goal(),
                                                   default_space("0.32.0", "cpu"), name=name))
        self.finished.emit(Verdict(1, {"max_num_seqs": 16}, (1300, 1290, 1310), (1000, 990, 1010), 1.3, 1.28,
                                   1.32, ""), "")

    def trials(self):
        return list(self.shown)

    def apply_as_preset(self, name):
        return f"/presets/{name}.toml"

    def serve_line(self):
        return "vllm serve /models/demo \\\n  --max-num-seqs 24 \\\n  --block-size 32\n"


def trial(number: int, tok_s: float, ttft_s: float, state: str = "complete", **params) -> TrialResult:
    figures = TrialFigures(tok_s, tok_s, ttft_s / 2, ttft_s, 20.0, 16, 0, 4.0) if state == "complete" else TrialFigures()
    return TrialResult(number, params, state, figures, error="the engine did not start: no room for a block"
                       if state == "failed" else "", goal_value=tok_s if state == "complete" else None)


@pytest.fixture
def pane(qtbot):
    search = SearchStandIn()
    pane = TunePane(search, default_space("0.32.0", "cpu"))
    qtbot.addWidget(pane)
    pane.resize(700, 860)
    pane.show()
    qtbot.waitUntil(lambda: pane.resumable.count() == 1)  # read off the GUI thread
    return pane


def test_output_changing_arguments_come_unticked_and_marked(pane):
    table = pane.space.table
    row = pane.space.row_of("speculative_config")
    assert table.item(row, 0).checkState() == Qt.Unchecked
    assert "changes outputs" in table.item(row, 3).text()
    assert table.item(pane.space.row_of("max_num_seqs"), 0).checkState() == Qt.Checked
    assert "speculative_config" not in [p.name for p in pane.space.space().searched()]
    pane.space.set_ticked("speculative_config", True)
    assert pane.space.space().parameter("speculative_config").enabled


def test_an_edited_range_is_read_back_and_a_bad_one_named_on_its_row(pane):
    pane.space.set_range_text("max_num_seqs", "8 – 64 (log)")
    pane.space.set_range_text("block_size", "32, 128")
    space = pane.space.space()
    assert (space.parameter("max_num_seqs").low, space.parameter("max_num_seqs").high) == (8, 64)
    assert space.parameter("block_size").choices == (32, 128)
    pane.space.set_range_text("max_num_seqs", "64 – 8")
    assert not pane.start()
    assert pane.tune.started is None
    assert "swap them" in pane.space.problem.text() and pane.space.problem.isVisible()
    assert pane.space.table.item(pane.space.row_of("max_num_seqs"), 2).text() == "64 – 8"  # the text stays
    with pytest.raises(SpaceProblem, match="whole numbers"):
        read_range(default_space("0.32.0", "cpu").parameter("block_size"), "32, big")


def test_the_form_reads_as_the_spec_the_search_starts_with(pane, qtbot):
    form = pane.form
    form.workload_kind.setCurrentIndex(form.workload_kind.findData("generated"))
    form.gen["num_requests"].setValue(16)
    form.gen["rate_per_s"].setValue(4.0)
    form.gen["shared_prefix_share"].setValue(50)
    form.gen["shared_prefix_tokens"].setValue(128)
    form.goal_kind.setCurrentIndex(form.goal_kind.findData("goodput"))
    form.ttft_limit.setValue(1.5)
    form.itl_limit.setValue(40)
    form.sampler.setCurrentIndex(form.sampler.findData("nsga2"))
    form.budget.setValue(12)
    assert pane.start()
    assert not pane.buttons["start"].isEnabled() and "Checking" in pane.phase.text()  # checked off the GUI thread
    qtbot.waitUntil(lambda: pane.running)
    spec = pane.tune.started
    assert (spec.workload.num_requests, spec.workload.rate_per_s, spec.workload.shared_prefix_share) == (16, 4.0, 0.5)
    assert spec.workload.shared_prefix_tokens == 128
    assert (spec.goal.kind, spec.goal.ttft_p99_limit_s, spec.goal.itl_p99_limit_ms) == ("goodput", 1.5, 40)
    assert (spec.sampler, spec.time_budget_s, spec.repeats) == ("nsga2", 720, 3)
    assert not pane.buttons["start"].isEnabled() and pane.buttons["stop"].isEnabled()
    assert pane.setup_area.isHidden() and "16 generated requests" in pane.summary.text()  # the results take the room
    assert not pane.table.isColumnHidden(pane.trials.headers().index("Goodput tok/s"))  # a goodput goal's figure
    pane.setup_button.click()
    assert not pane.setup_area.isHidden() and pane.summary.isHidden()
    pane.stop()
    assert pane.tune.stopped


def test_a_refusal_is_shown_beside_each_field_it_is_about(qtbot):
    messages = ["The time budget (0.5 min) is shorter than one engine start here (42 s measured): give it "
                "at least 2 minutes.",
                "block_size 48: vLLM's CPU attention takes a multiple of 32; choose 32, 64 or 128.",
                "/data/prompts.jsonl line 3: not JSON (Expecting value); fix or remove the line."]
    pane = TunePane(SearchStandIn(refusal=messages), default_space("0.32.0", "cpu"))
    qtbot.addWidget(pane)
    pane.form.workload_kind.setCurrentIndex(pane.form.workload_kind.findData("file"))
    pane.form.file_path.setText("/data/prompts.jsonl")
    assert pane.start()
    qtbot.waitUntil(lambda: pane.buttons["start"].isEnabled())
    assert not pane.running and pane.tune.started is None
    assert "shorter than one engine start" in pane.form.problems["budget"].text()
    assert "line 3" in pane.form.problems["workload"].text()
    assert "block_size 48" in pane.space.problem.text()
    assert pane.space.table.item(pane.space.row_of("block_size"), 2).toolTip().startswith("block_size 48")
    assert pane.form.file_path.text() == "/data/prompts.jsonl"  # nothing typed is lost
    assert pane.buttons["start"].isEnabled()


def test_trials_are_drawn_and_tabled_as_they_end_and_the_verdict_shown(pane, qtbot):
    assert pane.start()
    qtbot.waitUntil(lambda: pane.running)
    search = pane.tune
    assert [(t.number, t.state) for t in pane.trials.trials] == [(0, "running")]
    search.trial_finished.emit(trial(0, 1000, 0.8))
    search.trial_finished.emit(TrialResult(1, {"max_num_seqs": 16}, "running"))
    assert [pane.trials.cell(t, 1) for t in pane.trials.trials] == ["complete", "running"]
    search.trial_finished.emit(trial(1, 1300, 0.5, max_num_seqs=16))
    search.trial_finished.emit(trial(2, 0, 0, "failed", max_num_seqs=128))
    search.trial_finished.emit(trial(3, 1500, 1.1, max_num_seqs=64))
    best = pane.trials.trials[3]
    search.progress_changed.emit(TuneProgress(4, None, 60.0, 240.0, best, (1, 3), 4, "Trial 4: starting the engine"))
    assert pane.trials.rowCount() == 4 and pane.plot.num_points == 4
    assert pane.table.isColumnHidden(pane.trials.headers().index("Goodput tok/s"))  # output tok/s says it all
    assert pane.plot.front == (1, 3)
    failed_row = pane.trials.trials[2]
    assert pane.trials.cell(failed_row, pane.trials.columnCount() - 1).startswith("the engine did not start")
    assert pane.trials.data(pane.trials.index(2, 1), Qt.ToolTipRole).startswith("Trial 2 failed: the engine")
    # a row's settings on hover, wherever the columns are scrolled to
    assert pane.trials.data(pane.trials.index(1, 3), Qt.ToolTipRole) == "Trial 1\nmax_num_seqs=16"
    assert pane.trials.data(pane.trials.index(0, 0), Qt.ToolTipRole) == "Trial 0\nvLLM's defaults"
    assert pane.trials.cell(failed_row, pane.trials.headers().index("Output tok/s")) == ""  # nothing measured
    assert "4 trials done" in pane.progress.format() and "4 min 00 s left" in pane.progress.format()
    assert "trial 3" in pane.progress.format() and pane.phase.text() == "Trial 4: starting the engine"
    # the verdict's reruns take about a trial's time each: the bar is not full while they run
    search.progress_changed.emit(TuneProgress(4, 4, 300.0, 180.0, best, (1, 3), None, "Rerun 3 of 6, best",
                                              "verdict", num_reruns_done=2, num_reruns_planned=6))
    assert pane.progress.value() == pane.progress.maximum() * 6 // 10
    verdict = Verdict(3, {"max_num_seqs": 64}, (1500, 1480, 1520), (1000, 1010, 990), 1.5, 1.46, 1.54, "")
    search.finished.emit(verdict, "")
    assert pane.progress.value() == pane.progress.maximum() and pane.progress.format() == "Finished"
    assert "1.50× the defaults" in pane.verdict_label.text() and "1.46–1.54×" in pane.verdict_label.text()
    # the list beside Open says which search is shown: the one that just ended, not the one chosen before it
    qtbot.waitUntil(lambda: pane.past.count() == 2)
    assert pane.past.currentText() == search.started.name != "tune-done"
    assert pane.buttons["preset"].isEnabled() and pane.buttons["serve"].isEnabled()
    assert pane.copy_serve_line() == "vllm serve /models/demo \\\n  --max-num-seqs 24 \\\n  --block-size 32\n"
    assert QApplication.clipboard().text() == pane.copy_serve_line()  # as written, to paste in a shell
    assert pane.message.text() == "Copied to the clipboard: vllm serve /models/demo --max-num-seqs 24 --block-size 32"
    pane.ask_name = lambda: "my-best"
    assert pane.apply_as_preset() == "/presets/my-best.toml"
    assert "my-best" in pane.message.text()
    search.refusal = ["The time budget (6 s) is shorter than one engine start here (40 s)."]
    assert pane.start()
    qtbot.waitUntil(lambda: pane.buttons["start"].isEnabled())
    assert pane.trials.rowCount() == 4 and "1.50×" in pane.verdict_label.text()  # the last search stays shown
    assert "shorter than one engine start" in pane.form.problems["budget"].text()


def test_the_verdict_is_green_only_where_every_rerun_pair_beat_the_defaults():
    """A median of 1.00× whose pairs straddle 1 is the measure's spread, neither a win nor a loss: said in the
    text's own colour, whichever side of 1 the median fell; every pair above 1, green; every pair below 1 (or a
    goal no trial met), red."""
    from workbench.tune.values import Goal
    from workbench.ui.tune_text import BETTER_COLOUR, WORSE_COLOUR, verdict_html

    def html(low, median, high, goal_met=True):
        verdict = Verdict(1, {"max_num_seqs": 99}, (1.0, 1.0, 1.0), (1.0, 1.0, 1.0), median, low, high, "", goal_met)
        return verdict_html(verdict, Goal())

    assert f"color:{BETTER_COLOUR}'>1.05× the defaults" in html(1.02, 1.05, 1.08)
    straddles = html(0.98, 1.0003, 1.03)
    assert "<b>1.00× the defaults</b>" in straddles and "color:" not in straddles
    just_below = html(0.986, 0.999, 1.001)  # as the window's own search measured on CPU: noise, not a loss
    assert "<b>1.00× the defaults</b>" in just_below and "color:" not in just_below
    assert f"color:{WORSE_COLOUR}'>0.95× the defaults" in html(0.90, 0.95, 0.99)
    assert f"color:{WORSE_COLOUR}'>1.05× the defaults" in html(1.02, 1.05, 1.08, goal_met=False)


def test_a_goodput_search_plots_goodput_so_the_best_is_the_highest_point(qtbot):
    """For a goodput goal the plot's height is goodput tok/s (the goal's throughput): a trial fast but outside
    the limits is low, not high; the Pareto front is drawn on the same figure."""
    from workbench.tune.measure import pareto_front
    from workbench.tune.values import Goal
    from workbench.ui.tune_plot import TunePlot, trial_tip

    goal = Goal("goodput", ttft_p99_limit_s=2.0, itl_p99_limit_ms=50.0)
    fast = TrialResult(0, {}, "complete", TrialFigures(14000.0, 0.0, 0.02, 0.03, 60.0, 64, 0, 1.0), goal_value=0.0)
    kept = TrialResult(1, {"max_num_seqs": 4}, "complete", TrialFigures(1700.0, 1700.0, 1.2, 2.0, 2.4, 64, 0, 5.0),
                       goal_value=1700.0)
    plot = TunePlot()
    qtbot.addWidget(plot)
    plot.set_goal(goal)
    points = [(t.number, goal.throughput_of(t.figures), t.ttft_p99_s) for t in (fast, kept)]
    plot.show_trials([fast, kept], pareto_front(points), best_number=1)
    assert plot.plot.getAxis("left").labelText == "goodput tok/s"
    assert [tuple(p.pos()) for p in plot.best_item.points()] == [(2.0, 1700.0)]
    assert [tuple(p.pos()) for p in plot.defaults_item.points()] == [(0.03, 0.0)]
    assert plot.front == (0, 1)  # the defaults' TTFT is lower, the best's goodput higher
    assert trial_tip(fast, goal).startswith("Trial 0: 14,000 output tok/s, 0 goodput tok/s, p99 TTFT 0.030 s")


def test_an_ended_search_opens_with_its_table_plot_and_verdict_and_its_best_can_be_applied(pane, qtbot):
    assert pane.past.isVisible() and pane.buttons["open"].isVisible() and pane.past.currentText() == "tune-done"
    assert not pane.buttons["preset"].isEnabled()  # nothing shown yet
    assert pane.open_past()
    assert not pane.buttons["open"].isVisible() and not pane.buttons["start"].isEnabled()  # while it is read
    qtbot.waitUntil(lambda: pane.tune.opened == "tune-done")
    assert not pane.running and pane.buttons["start"].isEnabled()
    assert [t.number for t in pane.trials.trials] == [0, 1] and pane.plot.num_points == 2
    assert "1.30× the defaults" in pane.verdict_label.text() and pane.progress.format() == "Finished"
    assert not pane.setup_area.isVisible() and pane.summary.isVisible()  # the results have the room
    assert pane.summary.text().startswith("tune-done: 8 generated requests")
    assert pane.buttons["preset"].isEnabled() and pane.buttons["serve"].isEnabled()
    pane.ask_name = lambda: "from-the-past"
    assert pane.apply_as_preset() == "/presets/from-the-past.toml"
    assert pane.open_past("gone since")  # its storage gone since it was listed: said, nothing lost
    qtbot.waitUntil(lambda: "gone since cannot be opened: it is no longer kept." == pane.message.text())
    qtbot.waitUntil(lambda: not pane.workers)  # the lists read again
    assert [t.number for t in pane.trials.trials] == [0, 1] and "1.30×" in pane.verdict_label.text()


def test_on_a_cpu_the_space_names_what_a_gpu_adds(qtbot):
    """The issue's GPU arguments are not offered on a CPU; the tab names them rather than leave them out unsaid."""
    from workbench.tune.space import gpu_only

    names = gpu_only("0.32.0")
    assert names == ("gpu_memory_utilization", "async_scheduling", "max_cudagraph_capture_size", "optimization_level",
                     "kv_cache_dtype", "quantization")
    cpu = TunePane(SearchStandIn(), default_space("0.32.0", "cpu"), gpu_only=names)
    gpu = TunePane(SearchStandIn(), default_space("0.32.0", "cuda"))
    for pane in (cpu, gpu):
        qtbot.addWidget(pane)
    assert not cpu.space.elsewhere.isHidden() and cpu.space.elsewhere.text() == (
        "Searched on a GPU only: gpu_memory_utilization, async_scheduling, max_cudagraph_capture_size, "
        "optimization_level, kv_cache_dtype, quantization.")
    assert gpu.space.elsewhere.isHidden()
    assert not set(names) & {p.name for p in cpu.space.space().parameters}


def test_apply_as_preset_asks_before_it_replaces_a_preset(pane, tmp_path, monkeypatch):
    """The name suggested replaces no preset; a name taken (typed by the user) is asked about, and No keeps it."""
    from workbench.presets import store

    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path / "config"))
    pane.spec = TuneSpec(WorkloadSpec(num_requests=8), Goal(), default_space("0.32.0", "cpu"), name="night")
    store.user_path("night-best").write_text('[preset]\nname = "night-best"\n[engine]\nmax_num_seqs = 8\n')
    asked = []
    pane.confirm_replace = lambda names: asked.append(names) or False
    pane.ask_name = lambda: "night-best"
    assert pane.apply_as_preset() == "" and asked == [["night-best"]]
    assert "not saved" in pane.message.text() and "“night-best” is kept" in pane.message.text()
    assert "max_num_seqs = 8" in store.user_path("night-best").read_text()
    pane.confirm_replace = lambda names: True
    assert pane.apply_as_preset() == "/presets/night-best.toml"
    names = []
    monkeypatch.setattr("workbench.ui.tune_pane.QInputDialog.getText",
                        lambda parent, title, label, text: names.append(text) or (text, True))
    assert pane._ask_preset_name() == "night-best-2" and names == ["night-best-2"]


def test_the_bar_says_how_a_search_ended():
    """A verdict, the user's Stop, a pause before a device call's end, or no verdict the search could give."""
    verdict = Verdict(3, {"max_num_seqs": 64}, (1500, 1480, 1520), (1000, 1010, 990), 1.5, 1.46, 1.54, "")
    assert end_text(verdict, "") == "Finished"
    assert end_text(None, "Stopped: 4 trials kept.") == "Stopped"
    assert end_text(None, "Stopped before its verdict: 1 trial kept.") == "Stopped"
    assert end_text(None, "Paused before the next trial, which would not end in time: 2 trials and 0 of 6 "
                          "reruns kept; resume 'w1' to go on.") == "Paused"
    assert end_text(None, "No setting met the goal (goodput): not one request of any trial was within the "
                          "limits.") == ENDED == "Ended without a verdict"


def test_a_pane_closed_while_its_lists_are_read_is_not_written_to_afterwards(qtbot):
    """The lists beside Resume and Open are read on a worker; a pane closed meanwhile (the window closing, a test
    ending) gets no call from it afterwards (it raised: the combo box's C++ object already deleted)."""
    import threading

    from PySide6.QtCore import QCoreApplication, QEvent

    release = threading.Event()

    class SlowLists(SearchStandIn):
        def past(self):  # on the pane's worker thread
            release.wait(10)
            return ["tune-done"]

    search = SlowLists()
    pane = TunePane(search, default_space("0.32.0", "cpu"))
    pane.show()
    workers = set(pane.workers)
    pane.offer_resumable(shown="tune-done")  # as a search that just ended asks
    workers |= pane.workers
    pane.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.DeferredDelete)
    release.set()
    qtbot.waitUntil(lambda: all(not w.is_running for w in workers), timeout=10_000)
    qtbot.wait(100)  # the workers' results delivered, had anything still listened


def test_a_pane_deleted_while_its_settings_are_checked_gets_no_call_afterwards(qtbot):
    """Start checks the settings on a worker; a pane deleted meanwhile (the window closing, a test ending) gets no
    call from it (its busy bar's C++ object was gone: 'QProgressBar already deleted', in the clean clone at 40aac48
    on a busy machine, raised in the next test)."""
    import threading

    from PySide6.QtCore import QCoreApplication, QEvent

    release, called = threading.Event(), []

    class SlowCheck(SearchStandIn):
        def check(self, spec):  # on the pane's worker thread
            release.wait(10)
            return []

    pane = TunePane(SlowCheck(), default_space("0.32.0", "cpu"))
    pane.show()
    pane._on_checked = lambda *args: called.append(args)  # what the check's end would call, were the pane there
    workers = set(pane.workers)
    assert pane.start() and pane.checking
    workers |= pane.workers
    pane.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.DeferredDelete)
    release.set()
    qtbot.waitUntil(lambda: all(not w.is_running for w in workers), timeout=10_000)
    qtbot.wait(100)  # the worker's result delivered, had anything still listened
    assert called == []
