"""The engine-client process: vLLM's client loop (``LLMEngine``, detokenizing, the stat logger, the KV
mirror) in a process of its own, so that it never waits for the window's threads to give up the GIL.

Started by the window's process (``workbench.bridge.client_bridge``) as
``python -m workbench.engine.client_process FD FACTORY [--check-with-scan]``: FD is its end of a
socket pair, FACTORY the ``module:function`` that makes a backend for a start command (the caller's
choice; this module imports no bridge). It runs one :class:`~workbench.engine.loop.EngineLoop` on its
main thread; commands arrive on the pipe (a reader thread posts them to the loop), and what the loop
publishes leaves in batches (``client_wire.Batch``) sent by a sender thread at most every 25 ms.

Lifetimes: the process dies with the window's process (``PDEATHSIG``, set first thing; if the
window's process is already gone it exits), its engine-core processes die with it (vLLM's own
processes get ``PDEATHSIG`` from the plugin), and it keeps the window process's owner tag, so that
:func:`~workbench.engine.process_guard.reap_orphans` at the next start removes any leftover of either.
A closed pipe (the window's process gone) is a Shutdown. No Qt.

Once an engine is ready, what this process holds (vLLM's modules, the engine's client, the tokenizer) is left out
of Python's later cycle collections, as ``vllm serve`` leaves its own once it has started (vLLM's
``freeze_gc_heap``): a full collection went over them all between steps. They are let back in as the engine stops,
and what was garbage among them is collected then.
"""
from __future__ import annotations

import gc
import importlib
import os
import sys
import threading
import time
import traceback
from functools import singledispatchmethod
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler

from workbench.engine.client_wire import (
    BATCH_INTERVAL_S, Batch, CallInClient, Reply, SnapshotEncoder, StatsEncoder,
)
from workbench.engine.commands import Shutdown
from workbench.engine.events import EngineReady
from workbench.engine.kv_snapshot import KVSnapshot
from workbench.engine.loop import EngineLoop
from workbench.engine.process_guard import CLIENT_PARENT_ENV, mark_owner
from workbench.engine.stats import StatsSeries
from workbench.engine.vllm_plugin.process_life import die_with_parent


class BatchingListener:
    """The loop's listener: keeps messages in order and the latest snapshot and series; a sender thread
    sends them as one :class:`Batch` at most every ``interval_s`` (at once when it has waited that long)."""

    def __init__(self, conn: Connection, interval_s: float = BATCH_INTERVAL_S):
        self.conn, self.interval_s = conn, interval_s
        self._lock = threading.Condition()
        self._messages: list = []
        self._snapshot: KVSnapshot | None = None
        self._snapshot_reset = False
        self._stats: StatsSeries | None = None
        self._closed = False
        self._now = False  # send without waiting out the interval (the engine has gone idle)
        self._snapshots = SnapshotEncoder()
        self._series = StatsEncoder()
        self._thread = threading.Thread(target=self._send_loop, name="client-sender", daemon=True)
        self._thread.start()

    # -------------------------------------------------------------- on the loop's thread
    def publish(self, message) -> None:
        with self._lock:
            if isinstance(message, EngineReady):  # a new engine: the last one's pool and series are gone
                self._snapshot, self._snapshot_reset = None, True
                self._stats = None
                self._series.restart()
            self._messages.append(message)
            self._lock.notify()

    def snapshot_published(self, snapshot: KVSnapshot) -> None:
        with self._lock:
            self._snapshot = snapshot
            self._lock.notify()

    def stats_published(self, series: StatsSeries) -> None:
        with self._lock:
            self._stats = series
            self._lock.notify()

    def send_now(self) -> None:
        """The last open request has ended, or requests were taken: what waits goes at once, not at
        the next interval."""
        with self._lock:
            self._now = True
            self._lock.notify()

    def close(self) -> None:
        """Sends what is left and stops the sender."""
        with self._lock:
            self._closed = True
            self._lock.notify()
        self._thread.join(10)

    # -------------------------------------------------------------- the sender thread
    def _has_news(self) -> bool:
        return bool(self._messages) or self._snapshot is not None or self._stats is not None or self._snapshot_reset

    def _send_loop(self) -> None:
        last_sent = 0.0
        while True:
            with self._lock:
                while not self._has_news() and not self._closed:
                    self._lock.wait()
                due = last_sent + self.interval_s
                while not self._closed and not self._now and (wait_s := due - time.monotonic()) > 0:
                    self._lock.wait(wait_s)  # more may come in the meantime: one batch for all of it
                batch, closed, self._now = self._take(), self._closed, False
            last_sent = time.monotonic()
            if batch is not None and not self._send(batch):
                return
            if closed:
                return

    def _take(self) -> Batch | None:
        if not self._has_news():
            return None
        snapshot = self._snapshots.encode(self._snapshot) if self._snapshot is not None else None
        stats = self._series.encode(self._stats) if self._stats is not None else None
        batch = Batch(tuple(self._messages), snapshot, self._snapshot_reset, stats)
        self._messages, self._snapshot, self._snapshot_reset, self._stats = [], None, False, None
        return batch

    def _send(self, message) -> bool:
        try:
            self.conn.send(message)
            return True
        except (OSError, EOFError, ValueError):  # the window's process is gone: nothing to tell
            return False
        except Exception:  # a message that does not pickle: said on the console, the others still sent
            traceback.print_exc()
            if isinstance(message, Batch):
                return self._send(Batch(tuple(m for m in message.messages if _pickles(m)), message.snapshot,
                                        message.snapshot_reset, message.stats))
            return True


