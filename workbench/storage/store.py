"""The app's storage as one object: the opened database, the model's recorder and the writer thread.

``Storage.open`` never raises for a database in trouble: ``problem`` says what is wrong, and the app
runs on with what could be read (nothing is written unless the database opened writable).
"""
from __future__ import annotations

import logging
import os
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Callable

from workbench.engine.image_store import images_dir
from workbench.model.app_model import AppModel
from workbench.storage.database import (
    CORRUPTED, DB_NAME, LOCKED, InstanceLock, OpenedDatabase, StorageProblem, move_aside, open_database, problem_for,
)
from workbench.storage.recorder import ModelRecorder
from workbench.storage.records import SessionEnded, SessionStarted
from workbench.storage.restore import (close_interrupted_engine_runs, highest_chat_number, load_batch_runs,
                                       load_conversations, sweep_images)
from workbench.storage.series import SeriesRecorder
from workbench.telemetry.memory_service import MEMORY_COLUMNS
from workbench.storage.writer import CommitMark, StorageWriter


log = logging.getLogger(__name__)
RUNNING, STOPPING = "running", "stopping"  # what the instance holding the lock says it is doing


def default_database_path() -> Path:
    from workbench.paths import data_dir

    return data_dir() / DB_NAME


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def _say(path: Path, state: str) -> None:
    """Writes what the instance holding the lock is doing into the lock file (beside the lock itself,
    which the system holds on another handle)."""
    try:
        _lock_path(path).write_text(f"{state} {os.getpid()}\n", encoding="utf-8")
    except OSError:  # a lock file that cannot be written: a second instance sees it as running
        pass


def held_by_a_stopping_instance(path: Path) -> bool:
    """True while another instance holds the database and says it is stopping (its window gone, its
    engine and storage stopping behind it): a new instance waits for it rather than refusing."""
    try:
        said = _lock_path(path).read_text(encoding="utf-8")
    except OSError:
        return False
    return said.startswith(STOPPING) and not lock_is_free(path)


def lock_is_free(path: Path) -> bool:
    """True when no instance holds the database (asked by taking the lock and letting it go)."""
    lock = InstanceLock.acquire(path)
    if lock is None:
        return False
    lock.release()
    return True


