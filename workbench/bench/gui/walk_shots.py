"""Offscreen pictures of a first hour's path through the real window on the demo model, for the docs:

    python -m workbench.bench.gui.walk_shots docs

writes ``restart-stopping.png`` (Restart engine pressed: the status bar says the engine in use is stopping, never
"ready", while it stops), ``tune-session-replay.png`` (the Tune tab with a stored session's traffic as the
workload, the session named by its date, model and size), ``tune-applied-preset.png`` (the search's best applied
as a preset: the Presets tab's table, where vLLM's default written out is no change and an unset value shows no
"None", and the serve line copied, naming the demo's folder) and ``preset-replace-ask.png`` (the question asked
before a preset of the same name is replaced). A real search runs: two trials and two reruns of each for the
verdict, about two minutes on a 2-core CPU.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

QUESTIONS = ("What is a paged KV cache?", "Tell me about the sea.", "Count to ten.")


def restart_picture(window, wait, folder: Path) -> None:
    """The window 0.2 s after the engine in use began to stop for a restart."""
    from PySide6.QtCore import QTimer

    from workbench.bench.gui.screenshot import save_small

    taken = []

    def on_engine_changed(status) -> None:
        if status.message.startswith("Stopping") and not taken:
            taken.append(status.message)
            QTimer.singleShot(200, lambda: taken.append(save_small(window, str(folder / "restart-stopping.png"))))

    window.model.engine_changed.connect(on_engine_changed)
    start_id = window.restart_engine()
    wait(lambda: window.model.engine.settled(start_id), 600)
    window.model.engine_changed.disconnect(on_engine_changed)
    print("restart-stopping.png:", taken[0] if taken else "no stopping state seen", flush=True)


def ask_picture(pane, folder: Path) -> None:
    """The replace question, as Apply as preset asks it for a taken name (grabbed, then answered Cancel)."""
    from PySide6.QtWidgets import QMessageBox

    from workbench.bench.gui.screenshot import save_small
    from workbench.ui import preset_replace

    def grab_and_cancel(box: QMessageBox) -> int:
        box.show()
        box.adjustSize()
        save_small(box, str(folder / "preset-replace-ask.png"))
        box.close()
        return QMessageBox.Cancel

    original = QMessageBox.exec
    QMessageBox.exec = grab_and_cancel
    try:
        pane.confirm_replace = lambda names: preset_replace.ask_replace(pane, names)
        pane.apply_as_preset()
    finally:
        QMessageBox.exec = original
    print("preset-replace-ask.png:", pane.message.text(), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default="docs")
    args = parser.parse_args(argv)
    folder = Path(args.folder)
    from workbench.bench.gui.screenshot import _started_window, close_window, save_small
    from workbench.bench.gui.window_driver import settle, type_and_send

    window, wait = _started_window((1280, 720))
    if window is None:
        return 1
    chat = window.chat
    for question in QUESTIONS:
        type_and_send(chat, question)
        wait(lambda: window.model.num_in_flight() == 0, 120)
    restart_picture(window, wait, folder)
    pane = window.tune.show_tab()
    form = pane.form
    form.workload_kind.setCurrentIndex(form.workload_kind.findData("session"))
    wait(lambda: form.session.count() > 0, 60)
    form.max_trials.setValue(2)
    form.repeats.setValue(2)
    form.budget.setValue(10)
    form.name.setText(time.strftime("replay-%H%M%S"))
    settle(300)
    save_small(window, str(folder / "tune-session-replay.png"))
    pane.start()
    wait(lambda: pane.running or pane.buttons["start"].isEnabled(), 600)
    if not pane.running:
        print("the search did not start:", pane.message.text())
        close_window(window)
        return 1
    wait(lambda: not pane.running, 1800)
    name = f"{pane.spec.name}-best"
    pane.ask_name = lambda: name
    print("saved:", pane.apply_as_preset(), flush=True)
    pane.copy_serve_line()
    settle(500)
    save_small(window, str(folder / "tune-applied-preset.png"))
    ask_picture(pane, folder)
    model = window.model
    wait(lambda: model.engine.settled(model.latest_start_id), 600)
    close_window(window)
    return 0


if __name__ == "__main__":
    sys.exit(main())
