"""Requests held by the engine loop until they are due: a workload's arrival times (open loop), or a
number kept in flight (closed loop). No Qt, no vLLM: the loop asks it what to submit between steps."""
from __future__ import annotations

import bisect

from workbench.engine.backend import ChatRequest


class RequestSchedule:
    """One ``SubmitScheduled`` command's requests, in the order they are due. Offsets count from
    ``now`` (the loop's monotonic clock when it took the command)."""

    def __init__(self, requests: tuple[ChatRequest, ...], offsets_s: tuple[float, ...],
                 concurrency: int | None, now: float):
        self.concurrency = concurrency
        if concurrency:
            offsets_s = (0.0,) * len(requests)
        elif len(offsets_s) != len(requests):
            raise ValueError(f"{len(requests)} requests but {len(offsets_s)} arrival offsets")
        order = sorted(range(len(requests)), key=lambda i: offsets_s[i])
        self._requests = [requests[i] for i in order]
        self._due = [now + offsets_s[i] for i in order]
        self._next = 0
        self._in_flight: set[str] = set()

    def __bool__(self) -> bool:
        return self._next < len(self._requests)

    def due(self, now: float) -> list[ChatRequest]:
        """The requests to submit now (taken off the schedule)."""
        if self.concurrency:
            count = max(0, self.concurrency - len(self._in_flight))
            end = min(len(self._requests), self._next + count)
        else:
            end = bisect.bisect_right(self._due, now, lo=self._next)
        taken = self._requests[self._next:end]
        self._next = end
        if self.concurrency:
            self._in_flight.update(r.request_id for r in taken)
        return taken

    def wait_s(self, now: float) -> float | None:
        """Seconds until the next request is due (None: none is due by the clock: closed loop, or done)."""
        if not self or self.concurrency:
            return None
        return max(0.0, self._due[self._next] - now)

    def ended(self, request_id: str) -> None:
        """One of this schedule's requests left the engine (closed loop: room for the next)."""
        self._in_flight.discard(request_id)

    def take(self, request_id: str) -> bool:
        """Takes back a request not yet due (an abort); True if it was held here."""
        for index in range(self._next, len(self._requests)):
            if self._requests[index].request_id == request_id:
                del self._requests[index], self._due[index]
                return True
        return False

    def pending_ids(self) -> list[str]:
        return [r.request_id for r in self._requests[self._next:]]
