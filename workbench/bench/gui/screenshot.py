"""Offscreen screenshots for the docs.

    python -m workbench.bench.gui.screenshot OUT.png        the window mid-reply, the heatmap filling
                                                            and the live plots with ~5 s of points
    python -m workbench.bench.gui.screenshot --benchmark CSV OUT.png
                                                            the Benchmark view showing a saved result
    python -m workbench.bench.gui.screenshot --batch OUT.png  the batch pane mid-run, a chat reply beside it
    python -m workbench.bench.gui.screenshot --batch-runs OUT.png  the batch pane after a cancelled run, the
                                                            Runs picker holding it beside an earlier one
    python -m workbench.bench.gui.screenshot --presets OUT.png  the preset panel: a diff and the capacity planner
    python -m workbench.bench.gui.screenshot --storage OUT.png
                                                            a session restored from a read-only database
    python -m workbench.bench.gui.screenshot --engine-log OUT.png  the engine log, at the engine core's placement
    python -m workbench.bench.gui.screenshot --engine-killed-idle OUT.png
                                                            the same with no reply running: said at once
    python -m workbench.bench.gui.screenshot --worker-killed OUT.png
                                                            the model worker SIGKILLed mid-reply: the message
    python -m workbench.bench.gui.screenshot --engine-killed OUT.png
                                                            vLLM's processes SIGKILLed mid-reply (as `pkill -9 -f
                                                            VLLM` does), twice, a restart between: the plots keep
                                                            their points, marked where the engine died
"""
from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path


def process_events_until(condition, timeout_s: float) -> bool:
    """Runs the application's events until ``condition()`` holds or ``timeout_s`` has passed."""
    from PySide6.QtCore import QEventLoop
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        app.processEvents(QEventLoop.AllEvents, 20)
        time.sleep(0.005)
    return condition()


def _started_window(size: tuple[int, int] = (1500, 900)):
    """The app's window, offscreen, with its engine ready; returns (window, wait) or (None, None)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from workbench.app import build_window, demo_engine_config

    QApplication.instance() or QApplication([])
    window, _ = build_window(demo_engine_config())
    window.resize(*size)
    window.show()

    wait = process_events_until

    if not wait(lambda: window.model.engine.settled(1), 600) or not window.model.engine.ready:
        print("engine did not start:", window.model.engine.message)
        window.close()
        return None, None
    return window, wait


def close_window(window, timeout_s: float = 120.0) -> None:
    """Closes the window and waits for what stops behind it (the engine, its threads, the storage), as
    the app does before its process ends: a script that returned at once would end Python under them."""
    window.close()
    shutdown = getattr(window, "shutdown", None)
    if shutdown is not None:
        shutdown.wait(timeout_s)


def save_small(widget, path: str, max_bytes: int = 40_000) -> int:
    """Saves a grab of ``widget`` as PNG; where the full-colour file would be bigger than ``max_bytes``,
    with a palette of 256 colours (Pillow, which vLLM brings; Qt's own 8-bit conversion where it is
    missing). Pillow's maximum-coverage palette keeps a window's colours within a few steps of 255 (the
    heatmap's legend and the plots' lines stay the colours the app draws) at about a third of the size."""
    from PySide6.QtGui import QImage

    image = widget.grab().toImage()
    image.save(path)
    if Path(path).stat().st_size > max_bytes:
        try:
            from PIL import Image
        except ImportError:
            image.convertToFormat(QImage.Format_Indexed8).save(path)
        else:
            with Image.open(path) as full:
                small = full.convert("RGB").quantize(colors=256, method=Image.Quantize.MAXCOVERAGE)
            small.save(path, optimize=True)
    return Path(path).stat().st_size


def _long_replies(chat) -> None:
    """Replies run to 1,500 tokens, so that they are still streaming when the picture is taken."""
    chat.sampling.ignore_eos.setChecked(True)
    chat.sampling.max_tokens.setValue(1500)


def main(path: str) -> int:
    window, wait = _started_window()
    if window is None:
        return 1
    chat = window.chat
    _long_replies(chat)
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
    save_small(window, path)
    print("saved", path, "|", window.heatmap.summary.text())
    window.close()
    return 0


def benchmark_view(csv_path: str, path: str) -> int:
    """The Benchmark view with the rows of a ``benchmark.csv`` written by ``bench compare``."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from workbench.export.benchmark_results import read_results
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


