"""One owner for engine commands, data sources out of widgets: a restored batch run sends through the
model's one owner; the chat template is written by one handler, at once; the plotted series reach
storage on the bridge's own timer, with the window's paint timer stopped. No engine: the model is told
what an engine would report, through its own ``apply``."""
from __future__ import annotations

import os

from PySide6.QtWidgets import QApplication

from workbench.batch.formats import BatchPrompt
from workbench.batch.results import BatchResults
from workbench.batch.run import RunSettings
from workbench.engine.backend import EngineInfo, StreamEvent
from workbench.engine.commands import Submit
from workbench.engine.events import EngineReady, EngineState, StateChanged
from workbench.engine.spec import EngineConfig
from workbench.model.app_model import AppModel
from workbench.model.engine_commands import EngineCommands
from workbench.model.engine_status import NO_TEMPLATE, SERVER_TEMPLATE
from workbench.storage.database import connect
from workbench.storage.series import MEMORY, load_series
from workbench.storage.store import Storage

TEMPLATE = "{% for m in messages %}{{ m.content }}{% endfor %}"
SHUTDOWN_TIMEOUT_S = 120


def ready(model: AppModel, device: str, chat_template: str | None = TEMPLATE) -> None:
    """What the engine loop reports for a start that became ready (``device`` "server": an attach)."""
    start_id = model.next_start_id()
    info = EngineInfo("demo", "0.32.0", device, 2048, chat_template, (os.getpid(),))
    for event in (StateChanged(EngineState.STARTING, "starting", start_id), EngineReady(info),
                  StateChanged(EngineState.READY, "ready", start_id)):
        model.apply(event)


def idle_window(tmp_path):
    from workbench.app import build_window, demo_engine_config

    window, _ = build_window(demo_engine_config(), start_engine=False,
                             storage=Storage.open(tmp_path / "workbench.db"))
    window.show()
    return window


def closed(window) -> None:
    window.close()
    assert window.shutdown.wait(SHUTDOWN_TIMEOUT_S)


def test_a_restored_batch_run_resumes_through_the_one_owner(tmp_path):
    path = tmp_path / "workbench.db"
    storage, model = Storage.open(path), AppModel(EngineConfig("demo"))
    storage.restore_into(model)
    storage.start(model)
    first: list = []
    EngineCommands(model, first.append)
    results = BatchResults()
    for line_no in (1, 2, 3):
        results.append(BatchPrompt(line_no, prompt=f"prompt {line_no}"))
    run = model.new_batch_run(results, RunSettings(max_in_flight=3))
    run.start()
    assert [c.request.request_id for c in first] == [f"{run.run_id}-{row}" for row in range(3)]
    run.request_finished(StreamEvent(f"{run.run_id}-0", "", True, "length", None))
    assert storage.flush()
    storage.close()

    storage, model = Storage.open(path), AppModel(EngineConfig("demo"))
    storage.restore_into(model)  # no command channel: the runs come back without an engine
    restored = model.batch_runs[run.run_id]
    assert restored.engine is None and restored.state == "paused"
    again: list = []
    commands = EngineCommands(model, again.append)
    assert restored.engine is commands
    restored.resume()
    assert [type(c) for c in again] == [Submit, Submit]
    assert sorted(c.request.request_id for c in again) == [f"{run.run_id}-1", f"{run.run_id}-2"]
    storage.close()


def test_the_chat_template_is_written_once_from_the_ready_engines_facts(qtbot, tmp_path):
    window = idle_window(tmp_path)
    template = window.chat.sampling.template
    try:
        for device, chat_template, shown in (("server", None, SERVER_TEMPLATE), ("cpu", TEMPLATE, TEMPLATE),
                                             ("server", TEMPLATE, SERVER_TEMPLATE), ("cpu", None, NO_TEMPLATE)):
            ready(window.model, device, chat_template)
            assert template.toPlainText() == shown, device
            QApplication.processEvents()  # nothing queued writes it again
            assert template.toPlainText() == shown, device
            # the server's prefix-cache feed follows the attach: advice, as this one gave no endpoints
            assert window.kv_events.attached == (device == "server")
            assert window.kv_events.subscriber is None
            if device == "server":
                assert window.server.kv_view.advice.isVisibleTo(window)
    finally:
        closed(window)


def test_the_memory_series_is_kept_with_the_paint_timer_stopped(qtbot, tmp_path):
    window = idle_window(tmp_path)
    try:
        window.heatmap_timer.stop()  # the window draws nothing: what is kept comes from the bridge
        ready(window.model, "cpu")  # the memory service watches this process
        kept = window.storage.memory_series
        qtbot.waitUntil(lambda: kept.newest_s is not None, timeout=60_000)  # taken, with nothing drawn
    finally:
        closed(window)
    db = connect(tmp_path / "workbench.db")
    (run_key,), = db.execute("SELECT run_key FROM engine_runs").fetchall()
    assert len(load_series(db, run_key, MEMORY)["t"]) >= 1
