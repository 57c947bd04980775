"""Tune through the app's own engine path and the real vLLM CPU engine (the demo model): a whole search ends
with a verdict and its spread, a trial whose engine cannot start is recorded and the search goes on, the
best is saved as a preset and written as a ``vllm serve`` line; a search whose process is killed resumes
from Optuna's storage, and an engine that dies mid-trial fails that trial only."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from chat_driver import ENGINE_START_TIMEOUT_MS, HANG_TIMEOUT_MS, reply_line, type_and_send, wait_finished
from workbench.engine.demo_model import demo_model_dir
from workbench.engine.process_guard import is_running
from workbench.presets.document import read_preset
from workbench.tune.run import HOLD, TuneRun
from workbench.tune.study import CUT_SHORT
from workbench.tune.values import Goal, SearchParameter, SearchSpace, TuneSpec, WorkloadSpec

pytestmark = pytest.mark.slow  # the real engine: each trial is an engine start

SEARCH_TIMEOUT_MS = 1_500_000
MODES = SearchParameter("performance_mode", "choice", choices=("balanced", "throughput"))


HEARD: list = []  # the searches of the running test, stopped at its end if a failed assertion left one running


@pytest.fixture(autouse=True)
def no_search_outlives_its_test(qtbot):
    """A test that fails mid-search leaves its search holding the shared window's engine (its chat questions
    held, its trials restarting the engine under the next test): stopped here, and waited for."""
    yield
    for heard in HEARD:
        if heard.run.running:
            heard.run.stop()
            qtbot.waitUntil(lambda: bool(heard.ended), timeout=ENGINE_START_TIMEOUT_MS)
    HEARD.clear()


class Heard:
    """What a search told the window."""

    def __init__(self, run: TuneRun):
        self.run = run
        HEARD.append(self)
        self.trials, self.progress, self.ended = [], [], []
        run.trial_finished.connect(self.trials.append)
        run.progress_changed.connect(self.progress.append)
        run.finished.connect(lambda verdict, message: self.ended.append((verdict, message)))


@pytest.mark.timeout(1800)
def test_a_search_ends_with_a_verdict_a_failed_start_is_kept_and_the_best_is_applied(window, qtbot, tmp_path,
                                                                                      monkeypatch):
    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path / "config"))
    too_few_blocks = SearchParameter("num_gpu_blocks_override", "choice", choices=(4,))  # 128 tokens < 2,048
    # speculative decoding may change outputs: ticked, each trial's greedy outputs are compared with trial 0's
    speculation = SearchParameter("speculative_config", "choice", choices=("ngram:3",), changes_outputs=True)
    spec = TuneSpec(WorkloadSpec(num_requests=16, prompt_tokens_mean=24, prompt_tokens_spread=8,
                                 output_tokens_mean=8, rate_per_s=20.0),
                    Goal(), SearchSpace((MODES, too_few_blocks, speculation)), time_budget_s=3600, repeats=2,
                    name="whole path", max_trials=3)
    run = TuneRun(window.model, window.commands, tmp_path / "tune")
    heard = Heard(run)
    demo_config = window.model.config
    run.start(spec)
    # a question asked during the search waits, saying why, for the user's engine after it
    qtbot.waitUntil(lambda: run.current is not None and run.current.state == "measuring",
                    timeout=ENGINE_START_TIMEOUT_MS)
    _, question = type_and_send(window, qtbot, "Are you there?")
    assert question.status == "waiting"
    qtbot.waitUntil(lambda: reply_line(window, question) == f"waiting: {HOLD}", timeout=HANG_TIMEOUT_MS)
    qtbot.waitUntil(lambda: bool(heard.ended), timeout=SEARCH_TIMEOUT_MS)
    verdict, message = heard.ended[0]
    trials = run.trials()
    assert [(t.number, t.state) for t in trials] == [(0, "complete"), (1, "complete"), (2, "failed")], trials
    assert trials[0].params == {} and trials[1].params == {"performance_mode": "throughput"}
    assert trials[2].error.startswith("The engine did not start: the KV cache is too small"), trials[2].error
    assert trials[2].params["num_gpu_blocks_override"] == 4
    assert trials[0].output_agreement == 1.0 and 0.0 <= trials[1].output_agreement <= 1.0  # against trial 0's
    assert trials[2].output_agreement is None  # nothing measured
    for trial in trials[:2]:  # the workload sent at its arrival times: 16 requests at 20/s span 0.6 s or more
        assert trial.num_requests_done == 16 and trial.figures.num_requests_failed == 0
        assert trial.duration_s >= 0.5 and trial.output_tokens_per_s > 0 and trial.ttft_p99_s > 0
        assert trial.goal_value == trial.output_tokens_per_s and trial.engine_start_s > 0
        assert trial.gap_p99_ms > 0 and trial.itl_p99_ms > 0  # every gap between tokens timed, and each mean
        # the batch limits left open, as vLLM resolved them for `vllm serve` (kept for the preset)
        assert set(trial.batch_limits) == {"max_num_batched_tokens", "max_num_seqs"}, trial.batch_limits
        assert min(trial.batch_limits.values()) > 0
    assert verdict is not None and message == "", message
    assert len(verdict.best_values) == len(verdict.default_values) == 2
    assert verdict.ratio_min <= verdict.ratio_median <= verdict.ratio_max and verdict.ratio_min > 0
    if verdict.best_number == 0:  # the defaults won: their reruns against themselves give the noise
        assert verdict.text.startswith("No setting beat vLLM's defaults on highest output tok/s"), verdict.text
    else:
        assert "× vLLM's defaults on highest output tok/s (median of 2 paired reruns" in verdict.text
    assert verdict.best_number in (0, 1)
    assert [t.state for t in heard.trials].count("running") == 3  # each trial announced as it started
    phases = [p.phase_text for p in heard.progress]
    assert "Trial 2: starting the engine" in phases and "Verdict: best, run 2 of 2: starting the engine" in phases
    assert heard.progress[-1].phase == "finished" and heard.progress[-1].num_trials_done == 3
    assert run.resumable() == []  # a search with its verdict is not offered again
    line = run.serve_line()
    assert line.startswith(f"vllm serve {demo_model_dir()} ")  # the demo's folder: `vllm serve demo` would fail
    assert "--max-model-len 2048" in line and "--scheduling-policy" not in line
    assert ("--performance-mode throughput" in line) == (verdict.best_number == 1)
    path = run.apply_as_preset("tuned demo")
    preset = read_preset(Path(path))
    assert preset.origin()["search"] == "whole path" and preset.origin()["trial"] == verdict.best_number
    assert preset.origin()["ratio_median"] == pytest.approx(verdict.ratio_median, abs=1e-3)
    # the preset runs in the app's own engine, whose defaults for the batch limits differ from `vllm serve`'s:
    # it names them as the best trial ran
    best = next(t for t in trials if t.number == verdict.best_number)
    assert preset.engine() == {**best.batch_limits, **verdict.best_params}
    qtbot.waitUntil(lambda: window.model.engine.ready and window.model.engine.start_id == window.model.latest_start_id,
                    timeout=ENGINE_START_TIMEOUT_MS)  # the user's own engine again, as it was
    assert window.model.config == demo_config
    wait_finished(qtbot, question)
    assert question.status == "done" and question.text, question.error


def _children(pid: int) -> list[int]:
    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def kill_search_during_trial_1(store, model: str, name: str) -> None:
    """Runs ``bench tune`` headless in a process of its own and SIGKILLs it (and so its engine) while
    trial 1 starts, trial 0 measured and kept."""
    command = [sys.executable, "-m", "workbench", "bench", "--model", model, "--max-model-len", "512", "tune",
               "--trials", "6", "--requests", "48", "--rate", "12", "--prompt-len", "24", "--output-len", "8",
               "--params", "performance_mode", "--store", str(store), "--name", name, "--out", str(store / "out")]
    search = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        seen, deadline = [], time.monotonic() + 900
        while time.monotonic() < deadline and search.poll() is None:
            seen.append(search.stdout.readline())
            if "Trial 1: starting the engine" in seen[-1]:
                break
        assert any(line.startswith("| 0 | complete") for line in seen), "".join(seen)
        engine = _children(search.pid)
        search.send_signal(signal.SIGKILL)
        search.wait(10)
        deadline = time.monotonic() + 60
        while any(is_running(p) for p in engine) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        if search.poll() is None:
            search.kill()


def engine_core_pids() -> list[int]:
    return [p.pid for p in psutil.Process().children(recursive=True)
            if "EngineCore" in p.name() + " ".join(p.cmdline())]


@pytest.mark.timeout(1800)
def test_a_killed_search_resumes_and_an_engine_that_dies_fails_only_its_trial(window, qtbot, tmp_path,
                                                                              demo_model_path):
    store = tmp_path / "tune"
    kill_search_during_trial_1(store, demo_model_path, "killed search")
    run = TuneRun(window.model, window.commands, store)
    assert run.resumable() == ["killed search"]
    heard = Heard(run)
    run.resume("killed search")
    assert [(t.number, t.state) for t in run.trials()] == [(0, "complete"), (1, "failed")]
    assert run.trials()[0].num_requests_done == 48 and run.trials()[1].error == CUT_SHORT
    assert (heard.trials[-1].number, heard.trials[-1].state) == (2, "running")
    assert heard.trials[-1].params == {"performance_mode": "throughput"}  # the trial cut short, asked again
    qtbot.waitUntil(lambda: run.current is not None and run.current.measure.num_ended >= 1,
                    timeout=ENGINE_START_TIMEOUT_MS)
    cores = engine_core_pids()
    assert cores, "no engine-core process found"
    os.kill(cores[0], signal.SIGKILL)
    qtbot.waitUntil(lambda: any(t.number == 3 and t.state == "running" for t in heard.trials),
                    timeout=ENGINE_START_TIMEOUT_MS)  # the search goes on
    died = next(t for t in run.trials() if t.number == 2)
    assert died.state == "failed" and "requests failed" in died.error and "killed by signal 9" in died.error, died
    run.stop()
    qtbot.waitUntil(lambda: bool(heard.ended), timeout=ENGINE_START_TIMEOUT_MS)
    assert heard.ended[0] == (None, "Stopped: 4 trials kept.")
    assert [(t.number, t.state) for t in run.trials()] == [(0, "complete"), (1, "failed"), (2, "failed"),
                                                          (3, "failed")]
    assert run.resumable() == []
    qtbot.waitUntil(lambda: window.model.engine.ready and window.model.engine.start_id == window.model.latest_start_id,
                    timeout=ENGINE_START_TIMEOUT_MS)
