"""The composition root: reaps leftovers, starts the engine thread, opens the window."""
from __future__ import annotations

import argparse
import logging
import os
import sys

from workbench.engine.spec import DEMO_MODEL, DEMO_VL_MODEL, DEMO_VL_SETTINGS, EngineConfig


def demo_engine_config(model: str = DEMO_MODEL) -> EngineConfig:
    """The demo's engine: a small pool (1,024 blocks) so a conversation is visible on the heatmap,
    whether the demo is named as such or by its folder (on a GPU, vLLM would otherwise fill most of
    the device with blocks for a model of a few megabytes); priority scheduling, so that chat
    requests go ahead of a batch's waiting ones."""
    from workbench.engine.demo_model import is_demo_model

    return EngineConfig(model=model, max_model_len=2048, max_num_seqs=64,
                        num_gpu_blocks_override=1024 if is_demo_model(model) else None, scheduling_policy="priority")


def demo_vl_engine_config() -> EngineConfig:
    """The vision demo's engine (``demo-vl``, Idefics3: 20 image tokens an image): five images a prompt, as
    the multimodal scenario's commands allow, a small pool so that an image's blocks are visible on the heatmap,
    priority scheduling as the text demo's."""
    return EngineConfig(model=DEMO_VL_MODEL, max_model_len=2048, max_num_seqs=32, num_gpu_blocks_override=1024,
                        scheduling_policy="priority", extra=DEMO_VL_SETTINGS)


def build_window(config: EngineConfig, check_with_scan: bool = False, start_engine: bool = True, storage=None,
                 keep: bool = True, client: str | None = None):
    """Creates the engine thread, the memory telemetry service and the window, restores what was
    stored, and starts the engine;
    returns (window, engine).

    ``start_engine=False``: the engine thread runs with no engine, for a caller that hands it one
    (``AdoptEngine``) or starts it later. ``storage``: an opened ``Storage`` (default: the data
    folder's database). When another instance holds the database, no engine is started. ``keep=False``:
    no storage at all (a benchmark's attribution run). ``client``: where vLLM's client loop runs,
    "process" or "thread" (default: ``WORKBENCH_ENGINE_CLIENT``, see ``bridge.client_choice``)."""
    from workbench.bridge.client_choice import engine_host
    from workbench.engine.demo_model import default_system_prompt
    from workbench.engine.process_guard import mark_owner, reap_orphans
    from workbench.engine.run_folder import remove_leftovers
    from workbench.model.app_model import AppModel
    from workbench.telemetry.gpu_memory import gpu_telemetry
    from workbench.telemetry.memory_service import MemoryService
    from workbench.storage.store import Storage
    from workbench.ui.main_window import MainWindow
    from workbench.ui.pg_setup import configure_pyqtgraph

    configure_pyqtgraph()
    set_gil_switch_interval()
    reap_orphans()
    remove_leftovers()  # the files of a killed app's engines, once those engines are gone too
    mark_owner()
    engine = engine_host(client, check_with_scan)
    memory = MemoryService(gpu_telemetry())
    model = AppModel(config, default_system_prompt())
    if keep:
        storage = storage if storage is not None else Storage.open()
        if storage.problem is not None:
            logging.getLogger("workbench").warning("%s", storage.problem.message)
        storage.restore_into(model)
        storage.start(model)  # before the panes: a first conversation they open is recorded too
    window = MainWindow(engine, model, memory, storage if keep else None)
    engine.start()
    memory.start()
    if start_engine:
        window.restart_engine()
    return window, engine


def set_gil_switch_interval() -> None:
    """``WORKBENCH_GIL_SWITCH_MS``, when set, replaces CPython's 5 ms switch interval: how long one
    thread may keep the GIL while another waits for it. In the window's process the GUI thread draws
    beside the engine client's receiver and the storage writer (and, with ``WORKBENCH_ENGINE_CLIENT=thread``,
    the engine loop stepping vLLM), so this is what attribution runs of the benchmarks vary."""
    interval_ms = os.environ.get("WORKBENCH_GIL_SWITCH_MS")
    if interval_ms:
        sys.setswitchinterval(float(interval_ms) / 1e3)


