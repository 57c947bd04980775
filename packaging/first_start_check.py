"""A new user's first session, driven through the real window (offscreen): start on the demo model
(built first when the data folder is empty), one reply, Restart engine, a second reply, quit.

Run it twice on one empty ``WORKBENCH_DATA_DIR`` for the whole check: the first run builds the demo
model and starts the engine after that, the second starts on the model already built. It prints one
line per step, saves a screenshot and the engine logs under ``--out``, and exits non-zero on the first
step that fails. ``tests/test_first_start.py`` runs it on a GPU machine; so does the H200 check in
``docs/gpu-first-start.md``.

    QT_QPA_PLATFORM=offscreen python packaging/first_start_check.py --out /tmp/first-start --label first
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

START_TIMEOUT_S = 600.0  # building the demo model and a first CUDA engine start
REPLY_TIMEOUT_S = 120.0


def wait_for(app, condition, timeout_s: float, what: str) -> float:
    """Runs the event loop until ``condition()``; returns the seconds it took, or exits on timeout."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout_s:
            raise SystemExit(f"FAILED: {what}: not within {timeout_s:.0f} s")
        app.processEvents()
        time.sleep(0.01)
    return time.monotonic() - started


def engine_ready(window, start_id: int) -> bool:
    status = window.model.engine
    if not status.settled(start_id):
        return False
    if not status.ready:
        raise SystemExit(f"FAILED: the engine did not start:\n{status.message}")
    return True


def ask(app, window, text: str) -> str:
    from PySide6.QtWidgets import QPlainTextEdit, QPushButton

    window.findChild(QPlainTextEdit, "chatInput").setPlainText(text)
    window.findChild(QPushButton, "sendButton").click()
    reply = window.chat.current.messages[-1]
    wait_for(app, lambda: reply.status != "streaming", REPLY_TIMEOUT_S, f"a reply to {text!r}")
    if reply.status != "done" or not reply.text:
        raise SystemExit(f"FAILED: the reply ended {reply.status}: {reply.error or 'no text'}")
    figures = reply.figures
    return (f"{len(reply.text)} characters, TTFT {figures.ttft_s * 1e3:.0f} ms, "
            f"{figures.decode_tokens_per_s:.0f} tok/s" if figures else f"{len(reply.text)} characters")


def run(out: Path, label: str) -> None:
    from PySide6.QtWidgets import QApplication

    from workbench.app import build_window, demo_engine_config
    from workbench.engine.demo_model import demo_model_dir
    from workbench.engine.process_guard import child_pids

    app = QApplication.instance() or QApplication(sys.argv[:1])
    built_before = (demo_model_dir() / "config.json").exists()
    print(f"[{label}] data folder {os.environ.get('WORKBENCH_DATA_DIR')}: demo model "
          f"{'already built' if built_before else 'not built yet'}", flush=True)
    window, engine = build_window(demo_engine_config())
    window.resize(1400, 860)
    window.show()
    seconds = wait_for(app, lambda: engine_ready(window, 1), START_TIMEOUT_S, "engine ready")
    print(f"[{label}] engine ready after {seconds:.1f} s: {window.windowTitle()}", flush=True)
    print(f"[{label}] reply 1: {ask(app, window, 'Hello! What is a KV cache?')}", flush=True)
    settle_until = time.monotonic() + 0.5  # a few heatmap frames: the reply's blocks, now cached
    wait_for(app, lambda: time.monotonic() > settle_until, 5.0, "the heatmap to catch up")
    window.grab().save(str(out / f"{label}-window.png"))
    restart = window.restart_engine()
    seconds = wait_for(app, lambda: engine_ready(window, restart), START_TIMEOUT_S, "engine ready after Restart engine")
    print(f"[{label}] Restart engine: ready again after {seconds:.1f} s", flush=True)
    print(f"[{label}] reply 2: {ask(app, window, 'And what is prefix caching?')}", flush=True)
    window.close()
    app.processEvents()
    seconds = wait_for(app, lambda: not child_pids(vllm_only=True), 60.0, "vLLM processes gone after quit")
    print(f"[{label}] quit: no vLLM process left ({seconds:.1f} s after closing)", flush=True)
    for log in sorted((Path(os.environ["WORKBENCH_DATA_DIR"]) / "logs").glob("engine-*.log")):
        shutil.copy(log, out / f"{label}-{log.name}")
    print(f"[{label}] OK", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the screenshot and engine logs")
    parser.add_argument("--label", default="run", help="names this run in the output")
    args = parser.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    if not os.environ.get("WORKBENCH_DATA_DIR"):
        return print("Set WORKBENCH_DATA_DIR to the data folder to use (empty for a first start).") or 2
    args.out.mkdir(parents=True, exist_ok=True)
    run(args.out, args.label)
    return 0


if __name__ == "__main__":  # the engine-core process is spawned: keep the entry point guarded
    sys.exit(main())
