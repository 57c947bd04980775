"""A real headless browser for the report tests: Chromium (from the Debian packages: ``.ci/run``
installs it once per machine). Outside CI a test without one skips; with ``CI`` set it fails."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# No network at all: a report that needed one would show missing pictures, and the DOM checks fail.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--host-resolver-rules=MAP * ~NOTFOUND",
         "--allow-file-access-from-files")


def browser() -> str:
    """The browser's path; skips the test where there is none, fails it in CI."""
    found = next((path for path in map(shutil.which, NAMES) if path), None)
    if found is None:
        message = ("no headless browser found (chromium): .ci/run installs it with apt-get install -y chromium; "
                   "install it the same way here")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def rendered_dom(page: Path, timeout_s: float = 60) -> str:
    """The page's DOM as the browser built it (after parsing and laying it out)."""
    result = subprocess.run([browser(), *FLAGS, "--dump-dom", page.resolve().as_uri()], capture_output=True,
                            text=True, timeout=timeout_s)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def screenshot(page: Path, target: Path, size: tuple[int, int] = (1400, 2200), timeout_s: float = 60) -> Path:
    result = subprocess.run([browser(), *FLAGS, f"--screenshot={target.resolve()}", f"--window-size={size[0]},{size[1]}",
                             page.resolve().as_uri()], capture_output=True, text=True, timeout=timeout_s)
    assert result.returncode == 0 and target.exists(), result.stderr[-2000:]
    return target
