"""A real headless browser for the report tests: Chromium (from the Debian packages: ``.ci/run``
installs it once per machine). Outside CI a test without one skips; with ``CI`` set it fails."""
from __future__ import annotations

import html
import json
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


MEASURED = '<pre id="measured">'


def measured(page: Path, expression: str, size: tuple[int, int] = (1400, 2200)) -> object:
    """The JSON value of a JavaScript ``expression`` evaluated on ``page`` once the browser has laid it
    out at ``size`` and loaded its pictures (a copy of the page beside it, with a script added)."""
    probe = page.with_name(page.stem + "-measured.html")
    script = (f"<script>window.addEventListener('load', () => {{ const p = document.createElement('pre'); "
              f"p.id = 'measured'; p.textContent = JSON.stringify({expression}); document.body.append(p); }});</script>")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", script + "</body>"), encoding="utf-8")
    result = subprocess.run([browser(), *FLAGS, f"--window-size={size[0]},{size[1]}", "--dump-dom",
                             probe.resolve().as_uri()], capture_output=True, text=True, timeout=60)
    probe.unlink()
    assert result.returncode == 0 and MEASURED in result.stdout, result.stderr[-2000:]
    text = result.stdout.split(MEASURED, 1)[1].split("</pre>", 1)[0]
    return json.loads(html.unescape(text))
