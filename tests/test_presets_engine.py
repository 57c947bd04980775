"""Presets against the real engine: each shipped preset starts and serves a chat, with vLLM's block
count equal to the planner's on the CPU (within the 5 % the estimate promises on a GPU, where vLLM
profiles the activations); a switch in the middle of a reply (abort, or let it finish); a failed start
retried with one click.

In the suite's fast GPU runs (``WORKBENCH_TEST_ENFORCE_EAGER=1``, ``packaging/gpu_tests.sh``) each preset
is applied with two edits a user can make in the panel: started eager, and with a quarter of its GPU
share. As shipped, each start on the H200 captured CUDA graphs for a pool of 15.5 million blocks (about
50 s), and the tests' full-scan check of such a pool costs the engine core seconds between two steps:
the file did not fit a device call. A quarter still leaves a pool of millions of blocks, the GPU
arithmetic the 5 % promise is about."""
from __future__ import annotations

import os

import pytest
from PySide6.QtWidgets import QPushButton

from chat_driver import ENGINE_START_TIMEOUT_MS, HANG_TIMEOUT_MS, REPLY_TIMEOUT_MS, type_and_send, wait_finished
from workbench.presets.capacity import plan_capacity
from workbench.presets.model_facts import facts_for

pytestmark = pytest.mark.slow
SHIPPED = ["balanced", "low-latency", "high-throughput", "long-context", "memory-limited"]
CAPACITY_TOLERANCE = 0.05  # the presets' promise: the estimate within 5 % of vLLM's block count
FAST_GPU_RUN = os.environ.get("WORKBENCH_TEST_ENFORCE_EAGER") == "1"
GPU_SHARE_IN_FAST_RUNS = 0.25


def fit_a_fast_gpu_run(panel) -> None:
    """In the fast GPU runs only: the chosen preset edited to start eager, with a quarter of its GPU share."""
    if not FAST_GPU_RUN or panel.machine.on_cpu:
        return
    share = panel.resolved.config.gpu_memory_utilization
    panel.document.set_engine_value("enforce_eager", True)
    if share:
        panel.document.set_engine_value("gpu_memory_utilization", round(share * GPU_SHARE_IN_FAST_RUNS, 4))
    panel.refresh()


def apply_preset(window, qtbot, name: str, when_busy: str | None = None):
    panel = window.presets
    panel.choose(name)
    fit_a_fast_gpu_run(panel)
    assert panel.problems == [] or "vllm" not in __import__("sys").modules
    before = window.model.latest_start_id
    assert panel.apply(when_busy)
    qtbot.waitUntil(lambda: window.model.latest_start_id > before, timeout=ENGINE_START_TIMEOUT_MS)
    start_id = window.model.latest_start_id
    qtbot.waitUntil(lambda: window.model.engine.settled(start_id), timeout=ENGINE_START_TIMEOUT_MS)
    assert window.model.engine.ready, window.model.engine.message
    return panel.resolved


def test_every_shipped_preset_starts_and_serves_a_chat(window, qtbot):
    facts = facts_for(window.model.config.model)
    for name in SHIPPED:
        resolved = apply_preset(window, qtbot, name)
        assert window.model.config == resolved.config and window.model.preset_name == name
        plan = plan_capacity(resolved.config, facts, window.presets.machine)
        info = window.model.engine.info
        num_blocks = info.num_kv_blocks
        if info.device == "cpu":
            assert num_blocks == plan.num_blocks, name  # the CPU arithmetic, checked
        else:
            assert num_blocks == pytest.approx(plan.num_blocks, rel=CAPACITY_TOLERANCE), name
        assert "vLLM allocated" in window.presets.capacity.text()
        assert window.model.planned_kv_blocks[window.model.engine.start_id] == plan.num_blocks, \
            "the estimate is kept with the engine run, beside vLLM's count"
        conversation = window.chat.new_conversation()
        assert conversation.sampling == resolved.sampling, "the preset seeds new conversations"
        window.chat.sampling.max_tokens.setValue(8)
        _, reply = type_and_send(window, qtbot, "Hello!")
        wait_finished(qtbot, reply)
        assert reply.status == "done" and reply.text, (name, reply.error)
        qtbot.waitUntil(lambda: window.heatmap.snapshot is not None
                        and window.heatmap.snapshot.num_blocks == num_blocks, timeout=HANG_TIMEOUT_MS)


def long_reply(window, qtbot):
    sampling = window.chat.sampling
    sampling.ignore_eos.setChecked(True)
    sampling.max_tokens.setValue(4000)
    conversation, reply = type_and_send(window, qtbot, "Tell me a long story.")
    qtbot.waitUntil(lambda: len(reply.text) > 20, timeout=REPLY_TIMEOUT_MS)
    return conversation, reply


def test_switch_in_the_middle_of_a_reply(window, qtbot):
    conversation, reply = long_reply(window, qtbot)
    own = conversation.sampling
    apply_preset(window, qtbot, "low-latency", when_busy="abort")
    assert reply.status == "stopped" and len(reply.text) > 20, "what was streamed stays"
    assert window.model.conversations[conversation.conversation_id] is conversation
    window.chat.conversation_list.setCurrentRow(window.chat.order.index(conversation.conversation_id))
    assert window.chat.sampling.settings() == own, "an existing conversation keeps its own settings"
    window.chat.sampling.max_tokens.setValue(8)
    window.chat.sampling.ignore_eos.setChecked(False)
    _, again = type_and_send(window, qtbot, "And now?")
    wait_finished(qtbot, again)
    assert again.status == "done", again.error

    window.chat.sampling.ignore_eos.setChecked(True)
    window.chat.sampling.max_tokens.setValue(64)
    _, short = type_and_send(window, qtbot, "One more.")
    apply_preset(window, qtbot, "balanced", when_busy="finish")
    assert short.status == "done" and short.figures.output_tokens == 64, "finished before the switch"


def test_failed_start_is_retried_with_one_click(window, qtbot):
    start_id = window.start_engine(window.model.config.with_changes((("quantization", "awq"),)))
    qtbot.waitUntil(lambda: window.model.engine.settled(start_id), timeout=ENGINE_START_TIMEOUT_MS)
    assert window.model.engine.state == "failed"
    assert "the model lacks the requested quantization awq" in window.model.engine.message
    assert "Cannot find the config file for awq" in window.model.engine.message, "vLLM's own words stay"
    button = window.findChild(QPushButton, "retryButton")
    assert button.isVisible() and button.text() == "Retry with quantization=auto"
    button.click()
    qtbot.waitUntil(lambda: window.model.engine.settled(window.model.latest_start_id), timeout=ENGINE_START_TIMEOUT_MS)
    assert window.model.engine.ready, window.model.engine.message
    assert "quantization" not in dict(window.model.config.extra)
