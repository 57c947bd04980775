"""What the status bar says after Restart engine, in the real window on the demo model: the bar's text read every
5 ms from the click until the new engine is ready, each change with its time since the click.

    python -m workbench.bench.gui.restart_status [--restarts 3]

Before a restart said so at once, the bar kept "Engine ready" while the engine in use stopped.
"""
from __future__ import annotations

import argparse
import sys
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--restarts", type=int, default=3)
    args = parser.parse_args(argv)
    from PySide6.QtCore import QTimer

    from workbench.bench.gui.screenshot import _started_window, close_window

    window, wait = _started_window((1280, 720))
    if window is None:
        return 1
    label, seen = window.status.message, []

    def read_bar() -> None:
        text = label.text().splitlines()[0] if label.text() else ""
        if not seen or seen[-1][1] != text:
            seen.append((time.monotonic(), text))

    timer = QTimer(interval=5)
    timer.timeout.connect(read_bar)
    timer.start()
    for number in range(1, args.restarts + 1):
        wait(lambda: False, 1.0)
        seen.clear()
        clicked = time.monotonic()
        start_id = window.restart_engine()
        wait(lambda: window.model.engine.settled(start_id), 600)
        wait(lambda: False, 0.3)
        changes = " | ".join(f"{(at - clicked) * 1000:,.0f} ms: {text}" for at, text in seen)
        print(f"restart {number}: {changes}", flush=True)
    timer.stop()
    close_window(window)
    return 0


if __name__ == "__main__":
    sys.exit(main())
