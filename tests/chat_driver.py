"""Drives the window as a person would: types, clicks, waits; collects the snapshots the GUI sees."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPlainTextEdit, QPushButton

# Each wait is for what the engine, a server or the app reports (a state, a count, a commit): the test
# follows their pace, and these limits only catch a hang. On a busy 2-core machine, with other engines
# beside the suite, what takes a second alone can take twenty, and the first start (the demo model
# trained, then vLLM started) took more than three minutes.
HANG_TIMEOUT_MS = 120_000
REPLY_TIMEOUT_MS = 300_000
ENGINE_START_TIMEOUT_MS = 600_000


def type_and_send(window, qtbot, text: str):
    """Types into chatInput, clicks sendButton; returns the conversation and its streaming reply."""
    chat_input = window.findChild(QPlainTextEdit, "chatInput")
    chat_input.setPlainText(text)
    qtbot.mouseClick(window.findChild(QPushButton, "sendButton"), Qt.LeftButton)
    conversation = window.chat.current
    return conversation, conversation.messages[-1]


def reply_line(window, reply) -> str:
    """The line under a reply (its figures, or what it waits for), read from its view once the
    transcript has drawn the latest messages."""
    view = window.chat.transcripts[window.chat.current.conversation_id].view_of(reply.message_id)
    return view.stats.text()


def wait_finished(qtbot, turn, timeout=REPLY_TIMEOUT_MS):
    qtbot.waitUntil(lambda: turn.status not in ("waiting", "streaming"), timeout=timeout)


class SnapshotRecorder:
    """Keeps every distinct snapshot the host publishes while a condition is awaited."""

    def __init__(self, window):
        self.window = window
        self.snapshots = []

    def poll(self) -> None:
        snapshot = self.window.engine.host.latest_snapshot()
        if snapshot is not None and (not self.snapshots or snapshot.version != self.snapshots[-1].version):
            self.snapshots.append(snapshot)

    def wait_until(self, qtbot, condition, timeout=REPLY_TIMEOUT_MS) -> None:
        def check():
            self.poll()
            assert condition()
        qtbot.waitUntil(check, timeout=timeout)
