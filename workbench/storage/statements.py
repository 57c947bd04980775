"""Each record as SQL: one function per kind of record, run on the storage thread."""
from __future__ import annotations

import json
import time
from functools import singledispatch

from workbench.storage.codec import to_json
from workbench.storage.records import (
    AllConversationsDeleted, BatchRowSaved, BatchRunDeleted, BatchRunSaved, ConversationDeleted, ConversationSaved,
    DraftSaved, EngineRunPlanned, EngineRunReady, EngineRunStarted, EngineRunStopped, MessageSaved, MessagesKept, MessageTextSaved,
    SeriesPointsSaved, SessionEnded, SessionStarted,
)


@singledispatch
def write_record(record, connection) -> None:
    raise TypeError(f"storage has no statement for {type(record).__name__}")


@write_record.register
def _(record: ConversationSaved, connection) -> None:
    connection.execute(
        "INSERT INTO conversations (conversation_id, title, position, created_s, sampling, system_prompt, number, "
        "title_source) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (conversation_id) DO UPDATE SET "
        "title = excluded.title, position = excluded.position, sampling = excluded.sampling, "
        "system_prompt = excluded.system_prompt, title_source = excluded.title_source",
        (record.conversation_id, record.title, record.position, time.time(), to_json(record.sampling),
         record.system_prompt, record.number, record.title_source))
    connection.execute(  # the highest number ever given, kept after its conversation is deleted
        "INSERT INTO counters VALUES ('conversation_number', ?) ON CONFLICT (name) DO UPDATE SET "
        "value = max(value, excluded.value)", (record.number,))


@write_record.register
def _(record: DraftSaved, connection) -> None:
    connection.execute("UPDATE conversations SET draft = ? WHERE conversation_id = ?",
                       (record.text, record.conversation_id))
    connection.execute("DELETE FROM draft_images WHERE conversation_id = ?", (record.conversation_id,))
    connection.executemany(
        "INSERT INTO draft_images VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        ((record.conversation_id, position, ref.sha256, ref.name, ref.mime, ref.width, ref.height, ref.num_bytes)
         for position, ref in enumerate(record.images)))


@write_record.register
def _(record: MessageSaved, connection) -> None:
    connection.execute(
        "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (message_id) DO UPDATE SET "
        "position = excluded.position, text = excluded.text, status = excluded.status, error = excluded.error, "
        "figures = excluded.figures, updated_s = excluded.updated_s, "
        "run_key = coalesce(excluded.run_key, messages.run_key)",
        (record.message_id, record.conversation_id, record.position, record.role, record.text, record.status,
         record.error, record.request_id, to_json(record.sampling), record.system_prompt,
         to_json(record.figures), time.time(), record.run_key or None))
    if record.images:
        connection.executemany(
            "INSERT OR IGNORE INTO message_images VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            ((record.message_id, position, ref.sha256, ref.name, ref.mime, ref.width, ref.height, ref.num_bytes)
             for position, ref in enumerate(record.images)))


@write_record.register
def _(record: MessageTextSaved, connection) -> None:
    connection.execute("UPDATE messages SET text = ?, updated_s = ? WHERE message_id = ?",
                       (record.text, time.time(), record.message_id))


@write_record.register
def _(record: MessagesKept, connection) -> None:
    marks = ",".join("?" * len(record.message_ids))
    connection.execute(f"DELETE FROM messages WHERE conversation_id = ? AND message_id NOT IN ({marks})",
                       (record.conversation_id, *record.message_ids))


@write_record.register
def _(record: ConversationDeleted, connection) -> None:
    connection.execute("DELETE FROM conversations WHERE conversation_id = ?", (record.conversation_id,))


@write_record.register
def _(record: AllConversationsDeleted, connection) -> None:
    connection.execute("DELETE FROM conversations")


