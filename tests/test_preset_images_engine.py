"""The multimodal preset against the real engine: applied on the vision demo model (Idefics3, vLLM's CPU
build), vLLM takes its image limit and the planner's block count, and a question with five images is
answered, its images' tokens as many as the planner counts; six images are refused with the preset's
limit named, and the question and its images kept."""
from __future__ import annotations

import pytest
from chat_driver import HANG_TIMEOUT_MS, REPLY_TIMEOUT_MS
from chat_images import image_file
from test_batch_images_engine import vl_window  # noqa: F401  (the fixture: the shared window on demo-vl)
from test_presets_engine import apply_preset

from workbench.presets.capacity import plan_capacity
from workbench.presets.model_facts import facts_for

pytestmark = pytest.mark.slow
COLOURS = [(30, 80, 160), (40, 120, 50), (200, 40, 40), (220, 200, 40), (120, 40, 160), (10, 10, 10)]
SIZES = [(96 + 8 * n, 64) for n in range(6)]  # (width, height)


def ask_with_images(window, qtbot, tmp_path, count: int):
    chat = window.chat
    chat.new_conversation()
    chat.sampling.max_tokens.setValue(8)
    paths = [image_file(tmp_path, f"picture-{n}.png", SIZES[n], COLOURS[n]) for n in range(count)]
    chat.choose_images = lambda parent: [str(p) for p in paths]
    with qtbot.waitSignal(chat.attachments.read_done, timeout=HANG_TIMEOUT_MS):
        chat.attach_button.click()
    chat.input.setPlainText(f"What do these {count} pictures share?")
    chat.send()


def test_the_multimodal_preset_runs_five_images_on_the_vision_demo(vl_window, qtbot, tmp_path):
    window = vl_window
    resolved = apply_preset(window, qtbot, "multimodal")
    config = window.model.config
    assert config == resolved.config and config.option("limit_mm_per_prompt") == {"image": 5}
    info = window.model.engine.info
    assert info.vision is not None and info.vision.max_images_per_prompt == 5, "vLLM took the preset's limit"
    plan = plan_capacity(config, facts_for(config.model), window.presets.machine)
    assert info.num_kv_blocks == plan.num_blocks, "the CPU arithmetic, checked"
    assert plan.images is not None and "5 images at longest edge 112" in window.presets.capacity.text()

    ask_with_images(window, qtbot, tmp_path, 5)
    reply = window.chat.current.messages[-1]
    qtbot.waitUntil(lambda: reply.status not in ("waiting", "streaming"), timeout=REPLY_TIMEOUT_MS)
    assert reply.status == "done", reply.error
    processor = facts_for(config.model).image_processor
    counted = sum(processor.image_tokens(width, 64) for width, _ in SIZES[:5])  # 2 x 2 tiles, and 2 x 1 (128 x 64)
    assert reply.figures.num_image_tokens == counted == 157, "vLLM's placeholder tokens, as the planner counts them"
    assert counted <= plan.images.tokens == 170, "the planner's five images at their largest bound them"

    ask_with_images(window, qtbot, tmp_path, 6)
    chat = window.chat
    assert chat.current.messages == [], "not sent"
    assert "the engine takes at most 5 a prompt" in chat.attachments.problem.text()
    assert chat.input.toPlainText() == "What do these 6 pictures share?" and len(chat.attachments.images()) == 6
    chat.attachments.clear()
