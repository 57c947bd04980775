"""The window's pictures for the docs and the README, with the real engine (the demo model, CPU or GPU):

    python -m workbench.bench.gui.window_shots docs

writes ``window-1280x720.png`` and ``window-1920x1080.png`` (four chats streaming, the heatmap, plots
and memory beside them), ``plots-and-memory.png`` (the engine tab's whole column of plots and the
memory table at 1920 × 1080), ``chat-drawer.png`` (a conversation's settings drawer open) and
``heatmap-follow.png`` (a 65,536-block pool, the heatmap following the selected chat's blocks).
Each is printed with the sizes the window gave its parts.
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

QUESTIONS = ("What is prefix caching?", "What is a KV cache?", "Why do two chats share blocks?",
             "What is continuous batching?")
FOLLOW_POOL_BLOCKS = 65_536


def _ask(window, questions) -> None:
    chat = window.chat
    chat.sampling.ignore_eos.setChecked(True)  # replies still streaming when the pictures are taken
    chat.sampling.max_tokens.setValue(1500)
    for question in questions:
        if chat.current.messages:
            chat.new_conversation()
            chat.sampling.ignore_eos.setChecked(True)
            chat.sampling.max_tokens.setValue(1500)
        chat.input.setPlainText(question)
        chat.send()
    chat.conversation_list.setCurrentRow(0)


def _sizes(window) -> str:
    heatmap = window.heatmap.plot
    return (f"regions {window.regions.sizes()}, heatmap {heatmap.width()}×{heatmap.height()}, "
            f"transcript {window.chat.stack.width()} of {window.panes.width()} px")


def _started(config, size):
    from workbench.bench.gui.screenshot import process_events_until
    from workbench.bench.gui.gui_stall import started_window

    window, _ = started_window(config, keep=False)  # nothing stored: the two windows one after the other
    window.resize(*size)
    process_events_until(lambda: False, 0.5)
    return window, process_events_until


def window_sizes(folder: Path) -> None:
    from workbench.app import demo_engine_config
    from workbench.bench.gui.screenshot import save_small

    window, wait = _started(demo_engine_config(), (1280, 720))
    _ask(window, QUESTIONS)
    first = next(iter(window.model.conversations.values())).messages[-1]
    wait(lambda: len(first.text) > 600 and window.heatmap.snapshot is not None
         and window.heatmap.snapshot.num_in_use > 40 and window.plots.num_draws >= 20, 180)
    for size in ((1280, 720), (1920, 1080)):
        window.resize(*size)
        wait(lambda: False, 1.5)
        path = folder / f"window-{size[0]}x{size[1]}.png"
        save_small(window, str(path))
        print("saved", path, "|", _sizes(window))
        if size == (1920, 1080):  # the plots and the memory table, the whole scrolled column
            path = folder / "plots-and-memory.png"
            save_small(window.engine_region.monitors.widget(), str(path))
            print("saved", path)
    window.resize(1280, 720)
    window.chat.open_drawer()
    wait(lambda: False, 1.0)
    path = folder / "chat-drawer.png"
    save_small(window.panes, str(path))
    print("saved", path, "|", window.chat.summary.text())
    window.close()


def heatmap_follow(folder: Path) -> None:
    """A pool of 65,536 blocks (1 GiB of the demo's KV cache), four chats, the heatmap following the first."""
    from workbench.app import demo_engine_config
    from workbench.bench.gui.screenshot import save_small

    config = replace(demo_engine_config(), num_gpu_blocks_override=FOLLOW_POOL_BLOCKS, kv_cache_memory_bytes=1 << 30)
    window, wait = _started(config, (1280, 720))
    _ask(window, QUESTIONS)
    window.heatmap.follow_button.setChecked(True)
    first = next(iter(window.model.conversations.values())).messages[-1]
    wait(lambda: len(first.text) > 400 and window.heatmap.snapshot is not None, 180)
    wait(lambda: False, 1.0)
    path = folder / "heatmap-follow.png"
    save_small(window.engine_region, str(path))
    print("saved", path, "|", window.heatmap.follow_status.text(), "|", _sizes(window))
    window.close()


def main(folder: str) -> int:
    import os

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    window_sizes(target)
    heatmap_follow(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs"))
