"""The database's tables, versioned: ``PRAGMA user_version`` holds the version, migrations lead to it.

A migration is a list of statements run in one transaction, from the version before it. The
database is never written by a version that does not know its schema (``database`` refuses one
newer than :data:`SCHEMA_VERSION`).
"""
from __future__ import annotations

import sqlite3

VERSION_1 = (
    """CREATE TABLE conversations (
        conversation_id TEXT PRIMARY KEY,  -- the application model's UUID
        title TEXT NOT NULL,
        position INTEGER NOT NULL,         -- order in the conversation list
        created_s REAL NOT NULL,
        sampling TEXT)                     -- JSON: its own settings (seeded by a preset, then the last asked)
    """,
    """CREATE TABLE messages (
        message_id TEXT PRIMARY KEY,       -- the application model's UUID
        conversation_id TEXT NOT NULL REFERENCES conversations ON DELETE CASCADE,
        position INTEGER NOT NULL,
        role TEXT NOT NULL,
        text TEXT NOT NULL,                -- written while a reply streams
        status TEXT NOT NULL,
        error TEXT NOT NULL,
        request_id TEXT NOT NULL,
        sampling TEXT,                     -- JSON: the settings the reply was asked with
        system_prompt TEXT,
        figures TEXT,                      -- JSON: vLLM's figures of the reply
        updated_s REAL NOT NULL)""",
    "CREATE INDEX messages_by_conversation ON messages (conversation_id, position)",
    """CREATE TABLE batch_runs (
        run_id TEXT PRIMARY KEY,           -- "batch3": numbers go on from the highest stored
        source TEXT NOT NULL,              -- the prompt file's path and format (JSON)
        settings TEXT NOT NULL,            -- JSON: RunSettings
        created_s REAL NOT NULL)""",
    """CREATE TABLE batch_rows (
        run_id TEXT NOT NULL REFERENCES batch_runs ON DELETE CASCADE,
        row INTEGER NOT NULL,
        prompt TEXT NOT NULL,              -- JSON: BatchPrompt
        status INTEGER NOT NULL,           -- workbench.batch.results: QUEUED .. CANCELLED
        finish_reason TEXT NOT NULL,
        text TEXT NOT NULL,
        error TEXT NOT NULL,
        figures TEXT,                      -- JSON
        PRIMARY KEY (run_id, row))""",
    """CREATE TABLE engine_runs (
        run_key TEXT PRIMARY KEY,          -- a UUID per start
        start_id INTEGER NOT NULL,
        config TEXT NOT NULL,              -- JSON: the EngineConfig the start was asked with
        info TEXT,                         -- JSON: what the ready engine reported (vLLM, device, length)
        started_s REAL NOT NULL,           -- time.time()
        ready_s REAL,
        stopped_s REAL,
        end_message TEXT NOT NULL DEFAULT '')""",
)

# Each entry takes the database from its index to its index + 1.
# Version 2 will be the plots' time series ("series": one row per plotted series of an engine run,
# its samples as compact arrays), added with the plots.
MIGRATIONS: tuple[tuple[str, ...], ...] = (VERSION_1,)
SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(connection: sqlite3.Connection) -> int:
    return connection.execute("PRAGMA user_version").fetchone()[0]


def migrate(connection: sqlite3.Connection, migrations=MIGRATIONS) -> int:
    """Brings the database up to ``len(migrations)``, one transaction per step; returns the version.

    ``connection`` is in autocommit (``isolation_level=None``), as every connection here is."""
    version = schema_version(connection)
    for target in range(version + 1, len(migrations) + 1):
        connection.execute("BEGIN IMMEDIATE")  # the connection runs in autocommit: DDL inside too
        try:
            for statement in migrations[target - 1]:
                connection.execute(statement)
            connection.execute(f"PRAGMA user_version = {target}")
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
    return schema_version(connection)
