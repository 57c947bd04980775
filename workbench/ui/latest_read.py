"""One read at a time off the GUI thread, the latest ask winning: a window that reads a file on a worker
(a list, a comparison) while the user may ask again meanwhile. An ask while a read runs waits for it;
of the asks that wait, only the last runs, and the read it follows is not shown (a newer one comes)."""
from __future__ import annotations

from typing import Callable

import shiboken6
from PySide6.QtWidgets import QWidget
from superqt.utils import WorkerBase, create_worker


class LatestRead:
    """``shown(value)`` or ``failed(error)``, then ``ended()``, on the GUI thread for each read that no ask
    came after; none once ``owner`` is deleted (a window closed while a read ran)."""

    def __init__(self, owner: QWidget, shown: Callable, failed: Callable[[Exception], None],
                 ended: Callable[[], None]):
        self.owner, self.shown, self.failed, self.ended = owner, shown, failed, ended
        self.worker: WorkerBase | None = None
        self._waiting: tuple | None = None  # (function, args) asked while the worker ran

    def ask(self, function: Callable, *args) -> None:
        if self.worker is not None:
            self._waiting = (function, args)
            return
        self.worker = create_worker(function, *args, _start_thread=False,
                                    _connect={"returned": lambda value: self._came(self.shown, value),
                                              "errored": lambda error: self._came(self.failed, error)})
        self.worker.start()

    def _came(self, handle: Callable, value) -> None:
        if not shiboken6.isValid(self.owner):
            return
        self.worker = None
        waiting, self._waiting = self._waiting, None
        if waiting is not None:
            self.ask(waiting[0], *waiting[1])
            return
        handle(value)
        self.ended()
