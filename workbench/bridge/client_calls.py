"""Benchmarks only: a function run in the engine-client process between steps, and its reply.

``post_call`` sends a ``CallInClient``; the receiver hands each ``Reply`` to :meth:`ClientCalls.replied`;
``wait_reply`` waits for it, or for the client's end (:meth:`ClientCalls.client_ended`).
"""
from __future__ import annotations

import itertools
import threading
from typing import Callable

from workbench.engine.client_wire import CallInClient, Reply


class ClientCalls:
    def __init__(self, post: Callable[[object], None], client_gone: Callable[[], bool]):
        self._post, self._client_gone = post, client_gone
        self._replies: dict[int, Reply] = {}
        self._replied = threading.Condition()
        self._call_ids = itertools.count(1)

    def call(self, function, *args, timeout_s: float = 600.0):
        """Runs ``function(loop, *args)`` in the client between steps; its result."""
        return self.wait_reply(self.post_call(function, *args), timeout_s)

    def post_call(self, function, *args) -> int:
        call_id = next(self._call_ids)
        self._post(CallInClient(call_id, function, args))
        return call_id

    def wait_reply(self, call_id: int, timeout_s: float = 600.0):
        with self._replied:
            if not self._replied.wait_for(lambda: call_id in self._replies or self._client_gone(), timeout_s):
                raise TimeoutError(f"the engine client did not answer call {call_id} in {timeout_s:.0f} s")
            reply = self._replies.pop(call_id, None)
        if reply is None:
            raise RuntimeError("the engine client process ended before it answered")
        if reply.error is not None:
            raise RuntimeError(f"in the engine client: {reply.error}")
        return reply.value

    def replied(self, reply: Reply) -> None:
        with self._replied:
            self._replies[reply.call_id] = reply
            self._replied.notify_all()

    def client_ended(self) -> None:
        with self._replied:
            self._replied.notify_all()
