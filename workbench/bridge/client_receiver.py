"""The receiver thread's loop: each engine-client process's batches read from its pipe and decoded.

For each client handed to it (``clients``, a queue; None ends the loop), the receiver reads batches
until the pipe closes, rebuilds the KV snapshot and the statistics series from what changed
(``engine.client_wire``'s decoders, one pair a client), and hands each decoded batch to the host's
``decoded(client, batch, snapshot, stats)``; at the pipe's end, ``ended(client)``.
"""
from __future__ import annotations

import collections
import queue
import time
import traceback
from multiprocessing.reduction import ForkingPickler
from typing import Callable

from workbench.bridge.client_start import ClientProcess
from workbench.engine.client_wire import Batch, SnapshotDecoder, StatsDecoder


class ClientReceiver:
    def __init__(self, decoded: Callable, ended: Callable[[ClientProcess], None]):
        self._decoded, self._ended = decoded, ended
        self.clients: queue.Queue = queue.Queue()  # clients to read, in turn; None: stop
        # Per batch that brought a KV snapshot: (bytes, ms to unpickle and rebuild it) on the receiver thread.
        self.snapshot_receipts: collections.deque = collections.deque(maxlen=100_000)

    def run(self) -> None:
        while (client := self.clients.get()) is not None:
            self._read(client)
            client.conn.close()
            self._ended(client)

    def stop(self) -> None:
        self.clients.put(None)

    def _read(self, client: ClientProcess) -> None:
        snapshots, series = SnapshotDecoder(), StatsDecoder()
        while True:
            try:
                data = client.conn.recv_bytes()
            except (EOFError, OSError):
                return
            received = time.perf_counter()
            try:
                message = ForkingPickler.loads(data)
            except Exception:  # a message this process cannot read: said on the console, the rest go on
                traceback.print_exc()
                continue
            if not isinstance(message, Batch):
                continue
            snapshot = snapshots.decode(message.snapshot) if message.snapshot is not None else None
            if snapshot is not None:
                self.snapshot_receipts.append((len(data), (time.perf_counter() - received) * 1e3))
            stats = series.decode(message.stats) if message.stats is not None else None
            self._decoded(client, message, snapshot, stats)
