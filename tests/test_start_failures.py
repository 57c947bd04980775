"""Start failures raised inside vLLM's engine processes reach the window in vLLM's own words, with
the workbench's advice, and the engine's whole log is one click away."""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace

import pytest
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QPushButton

from chat_driver import ENGINE_START_TIMEOUT_MS, HANG_TIMEOUT_MS

pytestmark = pytest.mark.slow


def engine_message(window) -> str:
    return window.findChild(QLabel, "engineMessage").text()


def start_and_fail(window, qtbot, model: str) -> str:
    from workbench.engine.process_guard import child_pids

    start_id = window.start_with_model(model)
    qtbot.waitUntil(lambda: window.model.engine.settled(start_id), timeout=ENGINE_START_TIMEOUT_MS)
    assert window.model.engine.state == "failed", "the broken model started"
    assert not child_pids(vllm_only=True), "a failed start left vLLM processes behind"
    return engine_message(window)


def open_log(window, qtbot) -> str:
    button = window.findChild(QPushButton, "showEngineLogButton")
    qtbot.waitUntil(button.isVisible, timeout=HANG_TIMEOUT_MS)
    button.click()
    dialog = window.status.log_dialog
    assert dialog is not None and dialog.isVisible()
    text = dialog.findChild(QPlainTextEdit, "engineLogText").toPlainText()
    dialog.close()
    return text


def copy_model(demo_model_path: str, tmp_path, name: str):
    folder = tmp_path / name
    shutil.copytree(demo_model_path, folder)
    return folder


def test_truncated_weights_file_is_named(window, qtbot, demo_model_path, tmp_path):
    folder = copy_model(demo_model_path, tmp_path, "truncated")
    weights = folder / "model.safetensors"
    os.truncate(weights, weights.stat().st_size // 2)  # what an interrupted download leaves
    message = start_and_fail(window, qtbot, str(folder))
    assert f"the weights file {weights} is damaged: it is truncated" in message
    assert "Download model.safetensors again" in message
    assert "SafetensorError" in message, "vLLM's own words, raised in its worker process, reach the window"
    log = open_log(window, qtbot)
    assert "Traceback (most recent call last)" in log and "SafetensorError" in log


def test_weights_that_do_not_match_config(window, qtbot, demo_model_path, tmp_path):
    folder = copy_model(demo_model_path, tmp_path, "mismatched")
    config = json.loads((folder / "config.json").read_text())
    config["intermediate_size"] += 128  # config.json from another revision than the weights
    (folder / "config.json").write_text(json.dumps(config))
    message = start_and_fail(window, qtbot, str(folder))
    assert f"loading the weights from {folder} failed" in message
    assert "exceeds dimension size (384)" in message, "the loader's own error, from the engine process"
    assert "(in vLLM's" in message and "process)" in message


def test_kv_cache_too_small_root_cause_from_engine_core(window, qtbot, demo_model_path):
    start_id = window.start_engine(replace(window.model.config, model=demo_model_path,
                                           num_gpu_blocks_override=None, kv_cache_memory_bytes=64 * 1024))
    qtbot.waitUntil(lambda: window.model.engine.settled(start_id), timeout=ENGINE_START_TIMEOUT_MS)
    assert window.model.engine.state == "failed"
    message = engine_message(window)
    assert "KV cache is too small for max_model_len=2048" in message
    assert "vLLM said (in vLLM's EngineCore process): ValueError:" in message
    assert "EngineCore failed to start." in open_log(window, qtbot)


def test_fp8_kv_cache_refused_by_vllms_cpu_attention_is_retried_at_its_default(window, qtbot, demo_model_path,
                                                                                tmp_path):
    """vLLM's CPU attention refuses an fp8 KV cache where it has no kernel for one (no AVX-512 or AMX, or a
    head size of 16, cpu_attn._get_attn_isa). The second one happens on any CPU: the demo model's weights
    read as 8 heads of 16 (the same tensors: q 8×16, k and v 4×16), so this start fails the way it fails
    on an AMD EPYC 7763, and the one click starts it at vLLM's default."""
    folder = copy_model(demo_model_path, tmp_path, "heads16")
    config = json.loads((folder / "config.json").read_text())
    config.update(num_attention_heads=8, num_key_value_heads=4)
    (folder / "config.json").write_text(json.dumps(config))
    asked = replace(window.model.config, model=str(folder)).with_changes((("kv_cache_dtype", "fp8"),))
    start_id = window.start_engine(asked)
    qtbot.waitUntil(lambda: window.model.engine.settled(start_id), timeout=ENGINE_START_TIMEOUT_MS)
    assert window.model.engine.state == "failed"
    message = engine_message(window)
    assert "vLLM's CPU build keeps an fp8 KV cache only for a head size divisible by 32" in message
    assert "NotImplementedError: FP8 KV cache requires head_size divisible by 32 on CPU." in message, "vLLM's words"
    button = window.findChild(QPushButton, "retryButton")
    assert button.isVisible() and button.text() == "Retry with kv_cache_dtype=auto"
    button.click()
    qtbot.waitUntil(lambda: window.model.engine.settled(window.model.latest_start_id), timeout=ENGINE_START_TIMEOUT_MS)
    assert window.model.engine.ready, window.model.engine.message
    assert window.model.config.option("kv_cache_dtype") is None and window.model.config.model == str(folder)
