"""Shared fixtures: the demo model built once per run, one window with one real vLLM engine.

Tests run offscreen against the real vLLM CPU engine; each test that needs an engine gets the
shared window with its engine ready on the demo configuration (restarted if an earlier test
stopped it, broke it or changed any of its settings).
"""
from __future__ import annotations

import gc
import os
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
if "WORKBENCH_DATA_DIR" not in os.environ:  # one fresh data dir per run: the demo model is built once
    os.environ["WORKBENCH_DATA_DIR"] = tempfile.mkdtemp(prefix="workbench-test-data-")

import pytest
from chat_driver import ENGINE_START_TIMEOUT_MS

ENGINE_FIXTURES = {"demo_model_path", "shared_window", "window"}  # each builds or starts the real engine


def pytest_sessionfinish(session, exitstatus):
    """The jobs still on Qt's worker threads (a list read again as a test's pane closed) end before Python does:
    its exit would free their signals under them, as the app waits for them at its own exit."""
    from workbench.app import finish_background_jobs

    finish_background_jobs(30.0)


def pytest_collection_modifyitems(config, items):
    """Keeps the markers true: a test that uses the real engine must say ``slow`` itself, so that
    ``-m "not slow"`` is the fast set; ``gpu`` tests are skipped where there is no NVIDIA GPU."""
    unmarked = [item.nodeid for item in items
                if ENGINE_FIXTURES & set(item.fixturenames) and item.get_closest_marker("slow") is None]
    if unmarked:
        raise pytest.UsageError("These tests use the real engine but are not marked slow:\n  "
                                + "\n  ".join(unmarked))
    gpu_tests = [item for item in items if item.get_closest_marker("gpu") is not None]
    if gpu_tests:
        from workbench.telemetry.gpu_memory import gpu_telemetry

        if not gpu_telemetry().read_devices():
            skip = pytest.mark.skip(reason="needs an NVIDIA GPU: NVML finds no driver or no device here")
            for item in gpu_tests:
                item.add_marker(skip)


@pytest.fixture(autouse=True)
def garbage_collected_on_the_gui_thread():
    """A test's cyclic garbage (its closed windows' Qt objects) collected as it ends, on the GUI thread,
    as the app's timer does (``app.collect_garbage_on_gui_thread``): left to Python, a later test's worker
    thread may collect it, disconnecting Qt objects there while the GUI thread waits for the GIL (a
    deadlock seen once, in test_window_layout, while a window's Optuna query ran on a worker)."""
    yield
    gc.collect()


@pytest.fixture(scope="session")
def demo_model_path() -> str:
    from workbench.engine.demo_model import ensure_demo_model

    return str(ensure_demo_model())


def demo_engine_config(model: str):
    """The app's demo configuration. ``WORKBENCH_TEST_ENFORCE_EAGER=1`` (the H200 runs of the suite,
    ``packaging/gpu_tests.sh``) starts it without CUDA graphs: a start takes seconds, not a minute."""
    from dataclasses import replace

    from workbench.app import demo_engine_config as app_demo_config

    config = app_demo_config(model)
    return replace(config, enforce_eager=True) if os.environ.get("WORKBENCH_TEST_ENFORCE_EAGER") == "1" else config


@pytest.fixture(scope="session")
def shared_window(qapp, demo_model_path):
    from workbench.app import build_window

    window, engine = build_window(demo_engine_config(demo_model_path), check_with_scan=True)
    window.resize(1400, 860)
    window.show()
    yield window
    window.close()  # the window goes at once; the engine stops behind it
    assert window.shutdown.wait(120), "the engine and the storage did not stop behind the closed window"
    assert not engine.thread.isRunning(), "the engine thread outlived the window"
    from workbench.engine.process_guard import child_pids, is_running

    deadline = time.monotonic() + 30
    while child_pids(vllm_only=True) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not child_pids(vllm_only=True), "vLLM processes outlived the window"
    client = getattr(engine.host, "client_pid", None)  # the engine-client process, where there is one
    assert client is None or not is_running(client), "the engine-client process outlived the window"


@pytest.fixture
def window(shared_window, qtbot, demo_model_path):
    """The shared window, engine ready, on the demo model, with a fresh conversation selected."""
    from workbench.engine.demo_model import default_system_prompt

    demo_config = demo_engine_config(demo_model_path)
    model = shared_window.model
    if model.config != demo_config:  # an earlier test changed a setting, whichever: start afresh
        start_id = shared_window.start_engine(demo_config)
    elif model.engine.state not in ("ready", "starting"):
        start_id = shared_window.restart_engine()
    else:
        start_id = model.engine.start_id
    qtbot.waitUntil(lambda: model.engine.settled(start_id), timeout=ENGINE_START_TIMEOUT_MS)
    assert model.engine.ready, model.engine.message
    shared_window.batch.confirm = lambda *_: True  # an earlier test's batch run may leave the pane: yes
    shared_window.panes.setCurrentWidget(shared_window.chat)  # an earlier test may have left another tab in front
    shared_window.chat.new_conversation()
    sampling = shared_window.chat.sampling
    sampling.system.setPlainText(default_system_prompt())
    sampling.ignore_eos.setChecked(False)
    sampling.max_tokens.setValue(256)
    return shared_window
