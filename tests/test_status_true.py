"""What the preset panel and the status bar say is true: no running engine claimed where none runs
(before the first start, after a failed one), no preset named while the app's own configuration runs,
vLLM's default said with its value ("vLLM default: 2048", never "None"), and one start bar from 0 to
100 % over the demo model's build and the engine's start, its text fitting the bar."""
from __future__ import annotations

from dataclasses import replace

import pytest

from chat_driver import ENGINE_START_TIMEOUT_MS
from workbench.engine.events import EngineState, StartProgressed, StateChanged


@pytest.fixture
def config_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path / "config"))


def cells(panel, column: int) -> dict[str, str]:
    table = panel.values
    return {table.item(row, 0).text(): table.item(row, column).text() for row in range(table.rowCount())}


def test_before_any_engine_no_preset_is_named_and_no_running_engine_claimed(qtbot, config_folder, tmp_path,
                                                                           monkeypatch):
    from workbench.app import demo_engine_config
    from workbench.model.app_model import AppModel
    from workbench.ui.preset_panel import NO_FACTS_DEMO, PresetPanel

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "first-start"))  # the demo model not built yet

    model = AppModel(demo_engine_config())
    panel = PresetPanel(model, abort=lambda _r: None, restart=lambda: 0)
    qtbot.addWidget(panel)
    assert panel.choice.currentText() == "" and panel.choice.placeholderText() == "Demo configuration (not a preset)"
    assert not panel.buttons["apply"].isEnabled()
    # no preset chosen: the table lists the engine's own arguments, as configured (no preset columns)
    shown = cells(panel, 3)
    assert shown["max_model_len"] == str(model.config.max_model_len) and shown["block_size"] == "32", shown
    assert panel.values.horizontalHeaderItem(3).text() == "Configured"
    assert panel.values.isColumnHidden(1) and panel.values.isColumnHidden(2)
    assert panel.capacity.text() == NO_FACTS_DEMO  # not "could not be read": it is built at the first start
    panel.choose("high-throughput")
    assert panel.diff.text() == "No engine is running (it has not started yet): Apply starts one with this preset."
    assert panel.values.horizontalHeaderItem(3).text() == "Configured"
    assert "Running engine" not in panel.capacity.text()
    assert not panel.values.isColumnHidden(1) and not panel.values.isColumnHidden(2)


def test_with_no_preset_chosen_the_table_lists_the_running_engines_arguments(qtbot, config_folder, tmp_path):
    from workbench.app import demo_engine_config
    from workbench.engine.backend import EngineInfo
    from workbench.engine.events import EngineReady
    from workbench.model.app_model import AppModel
    from workbench.ui.preset_panel import PresetPanel

    from hub_repos import QWEN25_05B_CONFIG, qwen7b_shaped_files

    folder = qwen7b_shaped_files(tmp_path / "qwen-0.5b", shards=1, config=QWEN25_05B_CONFIG)  # its config read
    model = AppModel(replace(demo_engine_config(), model=str(folder)))
    panel = PresetPanel(model, abort=lambda _r: None, restart=lambda: 0)
    qtbot.addWidget(panel)
    planned = panel.capacity.text()  # what the app's own settings cost, before any engine runs
    assert "KV" in planned and "Running engine" not in planned, planned
    model.apply(StateChanged(EngineState.STARTING, "…", 1))
    model.apply(EngineReady(EngineInfo("/models/demo", "0.32.0", "cpu", 2048, None, (123,),
                                       resolved={"block_size": 32, "max_num_batched_tokens": 4096,
                                                 "async_scheduling": False})))
    model.apply(StateChanged(EngineState.READY, "ready", 1))
    shown = cells(panel, 3)  # as the app set them, and what vLLM resolved for it besides
    assert shown["max_num_batched_tokens"] == "vLLM default: 4096" and shown["block_size"] == "32", shown
    assert shown["async_scheduling"] == "vLLM default: False"  # a False is a value: only None is left out
    assert panel.values.horizontalHeaderItem(3).text() == "Running"
    assert panel.values.isColumnHidden(1) and panel.values.isColumnHidden(2)
    assert "Running engine: " in panel.capacity.text() and "blocks" in panel.capacity.text(), panel.capacity.text()


