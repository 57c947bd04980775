"""Tools > Tune… in the app's window with the real engine: a two-trial search on the demo model started
from the Tune tab, its trials run on the window's own engine (the heatmap shows them), the table and the
plot filled as they end, the verdict's ratio shown, the serve line copied, the best saved as a preset and
chosen in the Presets tab, the user's engine back after."""
from __future__ import annotations

import time

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from chat_driver import ENGINE_START_TIMEOUT_MS

pytestmark = pytest.mark.slow  # trials are engine starts: five here (two trials, two reruns, the user's back)

SEARCH_TIMEOUT_MS = 5 * ENGINE_START_TIMEOUT_MS


@pytest.fixture(autouse=True)
def no_search_outlives_its_test(window, qtbot):
    """A failed assertion mid-search would leave the tab's search holding the shared window's engine."""
    yield
    search = window.tune.search
    if search is not None and search.running:
        search.stop()
        qtbot.waitUntil(lambda: not search.running, timeout=ENGINE_START_TIMEOUT_MS)


def small_search(pane, name: str) -> None:
    """Eight generated requests, two trials (vLLM's defaults, then the next setting), one rerun each. Each
    request's 320 output tokens keep its blocks in use for many of the engine's steps: here about 0.8 s a
    trial, some seven of the heatmap's frames (ten a second), of which the first shows the pool still empty.
    (With 48 tokens a trial's requests lasted about one frame, and a busy machine's frames could miss them
    all.) A busier machine steps the engine slower, so its frames see the requests for longer."""
    form = pane.form
    form.workload_kind.setCurrentIndex(form.workload_kind.findData("generated"))
    for key, value in (("num_requests", 8), ("prompt_tokens_mean", 24), ("prompt_tokens_spread", 4),
                       ("output_tokens_mean", 320), ("output_tokens_spread", 0)):
        form.gen[key].setValue(value)
    form.max_trials.setValue(2)
    form.repeats.setValue(1)
    form.budget.setValue(60)
    form.name.setText(name)


@pytest.mark.timeout(1800)  # five engine starts, each up to minutes on a busy 2-core machine
def test_a_two_trial_search_from_the_tune_tab_fills_its_table(window, qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path / "config"))  # where the user's presets go
    user_config = window.model.config
    pane = window.tune.show_tab()
    assert window.panes.currentWidget() is pane and window.panes.tabText(window.panes.indexOf(pane)) == "Tune"
    small_search(pane, f"window-search-{time.time_ns()}")
    # the trial's engine is the window's: its heatmap draws the trial's requests (they hold blocks for a
    # moment only: every frame the heatmap draws while a trial runs is kept)
    in_use_drawn, show = [], window.heatmap.show_snapshot
    monkeypatch.setattr(window.heatmap, "show_snapshot", lambda snapshot: (
        in_use_drawn.append(snapshot.num_in_use) if pane.running and pane.trials.rowCount() else None,
        show(snapshot)))
    qtbot.mouseClick(pane.buttons["start"], Qt.LeftButton)
    qtbot.waitUntil(lambda: pane.running or pane.buttons["start"].isEnabled(), timeout=300_000)  # checked first
    assert pane.running, pane.message.text()
    assert not pane.buttons["start"].isEnabled() and pane.buttons["stop"].isEnabled()
    qtbot.waitUntil(lambda: not pane.running, timeout=SEARCH_TIMEOUT_MS)
    assert any(in_use_drawn), (f"{len(in_use_drawn)} frames drawn during the trials, none with a block in use: "
                               f"{in_use_drawn}")
    trials = pane.trials.trials
    assert [t.number for t in trials] == [0, 1], [(t.number, t.state, t.error) for t in trials]
    assert trials[0].state == "complete", trials[0].error
    assert pane.trials.cell(trials[0], 0) == "0 (defaults)"
    tok_s_column = pane.trials.headers().index("Output tok/s")
    assert float(pane.trials.cell(trials[0], tok_s_column).replace(",", "")) > 0
    assert pane.plot.num_points == 2
    verdict = pane.verdict
    assert verdict is not None, pane.message.text()
    # which trial wins eight short requests on the demo model is the machine's noise: the verdict's words
    # follow the winner (a ratio against the defaults, or the defaults' reruns as the measure's spread)
    expected = "No setting beat vLLM's defaults" if verdict.best_number == 0 else "× the defaults"
    assert expected in pane.verdict_label.text(), (verdict.best_number, pane.verdict_label.text())
    assert f"{verdict.ratio_median:.2f}×" in pane.verdict_label.text()
    assert pane.progress.format() == "Finished"
    line = pane.copy_serve_line()
    assert line.startswith("vllm serve") and QApplication.clipboard().text() == line
    pane.ask_name = lambda: "tuned-on-demo"
    assert pane.apply_as_preset().endswith(".toml")
    assert window.presets.choice.currentText() == "tuned-on-demo"  # chosen in the Presets tab, in front
    assert window.engine_region.currentWidget() is window.engine_region.panels["Presets"]
    # the user's own engine again (the search's last start), on their configuration, which trials never changed
    model = window.model
    qtbot.waitUntil(lambda: model.engine.settled(model.latest_start_id), timeout=ENGINE_START_TIMEOUT_MS)
    assert model.engine.ready and model.config == user_config, model.engine.message