def _pickles(message) -> bool:
    try:
        ForkingPickler.dumps(message)
        return True
    except Exception:
        print(f"engine client: a {type(message).__name__} could not be sent to the window", file=sys.stderr)
        return False


class ClientLoop(EngineLoop):
    """The engine loop of the client process: the app's loop, plus the benchmarks' calls
    (:class:`CallInClient`), run on the loop's thread between steps."""

    def __init__(self, listener: BatchingListener, **kwargs):
        super().__init__(listener, **kwargs)
        self.on_exit: list = []  # what a benchmark call left to clean up (its own engine)

    @singledispatchmethod
    def _dispatch(self, command) -> None:
        super()._dispatch(command)  # the app's commands

    def _start_engine(self, config, start_id: int) -> None:
        super()._start_engine(config, start_id)
        if self.backend is not None:  # ready: what starting made stays as long as the engine
            gc.collect(1)  # the young garbage only: a full collection here (327 ms) would hold a first question
            gc.freeze()

    def _stop_engine(self) -> None:
        gc.unfreeze()  # the engine's objects are collected once it stops (vLLM's engine core undoes its own too)
        super()._stop_engine()

    @_dispatch.register
    def _(self, command: CallInClient) -> None:
        self.listener.publish(self._call(command))

    def _call(self, command: CallInClient) -> Reply:
        try:
            return Reply(command.call_id, command.function(self, *command.args))
        except Exception as exc:
            traceback.print_exc()
            return Reply(command.call_id, None, f"{type(exc).__name__}: {exc}")


def _read_commands(conn: Connection, loop: EngineLoop) -> None:
    """The reader thread: every command to the loop's queue; a closed pipe shuts the client down."""
    while True:
        try:
            command = conn.recv()
        except (EOFError, OSError):
            loop.post(Shutdown())
            return
        except Exception:  # a command that could not be unpickled here: say so, keep going
            traceback.print_exc()
            continue
        loop.post(command)
        if isinstance(command, Shutdown):
            return


def load_factory(spec: str):
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def run_client(fd: int, factory: str, check_with_scan: bool) -> None:
    conn = Connection(fd)
    listener = BatchingListener(conn)
    loop = ClientLoop(listener, backend_factory=load_factory(factory), check_with_scan=check_with_scan)
    threading.Thread(target=_read_commands, args=(conn, loop), name="client-reader", daemon=True).start()
    try:
        loop.run()
    finally:
        for cleanup in reversed(loop.on_exit):
            try:
                cleanup()
            except Exception:
                traceback.print_exc()
        listener.close()
        conn.close()


def main(argv: list[str]) -> int:
    die_with_parent()
    expected_parent = int(os.environ.get(CLIENT_PARENT_ENV, "0"))
    if expected_parent and os.getppid() != expected_parent:
        return 1  # the window's process died before this one could ask to die with it
    mark_owner()
    run_client(int(argv[0]), argv[1], "--check-with-scan" in argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