def no_display() -> bool:
    return (sys.platform.startswith("linux") and not os.environ.get("QT_QPA_PLATFORM")
            and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"))


def run_gui(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="vllm-workbench", description="Run vLLM and watch its KV cache.")
    parser.add_argument("--model", default=DEMO_MODEL, help="model folder or cached hub id (default: the demo "
                        "model; demo-vl: the vision demo model, for images)")
    parser.add_argument("--quit-when-ready", action="store_true",
                        help="exit once the engine has started: 0 when it is ready, 1 (with the message) when "
                             "it failed; checks an install end to end")
    args = parser.parse_args(argv)
    if no_display():
        print("vllm-workbench: no display found (DISPLAY and WAYLAND_DISPLAY are not set). Start it from a "
              "desktop session, or set QT_QPA_PLATFORM=offscreen to run it without a visible window.",
              file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="vllm-workbench: %(message)s")
    from PySide6.QtWidgets import QApplication

    from workbench.ui.window_layout import restore_layout

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setQuitOnLastWindowClosed(False)  # the window goes at once; the app quits once its engine has stopped
    collector = collect_garbage_on_gui_thread()  # noqa: F841 (kept: its timer collects while the app runs)
    wait_for_a_stopping_instance()
    config = demo_vl_engine_config() if args.model == DEMO_VL_MODEL else demo_engine_config(args.model)
    window, _ = build_window(config)
    window.remember_layout = True
    restore_layout(window)  # as the user left it, else fitted to the screen
    window.show()
    leave_startup_objects_uncollected()
    quit_once_stopped(app, window)
    code = quit_when_ready(app, window) if args.quit_when_ready else app.exec()
    if getattr(window, "shutdown", None) is not None:
        window.shutdown.wait()
    finish_background_jobs()
    return code


def collect_garbage_on_gui_thread():
    """Python's cycle collector run by a timer on the GUI thread only (pyqtgraph's ``GarbageCollector``):
    left automatic, it runs on whichever thread allocates, and a worker thread (an Optuna or Hub query)
    that collects a closed dialog's Qt objects disconnects them there, waiting for Qt's lock that the GUI
    thread holds while it waits for the GIL: the window freezes. Returns the collector, to be kept."""
    from pyqtgraph.util.garbage_collector import GarbageCollector

    return GarbageCollector(interval=1.0)


def leave_startup_objects_uncollected() -> None:
    """Leaves what starting made (modules, classes, the window's widgets and plots: some 130,000 objects) out of
    Python's later cycle collections (``gc.freeze``): the collector's timer went over them all at each full
    collection, holding the GUI thread 55-70 ms each time. Objects made later are collected as before. What is
    garbage already is collected first (as vLLM's ``freeze_gc_heap`` does for ``vllm serve``)."""
    import gc

    gc.collect()
    gc.freeze()


def finish_background_jobs(timeout_s: float = 60.0) -> bool:
    """Waits (the window already gone) for the jobs still running on worker threads, such as vLLM's model
    registry asked at a first start: Python's exit would free their signals under them ("Signal source has
    been deleted") and leave the registry's process behind. True when they all ended in time."""
    from PySide6.QtCore import QThreadPool

    return QThreadPool.globalInstance().waitForDone(int(timeout_s * 1000))


STOPPING_TEXT = "The last vLLM Workbench is still stopping its engine…"


def wait_for_a_stopping_instance(path=None, timeout_s: float = 120.0) -> bool:
    """Where the instance that held the data folder is still stopping (its window gone), waits for it
    with a message and a busy bar, the event loop running, rather than meeting the instance lock.
    True when there was one to wait for."""
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QProgressDialog

    from workbench.storage.store import default_database_path, held_by_a_stopping_instance, lock_is_free

    path = path or default_database_path()
    if not held_by_a_stopping_instance(path):
        return False
    dialog = QProgressDialog(STOPPING_TEXT, "", 0, 0, objectName="stoppingInstanceDialog")
    dialog.setWindowTitle("vLLM Workbench")
    dialog.setCancelButton(None)
    dialog.setMinimumDuration(0)
    dialog.show()
    loop = QEventLoop()
    poll = QTimer(interval=100)
    poll.timeout.connect(lambda: lock_is_free(path) and loop.quit())
    QTimer.singleShot(int(timeout_s * 1000), loop.quit)  # then the lock's own message says what holds it
    poll.start()
    loop.exec()
    poll.stop()
    dialog.close()
    return True


def quit_once_stopped(app, window) -> None:
    """Quits the app once the closed window's engine and storage have stopped behind it."""
    from PySide6.QtCore import QTimer

    timer = QTimer(app, interval=100)
    timer.timeout.connect(lambda: getattr(window, "shutdown", None) is not None and window.shutdown.done
                          and app.quit())
    timer.start()


def quit_when_ready(app, window) -> int:
    """Runs the app until the engine has started or failed, closes the window (the engine stops behind
    it, and the app quits after), and returns the exit code: 0 for ready, 1 for failed (its message on stderr)."""
    from PySide6.QtCore import QTimer

    outcome: list[int] = []

    def check() -> None:  # the start settles only when the engine loop says so
        status = window.model.engine
        if status.settled(window.model.latest_start_id) and not outcome:
            if not status.ready:
                storage = window.storage
                why = storage.problem.message if storage is not None and storage.locked else status.message
                print(f"vllm-workbench: {why}", file=sys.stderr)
            outcome.append(0 if status.ready else 1)
            window.close()

    timer = QTimer(window)
    timer.timeout.connect(check)
    timer.start(100)
    app.exec()
    return outcome[0] if outcome else 1
