"""Reading back what an earlier session stored: conversations with their messages, batch runs with
their rows. Runs on the GUI thread at start, before the window shows and before the writer starts."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np

from workbench.batch.results import CANCELLED, COUNT_COLUMNS, DONE, ERROR, FIGURE_NAMES, TIME_COLUMNS, BatchResults
from workbench.batch.run import BatchRun
from workbench.batch.stored_prompts import StoredPrompts
from workbench.engine.images import ImageRef
from workbench.engine.metrics import generating_time_s
from workbench.engine.requests import RequestRegistry
from workbench.model.conversations import ChatMessage, Conversation
from workbench.storage.codec import figures_from_json, prompt_from_json, run_settings_from_json, sampling_from_json

ENDED = (DONE, ERROR, CANCELLED)
INTERRUPTED = "The app ended while this reply streamed; the text up to then is kept."
NEVER_SENT = "The app ended before the engine could take this question; Regenerate sends it."


def load_conversations(connection: sqlite3.Connection) -> list[Conversation]:
    """Every stored conversation in list order; a reply that was streaming when the app ended is stopped."""
    conversations: dict[str, Conversation] = {}
    drafts = draft_images(connection)
    for conversation_id, title, sampling, system_prompt, number, title_source, draft in connection.execute(
            "SELECT conversation_id, title, sampling, system_prompt, number, title_source, draft FROM conversations "
            "ORDER BY position, created_s"):
        conversations[conversation_id] = Conversation(title, conversation_id=conversation_id,
                                                      system_prompt=system_prompt, number=number,
                                                      title_source=title_source, draft=draft,
                                                      draft_images=drafts.get(conversation_id, ()))
        if sampling is not None:
            conversations[conversation_id].sampling = sampling_from_json(sampling)
    images = message_images(connection)
    rows = connection.execute(
        "SELECT conversation_id, message_id, role, text, status, error, request_id, sampling, system_prompt, "
        "figures FROM messages ORDER BY conversation_id, position")
    for (conversation_id, message_id, role, text, status, error, request_id, sampling, system_prompt,
         figures) in rows:
        if status == "streaming":
            status, error = "stopped", INTERRUPTED
        elif status == "waiting":  # asked, never sent: the question is there, Regenerate sends it
            status, error = "stopped", NEVER_SENT
        conversations[conversation_id].messages.append(ChatMessage(
            role, text, status, error, figures_from_json(figures), request_id, message_id,
            sampling_from_json(sampling), system_prompt or "", images.get(message_id, ())))
    return list(conversations.values())


def draft_images(connection: sqlite3.Connection) -> dict[str, tuple[ImageRef, ...]]:
    """Each conversation's draft's images, in order, by conversation id."""
    return _refs_by_key(connection.execute(
        "SELECT conversation_id, sha256, name, mime, width, height, num_bytes FROM draft_images "
        "ORDER BY conversation_id, position"))


def message_images(connection: sqlite3.Connection, message_ids=None) -> dict[str, tuple[ImageRef, ...]]:
    """Each message's images, in order, by message id (of ``message_ids`` only, where given)."""
    query = "SELECT message_id, sha256, name, mime, width, height, num_bytes FROM message_images"
    args: tuple = ()
    if message_ids is not None:
        args = tuple(message_ids)
        query += f" WHERE message_id IN ({','.join('?' * len(args))})"
    return _refs_by_key(connection.execute(query + " ORDER BY message_id, position", args))


def _refs_by_key(rows) -> dict[str, tuple[ImageRef, ...]]:
    """Rows of (key, the ImageRef's fields), in order: each key's refs."""
    found: dict[str, list[ImageRef]] = {}
    for key, *ref in rows:
        found.setdefault(key, []).append(ImageRef(*ref))
    return {key: tuple(refs) for key, refs in found.items()}


def highest_chat_number(connection: sqlite3.Connection) -> int:
    """The highest conversation number ever given (its conversation may be deleted since)."""
    row = connection.execute("SELECT value FROM counters WHERE name = 'conversation_number'").fetchone()
    return row[0] if row else 0


def load_batch_runs(connection: sqlite3.Connection, owners: RequestRegistry) -> list[BatchRun]:
    """The stored runs, each without an engine: the model gives them the one it sends batch runs to."""
    runs = []
    for run_id, source, settings in connection.execute(
            "SELECT run_id, source, settings FROM batch_runs WHERE forgotten_s IS NULL ORDER BY created_s"):
        results, busy_s = load_results(connection, run_id)
        run_no = int(run_id.removeprefix("batch")) if run_id.removeprefix("batch").isdigit() else 0
        runs.append(BatchRun.restored(run_no, results, run_settings_from_json(settings), owners,
                                      tuple(json.loads(source)), busy_s))
    return runs