def batch_pane(path: str) -> int:
    """The batch pane a quarter through 3,000 prompts, the heatmap naming its rows, a chat reply beside."""
    import tempfile

    from workbench.bench.batch_bench import write_prompt_file

    window, wait = _started_window((1500, 900))
    if window is None:
        return 1
    prompts = write_prompt_file(Path(tempfile.mkdtemp()) / "prompts.jsonl", 3000, 12)
    pane = window.batch
    window.panes.setCurrentWidget(pane)
    pane.open_file(str(prompts), "jsonl")
    wait(pane.run_button.isEnabled, 300)  # read, and its rows taken on the GUI thread
    pane.settings.sampling.max_tokens.setValue(96)
    pane.settings.sampling.ignore_eos.setChecked(True)
    run = pane.start_run()
    window.chat.input.setPlainText("What is a KV cache?")
    window.chat.send()
    wait(lambda: run.progress().num_finished >= 700, 300)
    pane.table.selectRow(3)
    wait(lambda: window.heatmap.snapshot is not None and window.heatmap.snapshot.num_in_use > 40, 30)
    size = save_small(window, path)
    print("saved", path, f"{size:,} bytes |", pane.progress_label.text(), "|", window.heatmap.summary.text())
    window.close()
    return 0


def batch_runs(path: str) -> int:
    """A short run finished, then 300 prompts cancelled part-way: the pane's counts and its Runs picker."""
    import tempfile

    window, wait = _started_window((1500, 900))
    if window is None:
        return 1
    folder, pane = Path(tempfile.mkdtemp()), window.batch
    window.panes.setCurrentWidget(pane)
    pane.confirm = lambda *_: True  # the question before the first run leaves the pane: yes
    for name, count, cancel_at in (("warm-up.txt", 12, None), ("prompts.txt", 300, 120)):
        (folder / name).write_text("".join(f"Item {i}: what is a KV cache block?\n" for i in range(count)))
        pane.open_file(str(folder / name), "text")
        wait(lambda: pane.loader.done, 60)
        pane.settings.sampling.max_tokens.setValue(48)
        pane.settings.sampling.ignore_eos.setChecked(True)
        pane.settings.max_in_flight.setValue(16)
        run = pane.start_run()
        wait(lambda: run.state == "finished" or cancel_at and run.progress().num_finished >= cancel_at, 300)
        if cancel_at:
            pane.cancel_run()
            wait(lambda: run.progress().num_in_flight == 0, 60)
    pane.table.selectRow(2)
    wait(lambda: False, 0.6)  # the pane's timer redraws the progress line and the picker
    size = save_small(pane, path)
    print("saved", path, f"{size:,} bytes |", pane.progress_label.text(), "|", pane.runs.titles())
    window.close()
    return 0


def preset_panel(path: str) -> int:
    """The preset panel with low-latency chosen against the running balanced engine: the diff, an edited
    value, and the planner beside vLLM's own count."""
    window, wait = _started_window((1500, 900))
    if window is None:
        return 1
    panel = window.presets
    panel.choose("balanced")
    panel.apply()
    wait(lambda: window.model.engine.settled(window.model.latest_start_id) and window.model.engine.ready, 300)
    panel.choose("low-latency")
    panel._on_value_edited("max_num_seqs", 12)
    window.show_panel("Presets")
    wait(lambda: False, 0.5)
    size = save_small(window.engine_region, path)
    print("saved", path, f"{size:,} bytes |", panel.diff.text())
    window.close()
    return 0