@pytest.mark.slow
def test_vllms_defaults_are_said_with_their_values(window, qtbot):
    panel = window.presets
    qtbot.waitUntil(lambda: panel.defaults is not None, timeout=180_000)  # read off the GUI thread
    resolved = window.model.engine.info.resolved
    for name in ("high-throughput", "low-latency", "long-context", "balanced"):
        panel.choose(name)
        assert "None" not in panel.diff.text(), panel.diff.text()
        for column in (2, 3):
            texts = cells(panel, column).values()
            assert not {"None", "default"} & set(texts), (name, texts)
    panel.choose("high-throughput")  # the demo configuration leaves the token budget to vLLM
    assert cells(panel, 3)["max_num_batched_tokens"] == f"vLLM default: {resolved['max_num_batched_tokens']}"
    assert f"max_num_batched_tokens vLLM default: {resolved['max_num_batched_tokens']} → 8192" in panel.diff.text()
    panel.choose("low-latency")  # it writes out vLLM's own default for chunked prefill: no change, not listed
    assert resolved["enable_chunked_prefill"] is True and panel.document.engine()["enable_chunked_prefill"] is True
    assert "enable_chunked_prefill" not in panel.diff.text() and "max_num_seqs" in panel.diff.text()
    assert resolved["dtype"] in ("bfloat16", "float16", "float32"), resolved  # as --dtype takes it, no "torch."


@pytest.mark.slow
def test_a_restart_says_so_before_the_engine_in_use_has_stopped(window, qtbot):
    """From the moment a restart is asked, the window says the engine is stopping, never "ready": stopping
    the engine in use takes seconds (two on this machine's demo, more for a large model on a GPU)."""
    model, bar = window.model, window.status
    seen = []
    model.engine_changed.connect(lambda status: seen.append((status.state, status.start_id, status.message,
                                                             bar.message.text(), bar.restart_button.isEnabled())))
    before = model.engine.start_id
    start_id = window.restart_engine()
    qtbot.waitUntil(lambda: model.engine.settled(start_id), timeout=ENGINE_START_TIMEOUT_MS)
    assert model.engine.ready, model.engine.message
    first = seen[0]
    assert first[:3] == (EngineState.STARTING, start_id, "Stopping the engine in use, then starting on "
                                                         f"{model.config.model}…"), seen[:3]
    assert first[3] == first[2] and not first[4], "the bar says it, Restart waits"
    assert not any(state is EngineState.READY and sid == before for state, sid, *_ in seen), "no old 'ready'"
    assert any(message.startswith("Starting the engine on") for _, _, message, *_ in seen)


@pytest.mark.slow
def test_after_a_failed_start_no_running_engine_is_claimed(window, qtbot):
    panel = window.presets
    panel.choose("balanced")
    assert "vLLM allocated" in panel.capacity.text()  # the demo engine runs: its pool is vLLM's count
    start_id = window.start_engine(window.model.config.with_changes((("quantization", "awq"),)))
    qtbot.waitUntil(lambda: window.model.engine.settled(start_id), timeout=ENGINE_START_TIMEOUT_MS)
    assert window.model.engine.state is EngineState.FAILED
    assert panel.diff.text() == "No engine is running (its last start failed): Apply starts one with this preset."
    assert "vLLM allocated" not in panel.capacity.text() and "Running engine" not in panel.capacity.text()