@pytest.mark.timeout(1800)
def test_the_engine_asked_for_mid_search_asks_first_and_a_stopped_search_starts_only_what_was_asked(
        window, qtbot, tmp_path, monkeypatch):
    """Mid-search, Engine > Restart engine asks whether to stop the search: let it run, and nothing starts. A
    batch's Run waits for the search, saying why. Presets > Apply, the search stopped for it: the preset's
    engine is the one start after it (not the user's engine first, then the preset's)."""
    from test_batch_engine import open_and_wait

    from workbench.engine.commands import StartEngine

    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path / "config"))
    model, batch = window.model, window.batch
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("What is a block?\nWhat is a page?\n")
    open_and_wait(batch, qtbot, prompts, "text")
    assert batch.run_button.isEnabled()
    pane = window.tune.show_tab()
    small_search(pane, f"held-{time.time_ns()}")
    pane.form.max_trials.setValue(8)  # more than the test lets run: the preset's check ends long before them
    asked, answers = [], [False, True]  # let the search run, then stop it
    monkeypatch.setattr(window.tune, "ask_stop_search", lambda doing: asked.append(doing) or answers.pop(0))
    posted, post = [], window.commands.post
    monkeypatch.setattr(window.commands, "post", lambda command: (posted.append(command), post(command))[1])
    qtbot.mouseClick(pane.buttons["start"], Qt.LeftButton)
    qtbot.waitUntil(lambda: pane.running or pane.buttons["start"].isEnabled(), timeout=300_000)
    assert pane.running, pane.message.text()
    search = window.tune.search
    stop, stopped_at = search.stop, []
    monkeypatch.setattr(search, "stop", lambda instead=None: (stopped_at.append(len(posted)), stop(instead))[1])
    # a trial's engine ready: the batch's Run still waits, for the search
    qtbot.waitUntil(lambda: model.engine.ready and model.engine.start_id == model.latest_start_id > 0 and
                    search.current is not None, timeout=ENGINE_START_TIMEOUT_MS)
    assert not batch.run_button.isEnabled() and "search is using the engine" in batch.run_button.toolTip()
    latest = model.latest_start_id
    assert window.restart_engine() == 0 and asked == ["restart the engine"]
    assert search.running and model.latest_start_id == latest and not stopped_at  # nothing started
    presets = window.presets
    presets.choose("low-latency")
    with qtbot.waitSignal(presets.checked, timeout=ENGINE_START_TIMEOUT_MS) as checked:  # checked off the GUI thread
        presets.apply()
    assert checked.args == [True], presets.problem_text.text()
    assert asked == ["restart the engine", "apply the preset 'low-latency'"]
    assert not search.running and pane.progress.format() == "Stopped"
    assert pane.trials.trials and pane.trials.trials[-1].error.startswith("stopped before it finished")
    [start] = [c for c in posted[stopped_at[0]:] if isinstance(c, StartEngine)]
    assert start.config == model.config and model.config.max_num_seqs == presets.resolved.config.max_num_seqs
    qtbot.waitUntil(lambda: model.engine.settled(start.start_id), timeout=ENGINE_START_TIMEOUT_MS)
    assert model.engine.ready, model.engine.message
    assert batch.run_button.isEnabled() and batch.run_button.toolTip() == ""  # the search let the engine go
