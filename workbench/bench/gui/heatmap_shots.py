"""An offscreen picture of the heatmap following a chat with images, for the docs, with the real engine on
the vision demo model (Idefics3):

    python -m workbench.bench.gui.heatmap_shots docs

writes ``heatmap-images.png``: a first chat asked about two pictures has finished (its blocks cached, the
image tokens' blocks still hatched); a second chat sends the first picture again and is still answering,
the heatmap following it (Follow chat): its image blocks are the first chat's, reused from the prefix
cache, hatched; below, the plots scrolled to the multimodal cache's hit rate (the first chat's two
images looked up and missed, the second's found). Prints the hover of the second chat's first image
block. The pictures are drawn here with Pillow, in a temporary folder, and attached through the chat
pane's own Attach image… path.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

FIRST = "Two pictures: which one is the harbour?"
SECOND = "The harbour again: where is the sun?"  # the picture's tokens come first: its blocks are the first chat's


def ask(window, pictures: list[Path], question: str, max_tokens: int):
    """A new chat asking ``question`` about ``pictures``; returns its reply (streaming)."""
    from workbench.bench.gui.image_shots import attach

    chat = window.chat
    chat.new_conversation()
    chat.sampling.ignore_eos.setChecked(True)
    chat.sampling.max_tokens.setValue(max_tokens)
    attach(window, pictures)
    chat.input.setPlainText(question)
    chat.send()
    return chat.current.messages[-1]


def image_block_hover(window, request_id: str) -> str:
    """The heatmap's hover over the first block of the request's first image."""
    heatmap = window.heatmap
    snapshot = heatmap.snapshot
    span = snapshot.image_spans[request_id][0]
    block = int(snapshot.tables[request_id][span.blocks(snapshot.block_size).start])
    per_cell, _, columns = heatmap.grid
    return heatmap.describe_cell(*divmod(block // per_cell, columns))


def scroll_to_plot(window, name: str) -> None:
    """Scrolls the engine tab's plots so that the plot ``name`` is at the top of their area."""
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QScrollArea

    plots = window.plots
    area = plots.parentWidget()
    while area is not None and not isinstance(area, QScrollArea):
        area = area.parentWidget()
    if area is None:
        return
    top = plots.graphics.mapTo(area.widget(), QPoint(0, int(plots.plots[name].pos().y()))).y()
    area.verticalScrollBar().setValue(top)


def main(folder: str) -> int:
    from workbench.app import demo_vl_engine_config
    from workbench.bench.gui.gui_stall import started_window
    from workbench.bench.gui.image_shots import draw
    from workbench.bench.gui.screenshot import process_events_until, save_small

    window, _ = started_window(demo_vl_engine_config(), keep=False)
    window.resize(1400, 860)
    with tempfile.TemporaryDirectory(prefix="heatmap-images-") as temporary:
        pictures = Path(temporary)
        harbour = draw(pictures / "harbour.png", (320, 240), (120, 170, 230), (30, 80, 150), (250, 220, 80))
        forest = draw(pictures / "forest.jpg", (240, 320), (200, 220, 240), (40, 120, 50), (250, 180, 60))
        first = ask(window, [harbour, forest], FIRST, 32)
        process_events_until(lambda: first.status not in ("waiting", "streaming"), 300)
        print("first chat:", first.status, first.error or "", first.figures)
        second = ask(window, [harbour], SECOND, 1500)
        heatmap = window.heatmap
        heatmap.follow_button.setChecked(True)
        process_events_until(lambda: heatmap.snapshot is not None and second.request_id in heatmap.snapshot.image_spans
                             and len(second.text) > 200, 300)
        process_events_until(lambda: "mm_cache" in window.plots.plots, 30)
        process_events_until(lambda: False, 1.0)  # the follow zoom, a few frames, the plots drawn
        scroll_to_plot(window, "mm_cache")
        process_events_until(lambda: False, 0.3)
        print("follow line:", heatmap.follow_status.text())
        print("hover of the second chat's first image block:\n" + image_block_hover(window, second.request_id))
        save_small(window, str(Path(folder) / "heatmap-images.png"))
    window.close()
    return 0 if first.status == "done" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs"))