def preset_status(path: str) -> int:
    """The window during a preset's start: the preset panel (against the engine starting now, vLLM's
    defaults with their values) and the status bar's one start bar."""
    window, wait = _started_window((1500, 900))
    if window is None:
        return 1
    panel, model = window.presets, window.model
    wait(lambda: panel.defaults is not None, 300)  # read off the GUI thread once the first start settled
    panel.choose("high-throughput")
    before = model.latest_start_id
    panel.apply()
    starting = wait(lambda: model.latest_start_id > before and model.engine.progress is not None
                    and model.engine.progress.phase in ("weights", "profiling", "kv_alloc"), 300)
    size = save_small(window, path)
    print("saved", path, f"{size:,} bytes |", window.status.progress.text(), "|", panel.diff.text())
    window.close()
    return 0 if starting else 1


def storage_trouble(path: str) -> int:
    """A conversation stored (its last reply cut off by a crash), then shown from the database opened
    read-only: the band names the file and what to do, the restored session below it. No engine."""
    import random
    import tempfile

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from workbench.app import build_window, demo_engine_config
    from workbench.bench.storage_size import fill
    from workbench.engine.events import TextFlushed
    from workbench.engine.sampling import SamplingSettings
    from workbench.engine.spec import EngineConfig
    from workbench.model.app_model import AppModel
    from workbench.storage.store import Storage

    app = QApplication.instance() or QApplication([])
    db = Path(tempfile.mkdtemp(prefix="workbench-screenshot-")) / "workbench.db"
    storage, model = Storage.open(db), AppModel(EngineConfig("demo"))
    storage.start(model)
    fill(model, 2, 40, random.Random(1))
    request = model.ask(next(iter(model.conversations)), "And what is evicted first?", SamplingSettings())
    model.apply(TextFlushed({request.request_id: "The least recently used cached block, once no request"}))
    storage.close()
    window, _ = build_window(demo_engine_config(), start_engine=False, storage=Storage.open(db, mode="ro"))
    window.resize(1300, 700)
    window.show()
    app.processEvents()
    transcript = window.chat.stack.currentWidget()
    transcript.verticalScrollBar().setValue(transcript.verticalScrollBar().maximum())
    app.processEvents()
    size = save_small(window, path)
    print("saved", path, f"{size:,} bytes |", window.storage_notice.label.text())
    window.close()
    return 0


def engine_log(path: str) -> int:
    """The engine log of a start on this machine, scrolled to the workbench's line on where vLLM's
    engine core runs (on a two-core machine: moved onto the model worker's core)."""
    from PySide6.QtGui import QTextCursor
    from PySide6.QtWidgets import QApplication

    from workbench.ui.engine_log_view import EngineLogDialog

    window, wait = _started_window()
    if window is None:
        return 1
    dialog = EngineLogDialog(window.model.engine.log_path, window)
    dialog.show()
    dialog.text.moveCursor(QTextCursor.MoveOperation.Start)
    found = dialog.text.find("vLLM's engine core moved")  # selects the line's words
    if found:
        dialog.text.centerCursor()  # the line in the middle of the view, the start's phases above it
    QApplication.processEvents()
    size = save_small(dialog, path)
    print("saved", path, f"{size:,} bytes |", "the placement line found" if found else "no placement line")
    dialog.close()
    window.close()
    return 0 if found else 1


def worker_killed(path: str) -> int:
    """A reply streaming when vLLM's model worker is killed (SIGKILL, as the out-of-memory killer does):
    the engine's message names the worker and the signal, and the reply keeps its text."""
    import signal

    import psutil

    window, wait = _started_window()
    if window is None:
        return 1
    chat = window.chat
    _long_replies(chat)
    chat.input.setPlainText("What is a KV cache?")
    chat.send()
    reply = chat.current.messages[-1]
    wait(lambda: len(reply.text) > 300, 120)
    workers = [p.pid for p in psutil.Process().children(recursive=True) if p.name().startswith("VLLM::Worker")]
    if not workers:
        print("no model-worker process found")
        return 1
    os.kill(workers[0], signal.SIGKILL)
    died = wait(lambda: window.model.engine.state == "died", 60)
    wait(lambda: False, 1.0)  # the window draws the state
    save_small(window, path)
    print("saved", path, "|", window.model.engine.message[:300].replace("\n", " "))
    window.close()
    return 0 if died and "SIGKILL" in window.model.engine.message else 1


