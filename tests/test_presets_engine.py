"""Presets against the real engine: each shipped preset starts and serves a chat, with vLLM's block
count equal to the planner's on the CPU (within the 5 % the estimate promises on a GPU, where vLLM
profiles the activations); a switch in the middle of a reply (abort, or let it finish); a failed start
retried with one click."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QPushButton

from chat_driver import ENGINE_START_TIMEOUT_MS, type_and_send, wait_finished
from workbench.presets.capacity import plan_capacity
from workbench.presets.model_facts import facts_for

pytestmark = pytest.mark.slow
SHIPPED = ["balanced", "low-latency", "high-throughput", "long-context", "memory-limited"]
CAPACITY_TOLERANCE = 0.05  # the presets' promise: the estimate within 5 % of vLLM's block count


def apply_preset(window, qtbot, name: str, when_busy: str | None = None):
    panel = window.presets
    panel.choose(name)
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
        conversation = window.chat.new_conversation()
        assert conversation.sampling == resolved.sampling, "the preset seeds new conversations"
        window.chat.sampling.max_tokens.setValue(8)
        _, reply = type_and_send(window, qtbot, "Hello!")
        wait_finished(qtbot, reply)
        assert reply.status == "done" and reply.text, (name, reply.error)
        qtbot.waitUntil(lambda: window.heatmap.snapshot is not None
                        and window.heatmap.snapshot.num_blocks == num_blocks, timeout=10_000)


def long_reply(window, qtbot):
    sampling = window.chat.sampling
    sampling.ignore_eos.setChecked(True)
    sampling.max_tokens.setValue(4000)
    conversation, reply = type_and_send(window, qtbot, "Tell me a long story.")
    qtbot.waitUntil(lambda: len(reply.text) > 20, timeout=60_000)
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
