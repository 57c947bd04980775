"""The core slice through the real window and the real vLLM CPU engine."""
from __future__ import annotations

import time

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QPushButton, QStackedWidget

from chat_driver import HANG_TIMEOUT_MS, SnapshotRecorder, type_and_send, wait_finished
from workbench.engine.kv_snapshot import (
    BLOCK_STATE_CACHED, BLOCK_STATE_IN_USE, BLOCK_STATE_SHARED, NUM_BLOCK_STATES,
)
from workbench.engine.heatmap_image import CHANGED_COLOURS, NO_BLOCK, STATE_COLOURS
from workbench.ui.message_text import MessageText

pytestmark = pytest.mark.slow  # the real engine, started once for the session


def test_chat_round_trip_through_widgets(window, qtbot):
    conversation, reply = type_and_send(window, qtbot, "What is a KV cache?")
    assert window.findChild(QPushButton, "stopButton").isEnabled()
    wait_finished(qtbot, reply)
    assert reply.status == "done", reply.error
    assert len(reply.text.split()) >= 3, reply.text
    transcript = window.findChild(QStackedWidget, "chatTranscript").currentWidget()
    shown = [label.text() for label in transcript.findChildren(QLabel)]
    turns = [text.text() for text in transcript.findChildren(MessageText)]
    assert turns == ["What is a KV cache?", reply.text]
    assert reply.figures.prompt_tokens > 64 and reply.figures.output_tokens > 0
    assert reply.figures.ttft_s is not None and reply.figures.ttft_s > 0
    stats = [t for t in shown if t.startswith("TTFT")]
    assert stats and "prompt" in stats[-1] and "cached" in stats[-1]
    assert reply.figures.output_tokens < 256, "the demo model should end its turn, not run to max_tokens"