class Storage:
    def __init__(self, opened: OpenedDatabase, mode: str = "rwc"):
        self.opened, self.mode = opened, mode
        self.writer: StorageWriter | None = None
        self.recorder: ModelRecorder | None = None
        self.series: SeriesRecorder | None = None
        self.memory_series: SeriesRecorder | None = None  # the memory panel's series, the same way
        self.session_id: str | None = None  # this run of the app, once recording
        self.facts: dict | None = None  # its versions and GPUs, once recording
        self.on_problem: Callable[[StorageProblem | None], None] = lambda problem: None
        self._problem = opened.problem

    @classmethod
    def open(cls, path: Path | None = None, mode: str = "rwc") -> Storage:
        """``mode``: SQLite's URI mode; "ro" opens the file read-only whoever runs the app."""
        opened = open_database(path or default_database_path(), mode)
        if opened.lock is not None:
            _say(opened.path, RUNNING)
        return cls(opened, mode)

    @property
    def path(self) -> Path:
        return self.opened.path

    @property
    def problem(self) -> StorageProblem | None:
        """What is wrong now: from opening, or from the latest failed write (None once writes succeed again)."""
        return self._problem

    @property
    def locked(self) -> bool:
        """Another running instance holds the database: this one starts no engine."""
        return self._problem is not None and self._problem.kind == LOCKED

    @property
    def saving(self) -> bool:
        return self.writer is not None

    def restore_into(self, model: AppModel) -> None:
        """Puts the stored conversations and batch runs into ``model`` (before any pane observes it)."""
        connection = self.opened.connection
        if connection is None:
            return
        try:
            model.restore(load_conversations(connection), load_batch_runs(connection, model.requests),
                          highest_chat_number(connection))
            if self.opened.writable:
                close_interrupted_engine_runs(connection)
                self._sweep_images(connection, model.images_dir or images_dir())
        except (sqlite3.Error, ValueError, KeyError, TypeError) as error:  # readable header, unreadable rows
            self._stop_using(problem_for(CORRUPTED, self.path, str(error)))

    def _sweep_images(self, connection: sqlite3.Connection, folder: Path) -> None:
        """The image copies no stored message holds, removed: only where the folder is this database's own
        (beside it in one data folder), so a database elsewhere never judges another's images."""
        if folder.parent.resolve() != Path(self.path).parent.resolve():
            return
        try:
            sweep_images(connection, folder)
        except OSError as error:  # a copy that cannot go now goes at a later start
            log.warning("the data folder's unheld images were not all removed: %s", error)

    def start(self, model: AppModel, facts: dict | None = None) -> None:
        """Starts the writer thread and records the model's changes from now on (writable databases only),
        as a new session; ``facts``: its versions and GPUs (default: read from this machine)."""
        if not self.opened.writable or self.writer is not None:
            return
        if facts is None:
            from workbench.telemetry.machine_facts import session_facts

            facts = session_facts()
        self.facts = facts  # Help > About shows them
        self.writer = StorageWriter(self.opened.connection, str(self.path), self._on_writer_problem)
        self.session_id = uuid.uuid4().hex
        self.writer.put(SessionStarted(self.session_id, time.time(), facts))
        self.recorder = ModelRecorder(model, self.writer.put, self.session_id)
        self.series = SeriesRecorder(self.writer.put)
        self.memory_series = SeriesRecorder(self.writer.put, columns=MEMORY_COLUMNS)
        self.writer.start()

    def record_stats(self, stats) -> None:
        """Keeps the points of the plots' series (a published ``StatsSeries``) not kept yet, for the
        engine run its start opened (the run open now, or the one before: an engine's last figures come
        as it stops; the next engine's run may be open by then)."""
        if self.series is not None and self.recorder is not None:
            self.series.record(self.recorder.run_key_of(stats.start_id), stats)

    def record_memory(self, state) -> None:
        """Keeps the points of the memory panel's series (a published ``MemoryState``) not kept yet, for
        the engine run open now (none between runs)."""
        if self.memory_series is not None and self.recorder is not None:
            self.memory_series.record(self.recorder.run_key, state)

    def _on_writer_problem(self, problem: StorageProblem | None) -> None:
        self._problem = problem
        self.on_problem(problem)

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Waits until what the model did so far is on disk; True when it is."""
        mark = self.mark_commit()
        return mark is not None and mark.wait(timeout_s)

    def mark_commit(self) -> CommitMark | None:
        """Hands the writer what the model and the series did so far (the points kept for the next chunk
        too) with a commit asked after them, without waiting: for the GUI thread, which then waits on
        another (an export reads only once the mark's ``wait`` says all of it is on disk). None when
        nothing is saved."""
        for series in (self.series, self.memory_series):
            if series is not None:
                series.flush()
        return self.writer.mark_commit() if self.writer is not None else None

    def move_aside_and_start_new(self, model: AppModel) -> Path | None:
        """For a damaged database: keeps it under a new name and starts a new one, which from now on
        records ``model`` (what the window holds now is saved as it changes). Returns the kept file's name."""
        if self._problem is None or self._problem.kind != CORRUPTED:
            return None
        self.close()
        aside = move_aside(self.path)
        self.opened = open_database(self.path, self.mode)
        self._problem = self.opened.problem
        self.start(model)
        if self.recorder is not None:
            self.recorder.record_all_conversations()
        return aside

    def _stop_using(self, problem: StorageProblem) -> None:
        self._problem = problem
        if self.opened.connection is not None:
            self.opened.connection.close()
            self.opened.connection = None
        self.opened.writable = False

    def mark_stopping(self) -> None:
        """Tells a new instance that this one is stopping (``held_by_a_stopping_instance``): it waits for
        the lock rather than refusing."""
        if self.opened.lock is not None:
            _say(self.path, STOPPING)

    def close(self) -> None:
        """Commits what is queued, stops the thread, closes the database and lets the lock go."""
        for series in (self.series, self.memory_series):
            if series is not None:
                series.flush()
        self.series = self.memory_series = None
        if self.recorder is not None:
            self.recorder.detach()
            self.recorder = None
        if self.writer is not None:
            if self.session_id is not None:
                self.writer.put(SessionEnded(self.session_id, time.time()))
            self.writer.stop()  # it closes the connection it owns
            self.writer = None
            self.opened.connection = None
        self.opened.close()