# Each column of a batch's figures as SQLite reads it from a row's stored RequestFigures (NULL where the row has
# none): what ``BatchResults.finish`` takes from them, the inter-token latency from the decode speed.
_STORED_FIGURES = {
    **{name: f"json_extract(figures, '$.{FIGURE_NAMES.get(name, name)}')" for name in COUNT_COLUMNS},
    "image_tokens": "coalesce(json_extract(figures, '$.num_image_tokens'), 0)",  # RequestFigures' default
    **{name: f"json_extract(figures, '$.{name}')" for name in TIME_COLUMNS},
    "itl_s": "1.0 / nullif(json_extract(figures, '$.decode_tokens_per_s'), 0)",
}


def load_results(connection: sqlite3.Connection, run_id: str) -> tuple[BatchResults, float]:
    """A stored batch run's rows, the ended ones with their status, text and figures; and how long it had
    requests in the engine (the union of its rows' times in it, each from its end less vLLM's end-to-end
    latency to its end; a row without that latency, a server's that gives none, left out). The figures are
    read by SQLite into arrays: no RequestFigures a row (100,000 rows read back in a fraction of the time)."""
    figures = ", ".join(f"CASE WHEN figures IS NULL THEN NULL ELSE {column} END" for column in _STORED_FIGURES.values())
    rows = connection.execute(
        f"SELECT prompt, status, finish_reason, text, error, {figures}, finished_s, "
        "json_extract(prompt, '$.line_no'), json_extract(prompt, '$.reference') IS NOT NULL, "
        "coalesce(json_array_length(prompt, '$.images'), 0) > 0 "
        "FROM batch_rows WHERE run_id = ? ORDER BY row", (run_id,)).fetchall()
    results = BatchResults(capacity=max(16, len(rows)))
    # each prompt read from its JSON when first asked for (the table asks for the rows it shows)
    results.append_stored(StoredPrompts([line[0] for line in rows], prompt_from_json),
                          np.array([line[-3] for line in rows], dtype=np.int64),
                          sum(line[-2] for line in rows), sum(line[-1] for line in rows))
    ended = [row for row, line in enumerate(rows) if line[1] in ENDED]
    if not ended:
        return results, 0.0
    table = np.array([rows[row][5:-3] for row in ended], dtype=float).reshape(len(ended), len(_STORED_FIGURES) + 1)
    table, finished_s = table[:, :-1], table[:, -1]
    results.finish_stored(np.array(ended), np.array([rows[row][1] for row in ended], dtype=np.uint8),
                          [rows[row][2] for row in ended],
                          {name: np.where(np.isnan(column), -1, column) if name in COUNT_COLUMNS else column
                           for name, column in zip(_STORED_FIGURES, table.T)},
                          [rows[row][3] for row in ended])
    for row in ended:
        if rows[row][4]:
            results.errors[row] = rows[row][4]
    e2e_s = table[:, list(_STORED_FIGURES).index("e2e_s")]
    timed = ~np.isnan(finished_s) & ~np.isnan(e2e_s)
    return results, generating_time_s(finished_s[timed] - e2e_s[timed], finished_s[timed])


def close_interrupted_engine_runs(connection: sqlite3.Connection) -> None:
    """Engine runs with no stop time ended with an app that did not stop them (a crash, a kill); so did
    sessions with no end, which end at their last recorded moment."""
    connection.execute("UPDATE engine_runs SET end_message = 'the app ended without stopping the engine' "
                       "WHERE stopped_s IS NULL AND end_message = ''")
    connection.execute(
        "UPDATE sessions SET ended_s = max(started_s, coalesce((SELECT max(max(coalesce(e.stopped_s, 0), "
        "coalesce(e.ready_s, 0), e.started_s)) FROM engine_runs e WHERE e.session_id = sessions.session_id), 0), "
        "coalesce((SELECT max(c.first_s) FROM series_chunks c JOIN engine_runs e USING (run_key) "
        "WHERE e.session_id = sessions.session_id), 0)) WHERE ended_s IS NULL")


def sweep_images(connection: sqlite3.Connection, folder: Path) -> int:
    """Removes the data folder's image copies that no stored message or draft holds any more (their conversations
    deleted, their questions edited away); returns how many. Runs at start, where this instance alone
    writes the database (a second one finds it locked), so no image attached since is left uncommitted.
    A copy cut short by a kill (``.part-*``) goes too."""
    if not folder.is_dir():
        return 0
    held = {sha256 for (sha256,) in connection.execute(
        "SELECT sha256 FROM message_images UNION SELECT sha256 FROM draft_images")}
    removed = 0
    for path in folder.iterdir():
        name = path.name
        if path.is_file() and (name.startswith(".part-") or path.stem not in held):
            path.unlink(missing_ok=True)
            removed += 1
    return removed
