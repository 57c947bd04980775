"""A small app in a process of its own that starts an engine, prints ``READY`` and the pids that must die
with it, and waits; the tests SIGKILL it and check that every one of those processes ends."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from workbench.engine.process_guard import is_running


def killed_app_leaves(source: str, folder: Path, model: str, env: dict | None = None, at_least: int = 1) -> list[int]:
    """Runs ``source`` with ``model`` until it prints READY and its pids, SIGKILLs it, and returns the pids
    still running 30 s later (the test asserts none)."""
    script = folder / "headless_app.py"
    script.write_text(source)
    app = subprocess.Popen([sys.executable, str(script), model], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        line = ""
        deadline = time.monotonic() + 240
        while not line.startswith("READY") and time.monotonic() < deadline:
            line = app.stdout.readline() or line
            if app.poll() is not None:
                break
        assert line.startswith("READY"), f"the headless app did not start its engine: {line!r}"
        pids = [int(p) for p in line.split()[1:]]
        assert len(pids) >= at_least and all(is_running(p) for p in pids), f"not running before the kill: {pids}"
        app.send_signal(signal.SIGKILL)
        app.wait(10)
        deadline = time.monotonic() + 30
        while any(is_running(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        return [p for p in pids if is_running(p)]
    finally:
        if app.poll() is None:
            app.kill()