@pytest.mark.slow
def test_one_start_bar_over_the_demo_models_build_and_the_engine(qtbot, tmp_path, monkeypatch):
    """A start that builds the demo model first (a short recipe, into a folder of its own) and starts
    the real engine on it: the bar never goes back, from 0 to 100 %, and its text fits the bar."""
    from workbench.engine import demo_model
    from workbench.engine.session import EngineSession
    from workbench.engine.spec import DEMO_MODEL, EngineConfig
    from workbench.model.app_model import AppModel
    from workbench.ui.engine_status import EngineStatusBar

    monkeypatch.setattr(demo_model, "demo_model_dir", lambda: tmp_path / "models" / "demo-qwen2")
    short = demo_model.DemoRecipe(max_steps=30, time_budget_s=5.0)
    monkeypatch.setattr(demo_model.ensure_demo_model, "__defaults__", (None, short))
    reported = []
    session = EngineSession(EngineConfig(model=DEMO_MODEL, num_gpu_blocks_override=256))
    try:
        session.start(reported.append)
    finally:
        session.shutdown()
    phases = [p.phase for p in reported]
    assert phases[0] == "model" and "weights" in phases and phases[-1] == "ready"
    model = AppModel(EngineConfig(model=DEMO_MODEL))
    bar = EngineStatusBar(model)
    qtbot.addWidget(bar)
    bar.resize(700, 40)
    bar.show()
    bar.progress.setFixedWidth(200)  # narrower than the build's labels: they must be elided to fit
    model.apply(StateChanged(EngineState.STARTING, "Starting the engine…", 1))
    shown = []
    for progress in reported:
        model.apply(StartProgressed(progress))
        text, room = bar.progress.text(), bar.progress.contentsRect().width()
        assert bar.progress.fontMetrics().horizontalAdvance(text) <= room, (text, room)
        shown.append(bar.progress.value())
    assert shown == sorted(shown), f"the bar went back: {shown}"
    assert shown[0] <= 5 and shown[-1] == 100


@pytest.mark.slow
def test_a_stop_says_so_before_the_engine_has_stopped(window, qtbot):
    """Engine > Stop engine: "Stopping the engine…" at once, "Engine stopped." once it has."""
    model, bar = window.model, window.status
    seen = []
    model.engine_changed.connect(lambda status: seen.append((status.state, status.message, bar.message.text())))
    window.stop_engine()
    qtbot.waitUntil(lambda: bool(seen) and seen[-1][1] == "Engine stopped.", timeout=ENGINE_START_TIMEOUT_MS)
    assert [(state, message) for state, message, _ in seen] == [(EngineState.STOPPED, "Stopping the engine…"),
                                                                (EngineState.STOPPED, "Engine stopped.")]
    assert seen[0][2] == "Stopping the engine…"
    assert bar.restart_button.text() == "Start engine"  # no engine to restart


def test_the_bar_offers_a_start_where_no_engine_runs_and_a_restart_where_one_does(qtbot):
    from workbench.app import demo_engine_config
    from workbench.engine.backend import EngineInfo
    from workbench.engine.events import EngineReady
    from workbench.model.app_model import AppModel
    from workbench.ui.engine_status import EngineStatusBar

    model = AppModel(demo_engine_config())
    bar = EngineStatusBar(model)
    qtbot.addWidget(bar)
    bar.resize(900, 40)
    bar.show()
    assert (bar.message.text(), bar.restart_button.text()) == ("Engine not started.", "Start engine")
    width = bar.restart_button.width()
    for state, text in ((EngineState.STARTING, "Restart engine"), (EngineState.READY, "Restart engine"),
                        (EngineState.DIED, "Restart engine"), (EngineState.FAILED, "Restart engine"),
                        (EngineState.STOPPED, "Start engine")):
        if state is EngineState.READY:
            model.apply(EngineReady(EngineInfo("/models/demo", "0.32.0", "cpu", 2048, None, (123,))))
        model.apply(StateChanged(state, "…", 1))
        assert bar.restart_button.text() == text, state
        assert bar.restart_button.isEnabled() is (state is not EngineState.STARTING)
        bar.layout().activate()
        assert bar.restart_button.width() == width  # the bar does not shift as the word changes