def test_heatmap_from_deltas_equals_full_scan_during_and_after(window, qtbot):
    window.chat.sampling.ignore_eos.setChecked(True)
    window.chat.sampling.max_tokens.setValue(600)
    recorder = SnapshotRecorder(window)
    _, reply = type_and_send(window, qtbot, "Tell me about continuous batching.")
    recorder.wait_until(qtbot, lambda: reply.status != "streaming")
    recorder.wait_until(qtbot, lambda: recorder.snapshots and recorder.snapshots[-1].num_in_use == 0)
    during = [s for s in recorder.snapshots if s.tables.get(reply.request_id) is not None]
    assert len(during) >= 2, "no snapshot caught the reply running"
    for snapshot in recorder.snapshots:
        assert snapshot.scan_problems == (), snapshot.scan_problems
    mid = during[len(during) // 2]
    own_blocks = mid.tables[reply.request_id]
    assert np.all(np.isin(mid.states[own_blocks], [BLOCK_STATE_IN_USE, BLOCK_STATE_SHARED]))
    after = recorder.snapshots[-1]
    assert reply.request_id not in after.tables
    full_blocks = own_blocks[: len(own_blocks) - 1]
    assert np.all(after.states[full_blocks] == BLOCK_STATE_CACHED), "finished blocks should turn cached"
    qtbot.waitUntil(lambda: window.heatmap.snapshot is not None and window.heatmap.snapshot.version == after.version,
                    timeout=HANG_TIMEOUT_MS)
    assert np.array_equal(window.heatmap.image.image % NUM_BLOCK_STATES, _as_cells(window.heatmap, after.states))
    _changed_blocks_are_drawn_brighter(window.heatmap, during[0], during[-1])


def _as_cells(heatmap, per_block: np.ndarray, past_the_end: int = 0) -> np.ndarray:
    """One value per block laid out as the view's grid (the demo's pool is drawn a cell per block),
    ``past_the_end`` in the cells after the pool's last block."""
    per_cell, rows, columns = heatmap.grid
    assert per_cell == 1
    cells = np.full(rows * columns, past_the_end, np.uint8)
    cells[: len(per_block)] = per_block
    return cells.reshape(rows, columns)


def _changed_blocks_are_drawn_brighter(heatmap, previous, latest) -> None:
    """Shows two frames; blocks changed between them are drawn in their state's brighter colour."""
    heatmap.show_snapshot(previous)
    heatmap.show_snapshot(latest)
    changed = latest.changed_at > previous.version
    in_use = latest.states == BLOCK_STATE_IN_USE
    grown, kept = np.flatnonzero(changed & in_use), np.flatnonzero(~changed & in_use)
    assert len(grown) and len(kept), "the reply should have grown by a block between the two frames"
    highlighted = latest.states + NUM_BLOCK_STATES * changed  # the colour table's second half
    assert np.array_equal(heatmap.image.image, _as_cells(heatmap, highlighted, past_the_end=NO_BLOCK))
    heatmap.image.render()
    _, _, columns = heatmap.grid

    def drawn(block: int):
        return heatmap.image.qimage.pixelColor(int(block) % columns, int(block) // columns)

    assert drawn(grown[0]).value() > drawn(kept[0]).value(), "a changed block should be drawn brighter"
    assert drawn(grown[0]).getRgb()[:3] == CHANGED_COLOURS[BLOCK_STATE_IN_USE]
    assert drawn(kept[0]).getRgb()[:3] == STATE_COLOURS[BLOCK_STATE_IN_USE]


def test_prefix_reuse_and_shared_blocks_across_two_conversations(window, qtbot):
    window.chat.sampling.ignore_eos.setChecked(True)
    window.chat.sampling.max_tokens.setValue(500)
    recorder = SnapshotRecorder(window)
    first_conv, first = type_and_send(window, qtbot, "What is prefix caching?")
    window.chat.new_conversation()  # a new conversation takes the preset's sampling: set it again
    window.chat.sampling.ignore_eos.setChecked(True)
    window.chat.sampling.max_tokens.setValue(500)
    second_conv, second = type_and_send(window, qtbot, "Why do two chats share blocks?")
    recorder.wait_until(qtbot, lambda: first.status != "streaming" and second.status != "streaming")
    both = [s for s in recorder.snapshots if first.request_id in s.tables and second.request_id in s.tables]
    assert both, "no snapshot caught both replies running"
    snapshot = both[-1]
    shared = np.flatnonzero(snapshot.ref_cnts > 1)
    assert len(shared) >= 2, "the system prompt's blocks should be shared while both run"
    assert np.all(snapshot.states[shared] == BLOCK_STATE_SHARED)
    assert set(shared) <= set(snapshot.tables[first.request_id]) & set(snapshot.tables[second.request_id])
    owners = window.heatmap.owner_name
    assert {owners(r) for r in snapshot.owners_of(int(shared[0]))} == {first_conv.title, second_conv.title}
    heatmap = window.heatmap
    heatmap.show_snapshot(snapshot)
    _, _, columns = heatmap.grid
    tooltip = heatmap.describe_cell(*divmod(int(shared[0]), columns))
    assert f"Block {int(shared[0])}" in tooltip and "state: shared" in tooltip and "hashed: yes" in tooltip
    assert f"ref_cnt: {snapshot.ref_cnts[shared[0]]}" in tooltip
    assert first_conv.title in tooltip and second_conv.title in tooltip
    block_size = snapshot.block_size
    assert max(first.figures.cached_prompt_tokens, second.figures.cached_prompt_tokens) >= 2 * block_size
    window.chat.sampling.ignore_eos.setChecked(False)
    window.chat.new_conversation()
    _, third = type_and_send(window, qtbot, "Hello!")
    wait_finished(qtbot, third)
    assert third.figures.cached_prompt_tokens >= 2 * block_size, "a later chat should hit the prefix cache"
    assert f"cached {third.figures.cached_prompt_tokens} tok" in window.chat.transcripts[
        window.chat.current.conversation_id].view_of(third.message_id).stats.text()


def test_stop_frees_the_requests_blocks(window, qtbot):
    window.chat.sampling.ignore_eos.setChecked(True)
    window.chat.sampling.max_tokens.setValue(1800)
    recorder = SnapshotRecorder(window)
    conversation, reply = type_and_send(window, qtbot, "Count to five.")
    holding = lambda: [s for s in recorder.snapshots if reply.request_id in s.tables]  # noqa: E731
    recorder.wait_until(qtbot, lambda: len(holding()) >= 2 and holding()[-1] is recorder.snapshots[-1]
                        and len(reply.text) > 0)
    first, at_stop = holding()[0], holding()[-1]
    held_at_stop = at_stop.tables[reply.request_id]
    clicked_at = time.monotonic()
    qtbot.mouseClick(window.findChild(QPushButton, "stopButton"), Qt.LeftButton)
    qtbot.waitUntil(lambda: reply.status == "stopped", timeout=HANG_TIMEOUT_MS)
    text_at_stop = reply.text
    recorder.wait_until(qtbot, lambda: reply.request_id not in recorder.snapshots[-1].tables, timeout=HANG_TIMEOUT_MS)
    last_held = holding()[-1].tables[reply.request_id]
    after = recorder.snapshots[-1]
    assert after.scan_problems == ()
    # vLLM got the abort: the request stopped growing at once. Unstopped it would have run on to
    # 1,800 tokens; stopped, it may grow only by what the engine makes at its own pace (measured
    # from the snapshots) between the last snapshot seen and the click, plus half a second and two
    # blocks for the abort to reach the engine core (a GPU makes hundreds of tokens a second).
    blocks_per_s = (len(held_at_stop) - len(first.tables[reply.request_id])) / (at_stop.taken_at - first.taken_at)
    allowed = 2 + blocks_per_s * (clicked_at - at_stop.taken_at + 0.5)
    assert len(last_held) <= len(held_at_stop) + allowed, "the engine kept generating after Stop"
    assert len(last_held) * after.block_size < 1800, "the request ran on as if never stopped"
    assert np.all(after.ref_cnts[last_held] == 0) and after.num_in_use == 0, "a stopped request must hold no block"
    assert reply.text and reply.text == text_at_stop, "what streamed before Stop stays, and nothing after it"
