"""Offscreen screenshots for the docs.

    python -m workbench.bench.gui.screenshot OUT.png        the window mid-reply, the heatmap filling
                                                            and the live plots with ~5 s of points
    python -m workbench.bench.gui.screenshot --benchmark CSV OUT.png
                                                            the Benchmark view showing a saved result
"""
from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path


def main(path: str) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QEventLoop
    from PySide6.QtWidgets import QApplication

    from workbench.app import build_window, demo_engine_config

    app = QApplication.instance() or QApplication([])
    window, engine = build_window(demo_engine_config())
    window.resize(1500, 900)
    window.show()

    def wait(condition, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not condition() and time.monotonic() < deadline:
            app.processEvents(QEventLoop.AllEvents, 20)
            time.sleep(0.005)
        return condition()

    if not wait(lambda: window.model.engine.settled(1), 600) or not window.model.engine.ready:
        print("engine did not start:", window.model.engine.message)
        return 1
    chat = window.chat
    chat.sampling.ignore_eos.setChecked(True)
    chat.sampling.max_tokens.setValue(1500)
    for question in ("What is prefix caching?", "What is a KV cache?", "Why do two chats share blocks?",
                     "What is continuous batching?"):
        if chat.current.messages:
            chat.new_conversation()
        chat.input.setPlainText(question)
        chat.send()
    chat.conversation_list.setCurrentRow(0)
    first = next(iter(window.model.conversations.values())).messages[-1]
    wait(lambda: len(first.text) > 600 and window.heatmap.snapshot is not None
         and window.heatmap.snapshot.num_in_use > 40 and window.plots.num_draws >= 20, 120)
    window.grab().save(path)
    _fewer_colours(path)
    print("saved", path, "|", window.heatmap.summary.text())
    window.close()
    return 0


def _fewer_colours(path: str, colours: int = 128) -> None:
    """The PNG re-saved with a palette of ``colours`` (a window with plots is ~280 KB in true colour,
    ~90 KB so), where Pillow (which vLLM brings) is installed."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=colours, method=Image.Quantize.MEDIANCUT)
    small.save(path, optimize=True)


def benchmark_view(csv_path: str, path: str) -> int:
    """The Benchmark view with the rows of a ``benchmark.csv`` written by ``bench compare``."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from workbench.bench.results import read_results
    from workbench.ui.benchmark_view import BenchmarkView
    from workbench.ui.pg_setup import configure_pyqtgraph

    app = QApplication.instance() or QApplication([])
    configure_pyqtgraph()
    markdown = Path(csv_path).with_name("benchmark.md")
    header = markdown.read_text(encoding="utf-8").split("\n", 1)[0].strip() if markdown.exists() else ""
    view = BenchmarkView(csv_path, lambda: False, lambda: None)
    view.resize(1250, 720)
    view.show()
    view.show_results(read_results(Path(csv_path)))
    found = re.search(r"(\d+) requests × (\d+) prompt / (\d+) output tokens.*?(\d+) interleaved repeats", header)
    if found:
        for name, value in zip(("requests", "prompt-len", "output-len", "repeats"), found.groups()):
            view.fields[name].setValue(int(value))
    view.progress.setValue(100)
    view.message.setWordWrap(True)
    view.message.setText(header)
    app.processEvents()
    view.grab().save(path)
    print("saved", path)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--benchmark":
        sys.exit(benchmark_view(sys.argv[2], sys.argv[3]))
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshot-mid-reply.png"))
