"""Driving the real window in a benchmark: the GUI's own event loop (``QEventLoop.exec``, never
``processEvents``) run until the engine host reports what is awaited, and a question typed into the
chat pane as a person would."""
from __future__ import annotations

import os
from typing import Callable

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QEventLoop, QObject, QTimer, Slot  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from workbench.engine.events import RequestFailed, RequestFinished  # noqa: E402
from workbench.engine.sampling import SamplingSettings  # noqa: E402


def application() -> QApplication:
    return QApplication.instance() or QApplication([])


class EndedRequests:
    """A ``run_until`` condition: true once ``expected`` requests have ended, finished or failed."""

    def __init__(self, expected: int):
        self.expected, self.finished = expected, 0
        self.failures: list[str] = []

    def __call__(self, event) -> bool:
        if isinstance(event, RequestFinished):
            self.finished += 1
        elif isinstance(event, RequestFailed):
            self.failures.append(event.message)
        return self.finished + len(self.failures) >= self.expected


class _Waiter(QObject):
    """Lives on the GUI thread; quits the event loop once the condition holds after a message."""

    def __init__(self, loop: QEventLoop, done: Callable[[object], bool]):
        super().__init__()
        self.loop, self.done, self.met = loop, done, False

    @Slot(object)
    def on_host_event_emitted(self, event) -> None:
        if not self.met and self.done(event):
            self.met = True
            self.loop.quit()


def run_until(host, done: Callable[[object], bool], timeout_ms: int, start: Callable[[], None] = lambda: None) -> bool:
    """Calls ``start``, then runs the GUI's event loop until ``done(message)`` holds for a message of
    the engine host (``done(None)`` is asked first), or ``timeout_ms`` has passed; True if it held.

    The window's own receivers were connected first, so when ``done`` sees a message the application
    model has applied it already. Connected before ``start``, so no message of what it starts is missed."""
    loop = QEventLoop()
    waiter = _Waiter(loop, done)
    host.event_emitted.connect(waiter.on_host_event_emitted)
    timer = QTimer(singleShot=True)
    timer.timeout.connect(loop.quit)
    timer.start(timeout_ms)
    try:
        start()
        waiter.met = done(None)
        if not waiter.met:
            loop.exec()
    finally:
        timer.stop()
        host.event_emitted.disconnect(waiter.on_host_event_emitted)
    return waiter.met


def set_chat_sampling(chat, sampling: SamplingSettings) -> None:
    """Sets the chat pane's sampling panel as a person would; ValueError where it cannot say the same."""
    panel = chat.sampling
    panel.form.set_settings(sampling)
    if panel.settings() != sampling:
        raise ValueError(f"the chat pane's sampling panel cannot be set to {sampling} (it says {panel.settings()})")


def type_and_send(chat, text: str) -> None:
    """Types ``text`` into a fresh conversation's input and presses Send (``type_question``)."""
    type_question(chat, text)
    chat.send()


def type_question(chat, text: str) -> None:
    """Types ``text`` into a fresh conversation's input, Send not yet pressed, with the sampling the
    panel showed before: a new conversation starts from the preset's sampling (temperature 0.7, top-p
    0.95), and a benchmark's chat must sample as its other requests do (a top-p request among greedy
    ones turns on vLLM's top-k/top-p kernel for the whole batch, compiled on first use)."""
    if chat.current.messages:
        settings = chat.sampling.settings()
        chat.new_conversation()
        set_chat_sampling(chat, settings)
    chat.input.setPlainText(text)


def settle(ms: int) -> None:
    """Runs the GUI's event loop for ``ms``: what the window posted (layout, paint) is done after it."""
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()
