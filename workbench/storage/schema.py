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

# Version 2: sessions (one run of the app, holding its engine runs), the plots' series of each engine
# run (chunks of points as compact arrays), and the engine run that answered each request. Data of
# version 1 is kept: its engine runs go into one session ("v1"), and each reply and batch row is given
# the engine run that was running when it was written. A batch run that the Batch pane lets go of is
# no longer deleted while rows of it ran: its session keeps them (deleting the session deletes them).
VERSION_2 = (
    """CREATE TABLE sessions (
        session_id TEXT PRIMARY KEY,       -- a UUID per run of the app
        started_s REAL NOT NULL,
        ended_s REAL,                      -- NULL while it runs (or when the app was killed)
        facts TEXT NOT NULL)               -- JSON: app, vLLM, torch and driver versions, GPUs, host
    """,
    "ALTER TABLE engine_runs ADD COLUMN session_id TEXT REFERENCES sessions ON DELETE CASCADE",
    "ALTER TABLE messages ADD COLUMN run_key TEXT",  # the engine run that answered (replies)
    "ALTER TABLE batch_rows ADD COLUMN run_key TEXT",
    "ALTER TABLE batch_rows ADD COLUMN finished_s REAL",
    # A batch run the pane let go of (another file opened) is kept for its session while rows of it ran.
    "ALTER TABLE batch_runs ADD COLUMN forgotten_s REAL",
    """CREATE TABLE series_chunks (
        run_key TEXT NOT NULL REFERENCES engine_runs ON DELETE CASCADE,
        first_s REAL NOT NULL,             -- time.time() of its first point
        num_points INTEGER NOT NULL,
        columns TEXT NOT NULL,             -- JSON: the column names, "t" first (time.time() seconds)
        points BLOB NOT NULL)              -- float64, num_points rows of len(columns), row-major
    """,
    "CREATE INDEX series_by_run ON series_chunks (run_key, first_s)",
    "CREATE INDEX engine_runs_by_session ON engine_runs (session_id, started_s)",
    """INSERT INTO sessions (session_id, started_s, ended_s, facts)
        SELECT 'v1', min(started_s), max(coalesce(stopped_s, ready_s, started_s)),
               '{"note":"kept before sessions were recorded"}'
        FROM engine_runs HAVING count(*) > 0""",
    "UPDATE engine_runs SET session_id = 'v1'",
    """UPDATE messages SET run_key = (SELECT e.run_key FROM engine_runs e WHERE e.started_s <= messages.updated_s
        ORDER BY e.started_s DESC LIMIT 1) WHERE role = 'assistant'""",
    """UPDATE batch_rows SET run_key = (SELECT e.run_key FROM engine_runs e, batch_runs b
        WHERE b.run_id = batch_rows.run_id AND e.started_s <= b.created_s ORDER BY e.started_s DESC LIMIT 1)
        WHERE status != 0""",
)

# Version 3: each conversation's own system prompt, its number ("Chat 7", never given twice: the highest
# given is kept in ``counters`` after its conversation is deleted) and where its title came from. Stored
# titles of the form "Chat N" keep N and may still take their first question's words.
VERSION_3 = (
    "ALTER TABLE conversations ADD COLUMN system_prompt TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE conversations ADD COLUMN number INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE conversations ADD COLUMN title_source TEXT NOT NULL DEFAULT 'user'",
    """UPDATE conversations SET title_source = 'number', number = CAST(substr(title, 6) AS INTEGER)
        WHERE title GLOB 'Chat [1-9]*' AND substr(title, 6) NOT GLOB '*[^0-9]*'""",
    """UPDATE conversations SET system_prompt = coalesce((SELECT m.system_prompt FROM messages m
        WHERE m.conversation_id = conversations.conversation_id AND m.role = 'assistant'
        ORDER BY m.position DESC LIMIT 1), '')""",
    "CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    "INSERT INTO counters SELECT 'conversation_number', coalesce(max(number), 0) FROM conversations",
)

# Version 4: the capacity planner's estimate of each engine run's KV blocks, beside vLLM's own count
# (in ``info``), so a run's record says how close the estimate came.
VERSION_4 = ("ALTER TABLE engine_runs ADD COLUMN planned_kv_blocks INTEGER",)

# Version 5: the images of each user message, by reference: the content's SHA-256 names the data folder's
# copy (``engine/image_store.py`` says why the bytes stay out of the database), beside what the chat shows
# of it. A message's images never change once asked, so a row is written once; they go with their message.
VERSION_5 = (
    """CREATE TABLE message_images (
        message_id TEXT NOT NULL REFERENCES messages ON DELETE CASCADE,
        position INTEGER NOT NULL,         -- the image's place among the message's, from 0
        sha256 TEXT NOT NULL,              -- of the file's bytes: images/<sha256><suffix> in the data folder
        name TEXT NOT NULL,                -- the name the user knows it by
        mime TEXT NOT NULL,
        width INTEGER NOT NULL,
        height INTEGER NOT NULL,
        num_bytes INTEGER NOT NULL,
        PRIMARY KEY (message_id, position))""",
)

# Version 6: each conversation's draft, what was typed and attached in it and not sent, so that neither a restart nor a
# crash loses it; its images by reference, as a message's are (their files are held while a draft holds them).
VERSION_6 = (
    "ALTER TABLE conversations ADD COLUMN draft TEXT NOT NULL DEFAULT ''",
    """CREATE TABLE draft_images (
        conversation_id TEXT NOT NULL REFERENCES conversations ON DELETE CASCADE,
        position INTEGER NOT NULL,
        sha256 TEXT NOT NULL,
        name TEXT NOT NULL,
        mime TEXT NOT NULL,
        width INTEGER NOT NULL,
        height INTEGER NOT NULL,
        num_bytes INTEGER NOT NULL,
        PRIMARY KEY (conversation_id, position))""",
)

# Each entry takes the database from its index to its index + 1.
MIGRATIONS: tuple[tuple[str, ...], ...] = (VERSION_1, VERSION_2, VERSION_3, VERSION_4, VERSION_5, VERSION_6)
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
