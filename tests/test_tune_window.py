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
