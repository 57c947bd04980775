"""The heatmap's image marks and the multimodal cache plot through the real window and the real vLLM CPU
engine on the vision demo model (Idefics3): a chat with an image hatches the blocks its image tokens are
in and the hover names the chat, the image and its tokens; a second chat with the same image reuses those
very blocks from the prefix cache, still marked; the multimodal cache's hit rate is plotted. The engine is
started once for the module, on the vision model (``vl_window``)."""
from __future__ import annotations

import numpy as np
import pytest
from chat_driver import HANG_TIMEOUT_MS, REPLY_TIMEOUT_MS
from chat_images import image_file
from test_batch_images_engine import vl_window  # noqa: F401  (the fixture: the shared window on demo-vl)

from workbench.engine.kv_snapshot import BLOCK_STATE_CACHED, BLOCK_STATE_FREE

pytestmark = pytest.mark.slow
# Long enough that the blocks holding the image's tokens are full, so the prefix cache keeps them all
QUESTION = ("Look at this picture closely and describe it: the colours, the shapes, where the light comes "
            "from, what is near and what is far, and what the scene might be. " * 3)


def attach(chat, qtbot, paths) -> None:
    chat.choose_images = lambda parent: [str(p) for p in paths]
    with qtbot.waitSignal(chat.attachments.read_done, timeout=HANG_TIMEOUT_MS):
        chat.attach_button.click()


def ask_with_image(window, qtbot, picture):
    """A new chat asking :data:`QUESTION` about ``picture``; returns (its reply, the first snapshot the
    heatmap showed with the request's image spans, while it ran)."""
    chat, heatmap = window.chat, window.heatmap
    chat.new_conversation()
    chat.sampling.ignore_eos.setChecked(True)
    chat.sampling.max_tokens.setValue(96)  # runs long enough for several snapshots of its table
    attach(chat, qtbot, [picture])
    chat.input.setPlainText(QUESTION)
    chat.send()
    reply = chat.current.messages[-1]
    qtbot.waitUntil(lambda: reply.request_id and heatmap.snapshot is not None
                    and reply.request_id in heatmap.snapshot.image_spans, timeout=REPLY_TIMEOUT_MS)
    return reply, heatmap.snapshot


def image_block_ids(snapshot, request_id: str) -> list[int]:
    table = snapshot.tables[request_id]
    return sorted({int(table[i]) for span in snapshot.image_spans[request_id]
                   for i in span.blocks(snapshot.block_size) if i < len(table)})


def hover_of_block(heatmap, block_id: int) -> str:
    per_cell, _, columns = heatmap.grid
    return heatmap.describe_cell(*divmod(block_id // per_cell, columns))


def hatched(heatmap, block_id: int) -> bool:
    """Whether the hatch crosses the cell of ``block_id`` (its first line starts at the cell's left middle)."""
    per_cell, _, columns = heatmap.grid
    row, column = divmod(block_id // per_cell, columns)
    x, y = heatmap.image_marks.getData()
    return x is not None and bool(np.any((x[0::6] == column) & (y[0::6] == row + 0.5)))


def test_image_blocks_are_marked_reused_by_the_same_image_and_the_mm_cache_plotted(vl_window, qtbot, tmp_path):
    window = vl_window
    heatmap = window.heatmap
    picture = image_file(tmp_path, "cat.png", (96, 64), (200, 120, 40))
    first, seen = ask_with_image(window, qtbot, picture)
    spans = seen.image_spans[first.request_id]
    assert len(spans) == 1 and spans[0].length >= 20, spans  # the demo's 20 image tokens and their markers
    first_blocks = image_block_ids(seen, first.request_id)
    qtbot.waitUntil(lambda: set(first_blocks) <= set(heatmap.image_blocks.block_ids.tolist()),
                    timeout=HANG_TIMEOUT_MS)
    assert all(hatched(heatmap, b) for b in first_blocks)
    label = window.model.owner_label(first.request_id)
    span = spans[0]
    expected = f"{label} · cat.png, tokens {span.offset}–{span.offset + span.length - 1} of the prompt"
    assert expected in hover_of_block(heatmap, first_blocks[0])
    heatmap.follow_button.setChecked(True)  # Follow chat on the selected (this) conversation
    qtbot.waitUntil(lambda: "with image tokens" in heatmap.follow_status.text(), timeout=HANG_TIMEOUT_MS)
    qtbot.waitUntil(lambda: first.status not in ("waiting", "streaming"), timeout=REPLY_TIMEOUT_MS)
    assert first.status == "done", first.error
    # finished: its image blocks stay in the prefix cache, still marked
    qtbot.waitUntil(lambda: first.request_id not in heatmap.snapshot.tables, timeout=HANG_TIMEOUT_MS)
    states = heatmap.snapshot.states[first_blocks]
    assert np.all(states == BLOCK_STATE_CACHED), states
    assert set(first_blocks) <= set(heatmap.image_blocks.block_ids.tolist())

    # a second chat, the same picture and question: vLLM's prefix cache hands it the same blocks
    second, seen = ask_with_image(window, qtbot, picture)
    second_blocks = image_block_ids(seen, second.request_id)
    assert second_blocks == first_blocks, "the same image's KV blocks reused from the prefix cache"
    assert not np.any(np.isin(seen.states[second_blocks], (BLOCK_STATE_FREE, BLOCK_STATE_CACHED)))
    second_label = window.model.owner_label(second.request_id)
    assert f"{second_label} · cat.png, tokens" in hover_of_block(heatmap, second_blocks[0])
    assert all(hatched(heatmap, b) for b in second_blocks)
    qtbot.waitUntil(lambda: second.status not in ("waiting", "streaming"), timeout=REPLY_TIMEOUT_MS)
    assert second.status == "done", second.error
    assert second.figures.cached_prompt_tokens >= span.offset + span.length, "the image's tokens came from the cache"

    # vLLM's multimodal cache: two images looked up, the second found; its plot laid out and drawn
    host = window.engine.host
    qtbot.waitUntil(lambda: host.latest_stats().totals.mm_hits >= 1, timeout=HANG_TIMEOUT_MS)
    totals = host.latest_stats().totals
    assert totals.mm_queries >= 2 and totals.mm_cache_reports > 0, totals
    qtbot.waitUntil(lambda: "mm_cache" in window.plots.plots, timeout=HANG_TIMEOUT_MS)
    curve = window.plots.curves["mm_cache_hit_pct"]

    def hit_drawn() -> bool:  # the plots draw in turn, so the bin of the second look-up comes after the first's
        shown = curve.getData()[1]
        return shown is not None and np.isfinite(shown).any() and np.nanmax(shown) > 0

    qtbot.waitUntil(hit_drawn, timeout=HANG_TIMEOUT_MS)  # the second look-up of the same image: a hit
