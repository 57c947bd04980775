"""With the real CPU engine, the app in a process of its own (tests/storage_app.py): a conversation
survives a clean quit field by field, and a reply survives SIGKILL up to what the window showed a
second before the kill, with no engine process left over."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from chat_images import image_file

from workbench.engine.process_guard import is_running
from workbench.storage.database import DB_NAME

APP = str(Path(__file__).with_name("storage_app.py"))
START_TIMEOUT_S = 240


class AppProcess:
    """The app's process; its stdout lines are read on a thread and kept with the time each arrived."""

    def __init__(self, mode: str, model: str, data_dir: Path):
        env = {**os.environ, "WORKBENCH_DATA_DIR": str(data_dir), "QT_QPA_PLATFORM": "offscreen"}
        self.process = subprocess.Popen([sys.executable, APP, mode, model], stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True, env=env)
        self.lines: list[tuple[float, str, str]] = []  # (arrival, tag, rest)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            tag, _, rest = line.rstrip("\n").partition(" ")
            self.lines.append((time.monotonic(), tag, rest))

    def wait_for(self, tag: str, timeout_s: float = START_TIMEOUT_S, condition=lambda rest: True) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = [rest for _, t, rest in self.lines if t == tag and condition(rest)]
            if found:
                return found[0]
            assert self.process.poll() is None or self._reader.is_alive(), f"the app ended before {tag}"
            time.sleep(0.05)
        raise AssertionError(f"no {tag} from the app in {timeout_s} s")

    def finish(self, timeout_s: float = 60) -> int:
        code = self.process.wait(timeout_s)
        self._reader.join(5)
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def restored(model: str, data_dir: Path, shown: list | None = None) -> list[dict]:
    """The conversations the app restores from ``data_dir``; ``shown`` gets what its chat's input shows."""
    app = AppProcess("show", model, data_dir)
    try:
        conversations = json.loads(app.wait_for("RESTORED", 60))
        if shown is not None:
            shown.append(json.loads(app.wait_for("INPUT", 60)))
        assert app.finish() == 0
        return conversations
    finally:
        app.kill()


def stored_draft(data_dir: Path) -> str:
    """The draft the database holds now ("" before the first is committed)."""
    try:
        with sqlite3.connect(f"file:{data_dir / DB_NAME}?mode=ro", uri=True) as connection:
            found = connection.execute("SELECT draft FROM conversations WHERE draft != ''").fetchone()
    except sqlite3.Error:  # not made yet, or made before the drafts' column
        return ""
    return found[0] if found else ""


@pytest.mark.slow
def test_a_draft_typed_and_not_sent_survives_sigkill_with_its_image(tmp_path, demo_model_path, monkeypatch):
    """Nothing typed is lost: a question typed and an image attached, never sent, come back in the chat's input
    after the app was killed, a second after the typing stopped."""
    data = tmp_path / "data"
    monkeypatch.setenv("DRAFT_TEXT", "A long question, typed\nand not sent yet")
    monkeypatch.setenv("DRAFT_IMAGE", str(image_file(tmp_path, "cat.png")))
    app = AppProcess("draft", demo_model_path, data)
    try:
        app.wait_for("TYPED", 120)
        deadline = time.monotonic() + 60
        while stored_draft(data) == "" and time.monotonic() < deadline:
            time.sleep(0.1)
        app.process.send_signal(signal.SIGKILL)
        app.process.wait(10)
    finally:
        app.kill()
    shown: list = []
    conversations = restored(demo_model_path, data, shown)
    assert [(c["draft"], c["draft_images"]) for c in conversations] == \
        [("A long question, typed\nand not sent yet", ["cat.png"])]
    assert shown == [{"text": "A long question, typed\nand not sent yet", "problem": "", "images": ["cat.png"]}]


@pytest.mark.slow
def test_a_conversation_survives_a_clean_quit_field_by_field(tmp_path, demo_model_path):
    app = AppProcess("answer", demo_model_path, tmp_path)
    try:
        answered = json.loads(app.wait_for("ANSWERED"))
        assert app.finish() == 0
    finally:
        app.kill()
    reply = answered[0]["messages"][-1]
    assert reply["status"] == "done" and reply["text"] and reply["figures"]["output_tokens"] > 0
    assert reply["sampling"]["max_tokens"] == 24 and reply["system_prompt"]
    assert restored(demo_model_path, tmp_path) == answered  # ids, text, settings, figures: every field


@pytest.mark.slow
def test_a_streaming_reply_survives_sigkill_as_far_as_the_window_showed(tmp_path, demo_model_path):
    app = AppProcess("stream", demo_model_path, tmp_path)
    try:
        engine_pids = [int(p) for p in app.wait_for("PIDS").split()]
        app.wait_for("SHOWN", 60, condition=lambda rest: json.loads(rest)["text"] not in ("", "…"))
        first_shown = next(t for t, tag, rest in app.lines if tag == "SHOWN" and json.loads(rest)["text"] != "…")
        while time.monotonic() < first_shown + 1.5:
            time.sleep(0.05)
        killed_at = time.monotonic()
        app.process.send_signal(signal.SIGKILL)
        app.process.wait(10)
    finally:
        app.kill()
    shown = [json.loads(rest) for t, tag, rest in app.lines if tag == "SHOWN" and t <= killed_at - 1.0]
    assert shown and shown[-1]["text"] not in ("", "…"), "the window showed no text a second before the kill"
    deadline = time.monotonic() + 30
    while any(is_running(pid) for pid in engine_pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(is_running(pid) for pid in engine_pids), "engine processes outlived the killed app"
    messages = {m["message_id"]: m for c in restored(demo_model_path, tmp_path) for m in c["messages"]}
    reply = messages[shown[-1]["message_id"]]
    assert reply["text"].startswith(shown[-1]["text"]), (len(reply["text"]), len(shown[-1]["text"]))
    assert reply["status"] == "stopped"
