"""Opening the database, and saying plainly what is wrong with one that cannot be used.

Each trouble becomes a :class:`StorageProblem` whose message names the file and what to do; nothing
is ever written over a file that could not be read. One instance of the app owns the data folder at
a time (a lock file, released by the system even when the app is killed): a second instance finds
it locked, says so, starts no engine and saves nothing.
"""
from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from workbench.storage.schema import SCHEMA_VERSION, migrate, schema_version

DB_NAME = "workbench.db"
CORRUPTED, LOCKED, READ_ONLY, DISK_FULL, NEWER_SCHEMA, WRITE_FAILED = (
    "corrupted", "locked", "read-only", "disk-full", "newer-schema", "write-failed")


@dataclass(frozen=True)
class StorageProblem:
    kind: str  # one of the names above
    path: str
    message: str  # for the user: the file, what happened, what to do


def problem_for(kind: str, path: Path | str, detail: str = "") -> StorageProblem:
    texts = {
        CORRUPTED: f"The workbench's database {path} is damaged and cannot be read ({detail}). Move it aside "
                   "(it is kept, renamed) and start a new one, or quit and restore it from a backup. Until then "
                   "nothing is saved.",
        LOCKED: f"Another vLLM Workbench is running with the database {path}. This window starts no engine and "
                "saves nothing: use the other window, or close it and start the workbench again.",
        READ_ONLY: f"The database {path} can only be read ({detail}). What is stored is shown, but nothing new "
                   "is saved: make the file and its folder writable, then restart the workbench.",
        DISK_FULL: f"The disk holding {path} is full ({detail}): new text is not being saved. Free some space; "
                   "the workbench tries again every few seconds and keeps what it has not saved yet.",
        NEWER_SCHEMA: f"The database {path} was written by a newer vLLM Workbench ({detail}). Nothing was "
                      "written to it: update the workbench, or move the file aside to start a new one here.",
        WRITE_FAILED: f"Saving to {path} failed ({detail}): new text is not being saved. The workbench tries "
                      "again every few seconds.",
    }
    return StorageProblem(kind, str(path), texts[kind])


def error_problem(path: Path | str, error: sqlite3.Error, otherwise: str = WRITE_FAILED) -> StorageProblem:
    """The problem an error of SQLite's means: a full disk, a file that cannot be written (or, opening,
    not even opened), or ``otherwise`` (a failed write; opening: a damaged file)."""
    text = str(error)
    if "full" in text:
        return problem_for(DISK_FULL, path, text)
    if "readonly" in text or "read-only" in text or "unable to open" in text:
        return problem_for(READ_ONLY, path, text)
    return problem_for(otherwise, path, text)


class InstanceLock:
    """Held while this process uses the data folder's database; the system drops it when the process ends."""

    def __init__(self, handle):
        self._handle = handle

    @classmethod
    def acquire(cls, db_path: Path) -> InstanceLock | None:
        handle = open(db_path.with_name(db_path.name + ".lock"), "a+")
        try:
            _lock(handle)
        except OSError:
            handle.close()
            return None
        return cls(handle)

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()  # closing drops the lock
            self._handle = None


def _lock(handle) -> None:
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt

        msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
    else:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


@dataclass
class OpenedDatabase:
    """The outcome of opening: a connection (None when nothing could be read) and what is wrong, if anything."""

    path: Path
    connection: sqlite3.Connection | None = None
    writable: bool = False
    problem: StorageProblem | None = None
    lock: InstanceLock | None = None

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None
        if self.lock is not None:
            self.lock.release()
            self.lock = None


def connect(path: Path, mode: str = "rwc") -> sqlite3.Connection:
    """A connection in autocommit (transactions are explicit), usable from the storage thread.
    ``mode``: SQLite's URI mode, "rwc" or "ro" (a read-only connection, whoever runs the app)."""
    uri = f"file:{quote(str(path))}?mode={mode}"
    return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False, timeout=5)


def open_database(path: Path, mode: str = "rwc") -> OpenedDatabase:
    """Opens (or creates) the database at ``path``, migrated to this version's schema when it can be written."""
    opened = OpenedDatabase(path)
    opened.lock = InstanceLock.acquire(path)
    if opened.lock is None:
        opened.problem = problem_for(LOCKED, path)
        return opened
    try:
        _open_checked(opened, mode)
    except sqlite3.DatabaseError as error:
        _close_connection(opened)
        opened.problem = error_problem(path, error, otherwise=CORRUPTED)
    return opened


def _open_checked(opened: OpenedDatabase, mode: str) -> None:
    connection = opened.connection = connect(opened.path, mode)
    check = connection.execute("PRAGMA quick_check").fetchone()[0]
    if check != "ok":
        raise sqlite3.DatabaseError(f"integrity check: {check}")
    version = schema_version(connection)
    if version > SCHEMA_VERSION:
        _close_connection(opened)
        opened.problem = problem_for(NEWER_SCHEMA, opened.path,
                                     f"schema {version}; this version knows up to {SCHEMA_VERSION}")
        return
    try:
        connection.execute(f"PRAGMA user_version = {version}")  # a write of nothing: can we write at all?
    except sqlite3.OperationalError as error:
        if "readonly" not in str(error):
            raise
        opened.problem = problem_for(READ_ONLY, opened.path, str(error))
        if version != SCHEMA_VERSION:  # nothing this version can read
            _close_connection(opened)
        return
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = NORMAL")  # WAL: a commit survives the app's crash
    connection.execute("PRAGMA foreign_keys = ON")
    migrate(connection)
    opened.writable = True


def _close_connection(opened: OpenedDatabase) -> None:
    if opened.connection is not None:
        opened.connection.close()
        opened.connection = None


def move_aside(path: Path) -> Path:
    """Renames a damaged database (and its WAL files) out of the way; returns the new name of the file."""
    aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
    for suffix in ("", "-wal", "-shm"):
        part = path.with_name(path.name + suffix)
        if part.exists():
            os.replace(part, aside.with_name(aside.name + suffix))
    return aside
