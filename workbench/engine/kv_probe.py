"""The local engine's block pool, read between steps inside vLLM's engine-core process.

The plugin's ``workbench_kv_delta`` answers with what changed since the version the client holds;
the probe sends the call without waiting (see ``vllm_plugin.utility_call``), applies the delta to
its mirror when it arrives, and hands out immutable snapshots, with the session's image spans of the
requests whose tables they hold.
"""
from __future__ import annotations

import time

from workbench.engine.vllm_plugin.utility_call import request_utility
from workbench.engine.kv_snapshot import KVPoolMirror, KVSnapshot, scan_matches


class LocalKVProbe:
    """Implements ``backend.KVProbe`` for an :class:`~workbench.engine.session.EngineSession`."""

    def __init__(self, session):
        self.session = session
        self.mirror = KVPoolMirror()
        self._in_flight = None  # (future, sent at, checked against a scan)

    def request_snapshot(self, check_with_scan: bool = False) -> None:
        if self._in_flight is None:
            future = request_utility(self.session.engine, "workbench_kv_delta", self.mirror.version, check_with_scan)
            future.add_done_callback(_note_arrival)
            self._in_flight = (future, time.perf_counter(), check_with_scan)

    def poll_snapshot(self) -> KVSnapshot | None:
        if self._in_flight is None or not self._in_flight[0].done():
            return None
        future, started, checked = self._in_flight
        self._in_flight = None
        delta = future.result()
        received = time.perf_counter()
        self.mirror.apply(delta)
        id_map, live = self.session.id_map, self.session.live
        for internal in delta["removed"]:  # a finished request's table is gone: its id is needed no more
            if id_map.get(internal) not in live:  # (a preempted one comes back)
                id_map.pop(internal, None)
        problems = tuple(scan_matches(self.mirror, delta["scan"])) if checked else None
        return self.mirror.snapshot(id_map, (received - started) * 1e3, scan_problems=problems,
                                    client_since=received, transport_ms=_transport_ms(future, delta),
                                    image_spans=self.session.image_spans)

    def reset(self) -> None:
        """Forgets the pool: the next snapshot is a full resync."""
        self._in_flight = None
        self.mirror.reset()


def _note_arrival(future) -> None:
    """Runs on the thread that set the result: vLLM's client thread that decodes the engine's output."""
    future.arrived_ns = time.perf_counter_ns()


def _transport_ms(future, delta: dict) -> float:
    """From the engine core's answer being ready to its arrival in the client: serialising, ZMQ and
    decoding (both processes read CLOCK_MONOTONIC through ``perf_counter``)."""
    arrived, done = getattr(future, "arrived_ns", None), delta.get("engine_done_ns")
    return max(0.0, (arrived - done) / 1e6) if arrived is not None and done is not None else 0.0