def engine_killed(path: str) -> int:
    """vLLM's processes (engine core and model worker) SIGKILLed mid-reply, as `pkill -9 -f VLLM` does;
    the engine restarted, a second reply, and killed again: the plots keep both engines' points on
    one time axis, a line where each died, and the status bar names the signal."""
    window, wait = _started_window()
    if window is None:
        return 1
    chat = window.chat
    for round_number in (1, 2):
        _long_replies(chat)
        chat.input.setPlainText("What is a KV cache?" if round_number == 1 else "What is prefix caching?")
        chat.send()
        reply = chat.current.messages[-1]
        drawn = window.plots.num_draws
        # a second of the reply's points on the plots, the reply still streaming (it lasts about three)
        wait(lambda: len(reply.text) > 300 and window.plots.num_draws >= drawn + 10, 120)
        if reply.status != "streaming":
            print("the reply ended before the kill:", reply.status)
            return 1
        kill_vllm_processes()
        if not wait(lambda: window.model.engine.state == "died", 60):
            print("the engine did not die:", window.model.engine.message)
            return 1
        if round_number == 1:
            start_id = window.restart_engine()
            wait(lambda: window.model.engine.settled(start_id), 600)
            chat.new_conversation()
    wait(lambda: False, 1.0)  # the window draws the state
    save_small(window, path)
    print("saved", path, "|", window.plots.marks.labels(), "|", window.model.engine.message[:300].replace("\n", " "))
    window.close()
    return 0 if "SIGKILL" in window.model.engine.message else 1


def engine_killed_idle(path: str) -> int:
    """vLLM's processes SIGKILLed with no reply running, a question answered before: the status bar says so at
    once (not at the next question), "while idle", with the signal."""
    window, wait = _started_window()
    if window is None:
        return 1
    chat = window.chat
    chat.input.setPlainText("What is a KV cache?")
    chat.send()
    reply = chat.current.messages[-1]
    wait(lambda: reply.status not in ("waiting", "streaming"), 300)
    killed_at = time.monotonic()
    kill_vllm_processes()
    if not wait(lambda: window.model.engine.state == "died", 60):
        print("the engine did not die:", window.model.engine.message)
        return 1
    said_after_s = time.monotonic() - killed_at
    wait(lambda: False, 1.0)  # the window draws the state
    save_small(window, path)
    print("saved", path, f"| said {said_after_s:.2f} s after the kill |", window.model.engine.message[:200])
    window.close()
    return 0


def kill_vllm_processes() -> list[int]:
    """SIGKILLs this app's vLLM processes (named ``VLLM::...``), as `pkill -9 -f VLLM` would; their pids."""
    import signal

    from workbench.engine.process_guard import child_pids

    pids = sorted(child_pids(vllm_only=True))
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return pids


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--engine-killed":
        sys.exit(engine_killed(sys.argv[2]))
    if len(sys.argv) == 3 and sys.argv[1] == "--engine-killed-idle":
        sys.exit(engine_killed_idle(sys.argv[2]))
    if len(sys.argv) == 3 and sys.argv[1] == "--worker-killed":
        sys.exit(worker_killed(sys.argv[2]))
    if len(sys.argv) == 3 and sys.argv[1] == "--engine-log":
        sys.exit(engine_log(sys.argv[2]))
    if len(sys.argv) == 3 and sys.argv[1] == "--presets":
        sys.exit(preset_panel(sys.argv[2]))
    if len(sys.argv) == 3 and sys.argv[1] == "--preset-status":
        sys.exit(preset_status(sys.argv[2]))
    if len(sys.argv) == 3 and sys.argv[1] == "--storage":
        sys.exit(storage_trouble(sys.argv[2]))
    if len(sys.argv) == 3 and sys.argv[1] == "--batch-runs":
        sys.exit(batch_runs(sys.argv[2]))
    if len(sys.argv) == 3 and sys.argv[1] == "--batch":
        sys.exit(batch_pane(sys.argv[2]))
    if len(sys.argv) == 4 and sys.argv[1] == "--benchmark":
        sys.exit(benchmark_view(sys.argv[2], sys.argv[3]))
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshot-mid-reply.png"))
