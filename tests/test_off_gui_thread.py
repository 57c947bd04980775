"""Nothing the user does waits on the GUI thread for vLLM: the preset's checks (which import vLLM) run
on a worker thread while Apply says "Checking the preset…"; the window goes at once on close, the engine
and the database stopping behind it, and nothing outlives them; a relaunch meanwhile waits for the stop
with a message rather than meeting the instance lock. (How long the GUI thread stalls is a benchmark:
``bench ui-stalls``.)"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QProgressDialog

from chat_driver import ENGINE_START_TIMEOUT_MS
from workbench.engine.process_guard import is_running
from workbench.storage.database import LOCKED
from workbench.storage.store import Storage


@pytest.fixture
def config_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path / "config"))


def threads_calling(monkeypatch, module, name: str) -> list[int]:
    """The threads that call ``module.name`` from now on (the function still runs), in call order."""
    called_on: list[int] = []
    real = getattr(module, name)

    def recording(*args):
        called_on.append(threading.get_ident())
        return real(*args)

    monkeypatch.setattr(module, name, recording)
    return called_on


def test_the_preset_checks_run_off_the_gui_thread(qtbot, monkeypatch, config_folder):
    from workbench.app import demo_engine_config
    from workbench.model.app_model import AppModel
    from workbench.ui import preset_panel

    checked_on = threads_calling(monkeypatch, preset_panel, "check_in_process")
    vllm_here_before = "vllm" in sys.modules
    restarts: list[int] = []
    panel = preset_panel.PresetPanel(AppModel(demo_engine_config()), abort=lambda _r: None,
                                     restart=lambda: restarts.append(1))
    qtbot.addWidget(panel)
    panel.show()
    panel.choose("low-latency")
    with qtbot.waitSignal(panel.checked, timeout=180_000) as outcome:
        panel.buttons["apply"].click()
        assert panel.progress.isVisible() and panel.progress.text().startswith("Checking the preset…")
        assert not panel.buttons["apply"].isEnabled(), "one check at a time"
    assert outcome.args == [True] and restarts == [1], panel.problem_text.text()
    assert checked_on and threading.get_ident() not in checked_on, "the preset was checked on the GUI thread"
    assert vllm_here_before or "vllm" not in sys.modules, "the check imported vLLM into the window's process"
    assert panel.model.preset_name == "low-latency" and not panel.progress.isVisible()


@pytest.mark.slow
def test_the_window_goes_at_once_and_the_engine_stops_behind_it(qtbot, tmp_path, demo_model_path):
    from workbench.app import build_window, demo_engine_config
    from workbench.storage.store import lock_is_free

    storage = Storage.open(tmp_path / "workbench.db")
    window, engine = build_window(demo_engine_config(demo_model_path), storage=storage)
    window.show()
    model = window.model
    qtbot.waitUntil(lambda: model.engine.settled(model.latest_start_id), timeout=ENGINE_START_TIMEOUT_MS)
    assert model.engine.ready, model.engine.message
    engine_pids = list(model.engine.info.engine_pids)
    client = getattr(engine.host, "client_pid", None)
    assert window.close()
    # close() came back without waiting for the engine: the window is hidden while it still stops.
    assert not window.isVisible() and window.status.message.text() == "Stopping the engine…"
    assert engine.thread.isRunning() and not window.shutdown.done
    assert not lock_is_free(storage.path), "the database is held until the engine has stopped"
    assert window.shutdown.wait(120)
    assert window.shutdown.stopped_on != threading.get_ident(), "the engine was stopped on the GUI thread"
    assert not engine.thread.isRunning(), "the engine thread outlived the app"
    assert not [pid for pid in engine_pids if is_running(pid)], "vLLM processes outlived the app"
    assert client is None or not is_running(client), "the engine-client process outlived the app"
    assert lock_is_free(storage.path)


def served_server_pids() -> list[int]:
    """This process's children that run vLLM's API server ("Serve"), each leading its process group
    (not its forked processes, which share its command line for a while)."""
    import psutil

    from workbench.remote.serve import SERVER_MODULE

    pids = []
    for child in psutil.Process().children(recursive=True):
        try:
            if SERVER_MODULE in child.cmdline() and os.getpgid(child.pid) == child.pid:
                pids.append(child.pid)
        except (psutil.Error, ProcessLookupError):
            continue
    return pids


def test_serve_builds_the_demo_model_off_the_gui_thread_showing_its_progress(qtbot, tmp_path, monkeypatch,
                                                                              config_folder):
    """Serve on a machine with no demo model yet (a short recipe, into a folder of its own): the action
    comes back at once, the model is trained on the engine's thread while the status bar shows the
    build, and the server is then started on the built folder (killed here: its start is not the point)."""
    from workbench.app import build_window, demo_engine_config
    from workbench.engine import demo_model
    from workbench.engine.events import EngineState
    from workbench.ui.server_dialogs import serve_options
    from workbench.remote.serve import free_port

    monkeypatch.setattr(demo_model, "demo_model_dir", lambda: tmp_path / "models" / "demo-qwen2")
    short = demo_model.DemoRecipe(max_steps=30, time_budget_s=5.0)
    monkeypatch.setattr(demo_model.ensure_demo_model, "__defaults__", (None, short))
    built_on = threads_calling(monkeypatch, demo_model, "build_demo_model")
    window, engine = build_window(demo_engine_config(), start_engine=False, keep=False, client="thread")
    window.show()
    model = window.model
    try:
        asked = time.perf_counter()
        start_id = window.server.serve(serve_options(model.config, free_port()))
        took_s = time.perf_counter() - asked
        assert took_s < 0.1, f"Serve held the window for {took_s:.2f} s"
        assert not demo_model.is_built(demo_model.demo_model_dir()), "the model was built before Serve came back"
        bar = window.status.progress
        qtbot.waitUntil(lambda: bar.isVisible() and "demo" in bar.label, timeout=60_000)
        qtbot.waitUntil(lambda: bool(served_server_pids()), timeout=180_000)
        assert demo_model.is_built(demo_model.demo_model_dir())
        assert built_on and threading.get_ident() not in built_on, "the demo model was built on the GUI thread"
        for pid in served_server_pids():
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # it had exited
        qtbot.waitUntil(lambda: model.engine.settled(start_id), timeout=60_000)
        assert model.engine.state is EngineState.FAILED and "exited during its start" in model.engine.message
    finally:
        window.close()
        assert window.shutdown.wait(60)
    assert not engine.thread.isRunning()


def test_a_relaunch_waits_for_an_instance_still_stopping(qtbot, tmp_path):
    from workbench.app import STOPPING_TEXT, wait_for_a_stopping_instance

    path = tmp_path / "workbench.db"
    running = Storage.open(path)
    assert not wait_for_a_stopping_instance(path), "an instance that runs on is not waited for"
    assert Storage.open(path).problem.kind == LOCKED
    running.mark_stopping()  # its window closed: the engine and the database stop behind it
    seen: list[str] = []

    def look_then_let_go() -> None:
        dialogs = [w for w in QApplication.topLevelWidgets() if isinstance(w, QProgressDialog) and w.isVisible()]
        seen.extend(d.labelText() for d in dialogs)
        running.close()

    QTimer.singleShot(300, look_then_let_go)
    assert wait_for_a_stopping_instance(path, timeout_s=60)
    assert seen == [STOPPING_TEXT]
    relaunched = Storage.open(path)
    assert relaunched.problem is None and relaunched.opened.writable
    relaunched.close()


def test_the_checking_process_runs_at_the_lowest_cpu_priority():
    from workbench.presets import check_process

    assert check_process.niceness() == check_process.LOWEST_PRIORITY, \
        "vLLM's imports for the preset checks must not take a core from the window and the engine"


def test_a_killed_checking_process_is_replaced_at_the_next_check():
    """Killed (out of memory, or by hand), the checking process is started again for the next check,
    which answers, rather than every later check failing on the broken pool."""
    import os
    import signal

    import psutil

    from workbench.presets import check_process

    first = check_process._executor().submit(os.getpid).result()
    os.kill(first, signal.SIGKILL)
    try:
        psutil.Process(first).wait(30)
    except psutil.NoSuchProcess:  # gone already (reaped between a check and the wait, as once in a clean clone)
        pass
    problems, defaults = check_process.check_in_process(None, None, None)
    assert problems == [] and "max_num_seqs" in defaults
    assert check_process._executor().submit(os.getpid).result() != first


def test_the_checking_process_ends_itself_when_the_app_is_killed():
    """An app killed (SIGKILL, a crash) never shuts its checking process down: the process sees its app gone and
    ends, rather than waiting on its queue with vLLM imported until the next start reaps it."""
    import signal
    import subprocess
    import sys

    import psutil

    app = subprocess.Popen([sys.executable, "-c", "import os, time\n"
                            "from workbench.presets import check_process\n"
                            "print(check_process._executor().submit(os.getpid).result(), flush=True)\n"
                            "time.sleep(600)"], stdout=subprocess.PIPE, text=True)
    try:
        checking = psutil.Process(int(app.stdout.readline()))
        app.send_signal(signal.SIGKILL)
        app.wait(30)
        checking.wait(30)  # psutil.TimeoutExpired: it outlived its app
    finally:
        app.kill()


def test_a_failed_read_of_vllms_defaults_goes_to_the_panel_only(qtbot, monkeypatch, config_folder):
    """The panel handles the error (the values then say "vLLM default" without a figure); nothing is
    raised again on the GUI thread (pytest-qt fails a test on any exception in the Qt event loop)."""
    from workbench.app import demo_engine_config
    from workbench.model.app_model import AppModel
    from workbench.ui import preset_panel
    from workbench.ui.preset_panel import PresetPanel

    def broken():
        raise RuntimeError("vLLM cannot be imported here")

    monkeypatch.setattr(preset_panel, "defaults_off_thread", broken)
    panel = PresetPanel(AppModel(demo_engine_config()), abort=lambda _r: None, restart=lambda: 0)
    qtbot.addWidget(panel)
    panel.defaults = None
    panel.load_defaults()
    qtbot.waitUntil(lambda: panel._loading is None, timeout=30_000)
    assert panel.defaults is None
