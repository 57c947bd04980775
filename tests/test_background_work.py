"""Nothing blocks the GUI thread: the model picker scans on a worker thread, and cancelling a
benchmark returns at once and finishes when the process has ended."""
from __future__ import annotations

import sys
import threading

from chat_driver import HANG_TIMEOUT_MS
from workbench.engine.model_source import ModelChoice


def _texts(list_widget) -> list[str]:
    return [list_widget.item(i).text() for i in range(list_widget.count())]


def test_model_scan_runs_off_the_gui_thread(qtbot, monkeypatch):
    from workbench.ui import model_picker

    release, scanned_on = threading.Event(), []

    def slow_scan():
        scanned_on.append(threading.current_thread())
        release.wait(10)  # on the GUI thread this would hold the dialog's constructor
        return [ModelChoice("Slow model", "/models/slow", "local")]

    monkeypatch.setattr(model_picker, "list_models", slow_scan)
    dialog = model_picker.ModelPickerDialog()
    qtbot.addWidget(dialog)
    assert _texts(dialog.list) == ["Scanning…"] and dialog.chosen_model() is None
    with qtbot.waitSignal(dialog.scan_worker.finished, timeout=HANG_TIMEOUT_MS):
        release.set()
    assert scanned_on and scanned_on[0] is not threading.main_thread()
    qtbot.waitUntil(lambda: dialog.chosen_model() == "/models/slow")
    assert _texts(dialog.list) == ["Slow model   [local]  /models/slow", "Get a model from the Hugging Face Hub…"]


def test_model_picker_lists_the_demo_model(qtbot):
    from workbench.engine.demo_model import demo_model_dir
    from workbench.ui.model_picker import ModelPickerDialog

    dialog = ModelPickerDialog()
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: dialog.chosen_model() is not None and not dialog.scan_worker.is_running, timeout=60_000)
    assert dialog.chosen_model() == str(demo_model_dir())
    assert "Scanning…" not in _texts(dialog.list)


def test_cancel_returns_at_once_and_kills_a_run_that_ignores_it(qtbot, monkeypatch):
    from workbench.ui.benchmark_view import BenchmarkView

    monkeypatch.setattr(BenchmarkView, "KILL_AFTER_MS", 300)
    view = BenchmarkView("unused", lambda: False, lambda: None)
    qtbot.addWidget(view)
    stubborn = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                "print('PROGRESS 0.500 waiting', flush=True); time.sleep(120)")
    view.command = lambda: [sys.executable, "-c", stubborn]
    view.run()
    qtbot.waitUntil(lambda: view.progress.value() == 50, timeout=HANG_TIMEOUT_MS)  # SIGTERM is ignored from here on
    with qtbot.waitSignal(view.process.finished, timeout=HANG_TIMEOUT_MS):
        view.cancel()
        assert view.running, "cancel waited for the process instead of returning"
        assert not view.cancel_button.isEnabled()
    assert not view.running and not view.kill_timer.isActive()
    assert "Cancelled" in view.message.text() and view.run_button.isEnabled()


EXIT_WITH_A_JOB_RUNNING = """
import sys, time
from PySide6.QtWidgets import QApplication
from superqt.utils import create_worker
app = QApplication([])
job = create_worker(time.sleep, 1.5, _start_thread=False)  # a job still reading when the app ends
job.returned.connect(lambda _: None)
job.start()
if sys.argv[1] == "finish":
    from workbench.app import finish_background_jobs
    assert finish_background_jobs(30)
"""


def test_the_app_ends_after_its_background_jobs_not_under_them(tmp_path):
    """Python's exit frees a running job's signals under it ("Signal source has been deleted", from the
    job's thread, as the clean clone's first start printed); the app's main waits for its jobs first."""
    import os
    import subprocess
    import sys

    script = tmp_path / "ends.py"
    script.write_text(EXIT_WITH_A_JOB_RUNNING)
    done = subprocess.run([sys.executable, str(script), "finish"], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, QT_QPA_PLATFORM="offscreen"))
    assert done.returncode == 0 and "Signal source has been deleted" not in done.stderr, done.stderr[-2000:]
