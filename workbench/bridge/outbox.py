"""The requests posted on the GUI thread in one turn of its event loop, sent together.

Qt delivers a high-priority posted event before the layout and paint events that the same turn
posted (drawing the question just asked, a batch's rows), where a zero timer would come after them:
the requests leave for the engine, as one ``SubmitAll``, before the window draws anything of them.
"""
from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt

from workbench.engine.commands import Submit, SubmitAll

_SEND_OUTBOX = QEvent.Type(QEvent.registerEventType())


class Outbox(QObject):
    """Lives on the GUI thread (no parent: it never moves). ``send_now`` takes a ``Submit`` (one
    request) or a ``SubmitAll``."""

    def __init__(self, send_now: Callable[[object], None]):
        super().__init__()
        self._send_now = send_now
        self._submits: list[Submit] = []

    def add(self, submit: Submit) -> None:
        self._submits.append(submit)
        if len(self._submits) == 1:
            QCoreApplication.postEvent(self, QEvent(_SEND_OUTBOX), Qt.HighEventPriority.value)

    def send(self) -> None:
        """Sends what waits now (before any other command, so that order is kept)."""
        submits, self._submits = self._submits, []
        if len(submits) == 1:
            self._send_now(submits[0])
        elif submits:
            self._send_now(SubmitAll(tuple(s.request for s in submits)))

    def event(self, event) -> bool:
        if event.type() == _SEND_OUTBOX:
            self.send()
            return True
        return super().event(event)