@write_record.register
def _(record: BatchRunSaved, connection) -> None:
    kept = connection.execute("SELECT created_s FROM batch_runs WHERE run_id = ? AND forgotten_s IS NOT NULL",
                              (record.run_id,)).fetchone()
    if kept is not None:  # a run let go of but kept for its session: it moves aside for the new one
        aside = f"{record.run_id}@{kept[0]:.0f}"
        connection.execute("PRAGMA defer_foreign_keys = ON")
        connection.execute("UPDATE batch_rows SET run_id = ? WHERE run_id = ?", (aside, record.run_id))
        connection.execute("UPDATE batch_runs SET run_id = ? WHERE run_id = ?", (aside, record.run_id))
    connection.execute("INSERT OR REPLACE INTO batch_runs (run_id, source, settings, created_s) VALUES (?, ?, ?, ?)",
                       (record.run_id, json.dumps(list(record.source)), to_json(record.settings), time.time()))
    connection.executemany(
        "INSERT OR REPLACE INTO batch_rows VALUES (?, ?, ?, 0, '', '', '', NULL, NULL, NULL)",
        ((record.run_id, row, to_json(prompt)) for row, prompt in enumerate(record.prompts)))


@write_record.register
def _(record: BatchRowSaved, connection) -> None:
    connection.execute(
        "UPDATE batch_rows SET status = ?, finish_reason = ?, text = ?, error = ?, figures = ?, "
        "run_key = coalesce(?, run_key), finished_s = ? WHERE run_id = ? AND row = ?",
        (record.status, record.finish_reason, record.text, record.error, to_json(record.figures),
         record.run_key or None, record.finished_s, record.run_id, record.row))


@write_record.register
def _(record: BatchRunDeleted, connection) -> None:
    # Rows that ran stay for their session (restore no longer shows the run); the rest goes.
    connection.execute("DELETE FROM batch_rows WHERE run_id = ? AND run_key IS NULL", (record.run_id,))
    connection.execute("UPDATE batch_runs SET forgotten_s = ? WHERE run_id = ?", (time.time(), record.run_id))
    connection.execute("DELETE FROM batch_runs WHERE run_id = ? AND NOT EXISTS "
                       "(SELECT 1 FROM batch_rows WHERE run_id = ?)", (record.run_id, record.run_id))


@write_record.register
def _(record: EngineRunStarted, connection) -> None:
    connection.execute("INSERT INTO engine_runs (run_key, start_id, config, started_s, session_id) "
                       "VALUES (?, ?, ?, ?, ?)",
                       (record.run_key, record.start_id, to_json(record.config), record.started_s,
                        record.session_id))


@write_record.register
def _(record: EngineRunReady, connection) -> None:
    connection.execute("UPDATE engine_runs SET info = ?, ready_s = ? WHERE run_key = ?",
                       (to_json(record.info), record.ready_s, record.run_key))


@write_record.register
def _(record: EngineRunPlanned, connection) -> None:
    connection.execute("UPDATE engine_runs SET planned_kv_blocks = ? WHERE run_key = ?",
                       (record.planned_kv_blocks, record.run_key))


@write_record.register
def _(record: EngineRunStopped, connection) -> None:
    connection.execute("UPDATE engine_runs SET stopped_s = ?, end_message = ? WHERE run_key = ? AND stopped_s IS NULL",
                       (record.stopped_s, record.message, record.run_key))


@write_record.register
def _(record: SessionStarted, connection) -> None:
    connection.execute("INSERT INTO sessions (session_id, started_s, facts) VALUES (?, ?, ?)",
                       (record.session_id, record.started_s, json.dumps(record.facts)))


@write_record.register
def _(record: SessionEnded, connection) -> None:
    connection.execute("UPDATE sessions SET ended_s = ? WHERE session_id = ?", (record.ended_s, record.session_id))


@write_record.register
def _(record: SeriesPointsSaved, connection) -> None:
    connection.execute("INSERT INTO series_chunks VALUES (?, ?, ?, ?, ?)",
                       (record.run_key, record.first_s, record.num_points, json.dumps(list(record.columns)),
                        record.points))
