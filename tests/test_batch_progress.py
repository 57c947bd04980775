"""A batch run's progress without an engine, on a clock the test moves: the ETA waits for a measured
rate and then follows the run's real pace; after Cancel the counts say what was done and what not."""
from __future__ import annotations

from workbench.batch.eta import CompletionRate
from workbench.batch.formats import BatchPrompt
from workbench.batch.results import BatchResults
from workbench.batch.run import BatchRun, RunSettings
from workbench.engine.backend import StreamEvent
from workbench.engine.commands import Submit
from workbench.engine.spec import EngineConfig
from workbench.model.app_model import AppModel
from workbench.model.engine_commands import EngineCommands

TICK_S = 0.25  # the pane reads the progress at 4 Hz


class Clock:
    def __init__(self):
        self.now_s = 0.0

    def __call__(self) -> float:
        return self.now_s


def wave_run(num_rows: int, bound: int) -> tuple[BatchRun, Clock, list]:
    results = BatchResults()
    for line_no in range(1, num_rows + 1):
        results.append(BatchPrompt(line_no, prompt=f"prompt {line_no}"))
    clock, posted = Clock(), []
    commands = EngineCommands(AppModel(EngineConfig("demo")), posted.append)  # what the run sends, kept
    run = BatchRun(1, results, RunSettings(max_in_flight=bound), commands, clock=clock)
    return run, clock, posted


def finish_in_flight(run: BatchRun, posted: list, reason: str = "length") -> None:
    """Ends every request the run has in the engine now (the rows sent together end together)."""
    sent = [c.request.request_id for c in posted if isinstance(c, Submit)]
    for request_id in [r for r in sent if run.owns(r)]:
        run.request_finished(StreamEvent(request_id, "", True, reason, None))


def test_the_eta_waits_for_a_wave_and_then_follows_a_15_second_run():
    """300 rows, 28 at a time, each wave 1.4 s: a 15.4 s run. The first row that finishes alone (at
    1.0 s) once made the ETA 299 × 1.0 s, five minutes; now nothing is promised until a wave's worth
    of rows has finished, and then the promise is within a quarter of the truth, and stays within
    reach of it until the end."""
    run, clock, posted = wave_run(300, 28)
    run.start()
    wave_s, shown = 1.4, []
    first_sent = [c.request.request_id for c in posted if isinstance(c, Submit)]
    clock.now_s = 1.0
    run.request_finished(StreamEvent(first_sent[0], "", True, "length", None))  # an early one, alone
    assert run.progress().eta_s is None, "one row is no rate"
    next_wave_s = wave_s
    while run.state == "running":
        clock.now_s = round(clock.now_s + TICK_S, 6)
        if clock.now_s >= next_wave_s:
            finish_in_flight(run, posted)
            next_wave_s += wave_s
        shown.append((clock.now_s, run.progress().eta_s))
    end_s = clock.now_s
    estimates = [(at, eta) for at, eta in shown if eta is not None and at < end_s]
    assert estimates and estimates[0][0] >= 1.4, "no estimate before a wave's worth of rows has finished"
    assert all(eta is None for at, eta in shown if at < 1.4)
    first_at, first_eta = estimates[0]
    assert abs(first_eta - (end_s - first_at)) <= 0.25 * (end_s - first_at), (first_eta, end_s - first_at)
    for at, eta in estimates:
        assert eta <= 2 * (end_s - at) + TICK_S, (at, eta, end_s)
    assert run.progress().eta_s == 0.0


def test_the_rate_follows_the_recent_past_and_counts_a_stall():
    rate = CompletionRate(min_rows=10, min_interval_s=2.0, window_s=20.0)
    for i in range(100):  # 10 rows/s for 10 s
        rate.row_finished(0.1 * (i + 1))
    assert rate.rows_per_s(10.0) == 10.0
    for i in range(400):  # then 40 rows/s for 10 s
        rate.row_finished(10.0 + 0.025 * (i + 1))
    assert 20.0 < rate.rows_per_s(20.0) < 30.0  # the last 20 s: both paces
    for i in range(800):  # another 20 s at 40 rows/s: the first pace has left the window
        rate.row_finished(20.0 + 0.025 * (i + 1))
    assert abs(rate.rows_per_s(40.0) - 40.0) < 2.0
    assert abs(rate.eta_s(40.0, 400) - 10.0) < 1.0
    assert rate.eta_s(40.2, 400) < rate.eta_s(40.0, 400), "between completions, time left still passes"
    assert rate.eta_s(60.0, 400) > 10.0, "after 20 s without a row, the wait counts in the rate"


def test_no_eta_before_two_seconds_of_running_however_fast_the_rows():
    rate = CompletionRate(min_rows=4)
    for i in range(50):
        rate.row_finished(0.01 * (i + 1))
    assert rate.eta_s(1.0, 100) is None and rate.eta_s(2.0, 100) is not None


def test_after_cancel_the_progress_counts_done_cancelled_and_failed():
    run, clock, posted = wave_run(300, 28)
    run.start()
    for _ in range(6):
        clock.now_s += 1.0
        finish_in_flight(run, posted)  # 168 done, 28 more sent
    in_engine = [c.request.request_id for c in posted if isinstance(c, Submit) and run.owns(c.request.request_id)]
    run.request_failed(in_engine[0], "the engine refused it")
    run.request_finished(StreamEvent(in_engine[1], "", True, "stop", None))  # ended before the abort landed
    run.cancel()
    finish_in_flight(run, posted, reason="aborted")
    progress = run.progress()
    assert (progress.num_done, progress.num_failed, progress.num_cancelled) == (169, 1, 130)
    assert progress.num_finished == 300 and progress.eta_s == 0.0 and progress.state == "cancelled"
