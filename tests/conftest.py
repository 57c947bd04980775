"""Shared fixtures: the demo model built once per run, one window with one real vLLM engine.

Tests run offscreen against the real vLLM CPU engine; each test that needs an engine gets the
shared window with its engine ready (restarted if an earlier test stopped or broke it).
"""
from __future__ import annotations

import os
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
if "WORKBENCH_DATA_DIR" not in os.environ:  # one fresh data dir per run: the demo model is built once
    os.environ["WORKBENCH_DATA_DIR"] = tempfile.mkdtemp(prefix="workbench-test-data-")

import pytest
from chat_driver import ENGINE_START_TIMEOUT_MS



@pytest.fixture(scope="session")
def demo_model_path() -> str:
    from workbench.engine.demo_model import ensure_demo_model

    return str(ensure_demo_model())


@pytest.fixture(scope="session")
def shared_window(qapp, demo_model_path):
    from workbench.app import build_window, demo_engine_config

    window, engine = build_window(demo_engine_config(demo_model_path), check_with_scan=True)
    window.resize(1400, 860)
    window.show()
    yield window
    window.close()
    assert not engine.thread.isRunning(), "the engine thread outlived the window"
    from workbench.engine.process_guard import child_pids

    deadline = time.monotonic() + 30
    while child_pids(vllm_only=True) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not child_pids(vllm_only=True), "vLLM processes outlived the window"


@pytest.fixture
def window(shared_window, qtbot, demo_model_path):
    """The shared window, engine ready, on the demo model, with a fresh conversation selected."""
    from workbench.app import demo_engine_config
    from workbench.engine.demo_model import default_system_prompt

    if shared_window.status.state != "ready" or shared_window.config.model != demo_model_path:
        shared_window.config = demo_engine_config(demo_model_path)
        if shared_window.status.state != "starting":
            shared_window.restart_engine()
    qtbot.waitUntil(lambda: shared_window.status.state == "ready", timeout=ENGINE_START_TIMEOUT_MS)
    shared_window.chat.new_conversation()
    sampling = shared_window.chat.sampling
    sampling.system.setPlainText(default_system_prompt())
    sampling.ignore_eos.setChecked(False)
    sampling.max_tokens.setValue(256)
    return shared_window
