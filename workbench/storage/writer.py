"""The storage thread: takes records from a queue and writes them, committing about twice a second.

Records wait at most ``COMMIT_INTERVAL_S`` from the first one since the last commit, then are
written and committed in one transaction, so a burst of streamed text costs one commit, not one per
flush; what streamed more than a second before a crash is on disk. Nothing is written the moment a
question is asked (the first record after a quiet spell): the thread would take the window's
process, and its GIL, from sending that request to the engine. A failed write (a full disk, a file
gone read-only) is rolled back, reported once through ``on_problem`` (called on this thread), and
every record since the last commit is kept and written again a few seconds later: nothing is
dropped while the trouble lasts.
"""
from __future__ import annotations

import logging
import queue
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import Callable

from workbench.storage.database import StorageProblem, error_problem
from workbench.storage.records import Flush
from workbench.storage.statements import write_record

COMMIT_INTERVAL_S = 0.5  # what the window showed 1 s before a crash is committed
RETRY_INTERVAL_S = 3.0
log = logging.getLogger("workbench.storage")


@dataclass(frozen=True)
class CommitMark:
    """A commit asked of the writer: everything put before it is on disk once ``wait`` returns True."""

    done: threading.Event
    writer: StorageWriter

    @property
    def is_done(self) -> bool:
        return self.done.is_set()

    def wait(self, timeout_s: float) -> bool:
        """True once that commit is done; False when it failed (the writer's ``problem`` says why) or did
        not come within ``timeout_s``."""
        return self.done.wait(timeout_s) and self.writer.problem is None


class StorageWriter:
    """Owns the connection once started; ``put`` is the only call from other threads."""

    def __init__(self, connection: sqlite3.Connection, path: str,
                 on_problem: Callable[[StorageProblem | None], None] = lambda problem: None):
        self.connection, self.path, self.on_problem = connection, path, on_problem
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._unsaved: list = []  # records since the last commit, written again after a failure
        self._first_unsaved = 0.0  # when the oldest of them came
        self._in_transaction = False
        self._last_commit = time.monotonic()
        self._failing_since: float | None = None
        self.problem: StorageProblem | None = None
        self.num_commits = self.num_records = 0
        self.cpu_s = 0.0  # the thread's own CPU time, known once it has ended (benchmarks report it)
        self._thread = threading.Thread(target=self._run, name="storage-writer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def put(self, record) -> None:
        self._queue.put(record)

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Waits until everything put so far is committed (or has failed); True when committed."""
        return self.mark_commit().wait(timeout_s)

    def mark_commit(self) -> CommitMark:
        """Asks for a commit of everything put so far, without waiting for it (cheap enough for the GUI
        thread); the mark's ``wait`` waits for that commit on whichever thread calls it."""
        done = threading.Event()
        self.put(Flush(done))
        return CommitMark(done, self)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Commits what is queued and ends the thread; the connection is closed."""
        if self._thread.is_alive():
            self.put(None)
            self._thread.join(timeout_s)

    def _run(self) -> None:
        while True:
            try:
                record = self._queue.get(timeout=self._wait_s())
            except queue.Empty:
                record = ...
            if record is None:
                break
            if isinstance(record, Flush):
                self._commit()
                record.done.set()
            elif record is not ...:
                self.num_records += 1
                self._keep(record)
            if self._unsaved and time.monotonic() >= self._commit_due():
                self._commit()
        self._commit()
        self.connection.close()
        self.cpu_s = time.thread_time()

    def _interval_s(self) -> float:
        return RETRY_INTERVAL_S if self._failing_since is not None else COMMIT_INTERVAL_S

    def _commit_due(self) -> float:
        """A record waits at most the interval; after a failure, the retry waits it from the last try."""
        since = self._last_commit if self._failing_since is not None else self._first_unsaved
        return since + self._interval_s()

    def _wait_s(self) -> float | None:
        if not self._unsaved:
            return None  # nothing to commit: sleep until a record comes
        return max(0.0, self._commit_due() - time.monotonic())

    def _keep(self, record) -> None:
        if not self._unsaved:
            self._first_unsaved = time.monotonic()
        self._unsaved.append(record)

    def _write(self, records) -> bool:
        try:
            if not self._in_transaction:
                self.connection.execute("BEGIN")
                self._in_transaction = True
            for record in list(records):
                self._write_one(record)
            return True
        except sqlite3.Error as error:
            self._failed(error)
            return False

    def _write_one(self, record) -> None:
        try:
            write_record(record, self.connection)
        except sqlite3.IntegrityError:
            log.exception("storage dropped %s, which contradicts what is stored", type(record).__name__)
            self._unsaved.remove(record)
        except sqlite3.Error:
            raise
        except Exception:  # a record the statements cannot take is a bug: logged and dropped, never retried
            log.exception("storage could not write %s", type(record).__name__)
            self._unsaved.remove(record)

    def _commit(self) -> None:
        self._last_commit = time.monotonic()
        if not self._unsaved or not self._write(self._unsaved):
            return
        try:
            self.connection.execute("COMMIT")
        except sqlite3.Error as error:
            self._failed(error)
            return
        self._in_transaction = False
        self._unsaved.clear()
        self.num_commits += 1
        if self._failing_since is not None:
            self._failing_since = None
            self._report(None)

    def _failed(self, error: sqlite3.Error) -> None:
        if self._in_transaction:
            try:
                self.connection.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # SQLite may have rolled back itself
            self._in_transaction = False
        if self._failing_since is None:
            self._failing_since = time.monotonic()
            log.warning("saving to %s failed: %s", self.path, error)
            self._report(error_problem(self.path, error))

    def _report(self, problem: StorageProblem | None) -> None:
        self.problem = problem
        try:
            self.on_problem(problem)
        except Exception:  # a listener's fault must not stop the writing
            log.exception("storage problem listener failed")
