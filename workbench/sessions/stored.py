"""Sessions, their engine runs and requests, read from the database (a connection of its own)."""
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from workbench.batch.results import STATUS_NAMES
from workbench.engine.images import ImageRef
from workbench.storage.database import connect
from workbench.storage.series import STATS, load_series

# The figures of a request, as the batch table shows them.
FIGURE_COLUMNS = ("prompt_tokens", "output_tokens", "cached_prompt_tokens", "queue_s", "ttft_s", "itl_s", "e2e_s")


@dataclass(frozen=True)
class EngineRunRecord:
    run_key: str
    session_id: str
    start_id: int
    config: dict  # the EngineConfig the run was started with, as stored
    info: dict | None  # what the ready engine reported (None: it never became ready)
    started_s: float
    ready_s: float | None
    stopped_s: float | None
    end_message: str
    planned_kv_blocks: int | None = None  # the capacity planner's estimate (info holds vLLM's count)

    @property
    def model(self) -> str:
        return (self.info or {}).get("model") or self.config.get("model", "")

    def resolved_config(self) -> dict:
        """The configuration with its ``extra`` engine arguments as keys of their own."""
        config = {k: v for k, v in self.config.items() if k != "extra"}
        config.update({name: value for name, value in self.config.get("extra", ())})
        return config


@dataclass(frozen=True)
class RequestRecord:
    """One chat reply or batch row: where it came from, its engine run, status and figures."""

    kind: str  # "chat" or "batch"
    source: str  # the conversation's title, or the batch run's id
    source_id: str  # conversation id or batch run id
    item: str  # the message id, or the batch row's line number
    request_id: str  # chat: vLLM's request id; batch: the custom_id where the file gave one
    run_key: str
    status: str
    finish_reason: str
    finished_s: float | None
    figures: dict  # FIGURE_COLUMNS -> number or None
    prompt: str
    output: str


@dataclass(frozen=True)
class SessionSummary:
    session_id: str
    started_s: float
    ended_s: float | None
    facts: dict
    runs: tuple[EngineRunRecord, ...] = field(default=())
    num_requests: int = 0

    @property
    def models(self) -> list[str]:
        return list(dict.fromkeys(run.model for run in self.runs if run.model))


def open_read_only(path: Path | str) -> sqlite3.Connection:
    """A connection beside the writer's (WAL lets it read while the app writes); never writes."""
    return connect(Path(path), "ro")


def _run(row) -> EngineRunRecord:
    run_key, session_id, start_id, config, info, started_s, ready_s, stopped_s, end_message, planned = row
    return EngineRunRecord(run_key, session_id or "", start_id, json.loads(config), json.loads(info) if info else None,
                           started_s, ready_s, stopped_s, end_message, planned)


RUN_COLUMNS = ("run_key, session_id, start_id, config, info, started_s, ready_s, stopped_s, end_message, "
               "planned_kv_blocks")


def engine_runs(connection: sqlite3.Connection, session_id: str | None = None) -> list[EngineRunRecord]:
    """The engine runs of one session (all with None), in the order they started."""
    where, args = ("WHERE session_id = ?", (session_id,)) if session_id is not None else ("", ())
    return [_run(row) for row in connection.execute(
        f"SELECT {RUN_COLUMNS} FROM engine_runs {where} ORDER BY started_s", args)]


def engine_run(connection: sqlite3.Connection, run_key: str) -> EngineRunRecord | None:
    row = connection.execute(f"SELECT {RUN_COLUMNS} FROM engine_runs WHERE run_key = ?", (run_key,)).fetchone()
    return _run(row) if row else None


def list_sessions(connection: sqlite3.Connection) -> list[SessionSummary]:
    """Every session, newest first, with its engine runs and how many requests they answered."""
    counts = dict(connection.execute(
        "SELECT e.session_id, count(*) FROM (SELECT run_key FROM messages WHERE run_key IS NOT NULL "
        "UNION ALL SELECT run_key FROM batch_rows WHERE run_key IS NOT NULL) r "
        "JOIN engine_runs e USING (run_key) GROUP BY e.session_id"))
    runs: dict[str, list[EngineRunRecord]] = {}
    for run in engine_runs(connection):
        runs.setdefault(run.session_id, []).append(run)
    return [SessionSummary(session_id, started_s, ended_s, json.loads(facts), tuple(runs.get(session_id, ())),
                           counts.get(session_id, 0))
            for session_id, started_s, ended_s, facts in connection.execute(
                "SELECT session_id, started_s, ended_s, facts FROM sessions ORDER BY started_s DESC")]


def session(connection: sqlite3.Connection, session_id: str) -> SessionSummary | None:
    return next((s for s in list_sessions(connection) if s.session_id == session_id), None)


def _figures(text: str | None) -> dict:
    data = json.loads(text) if text else {}
    rate = data.get("decode_tokens_per_s")
    data["itl_s"] = 1.0 / rate if rate else None
    return {name: data.get(name) for name in FIGURE_COLUMNS}


def requests(connection: sqlite3.Connection, run_keys: list[str], with_text: bool = True) -> list[RequestRecord]:
    """Every chat reply and batch row that the engine runs ``run_keys`` answered, in finishing order.
    ``with_text=False``: prompts and outputs left empty (figures only, for lists and comparisons)."""
    if not run_keys:
        return []
    marks = ",".join("?" * len(run_keys))
    text, prompt = ("m.text", "(SELECT p.text FROM messages p WHERE p.conversation_id = m.conversation_id AND "
                    "p.position = m.position - 1)") if with_text else ("''", "''")
    found = []
    for (message_id, conversation_id, title, request_id, run_key, status, updated_s, figures, output,
         asked) in connection.execute(
            f"SELECT m.message_id, m.conversation_id, c.title, m.request_id, m.run_key, m.status, m.updated_s, "
            f"m.figures, {text}, {prompt} FROM messages m JOIN conversations c USING (conversation_id) "
            f"WHERE m.role = 'assistant' AND m.run_key IN ({marks})", run_keys):
        found.append(RequestRecord("chat", title, conversation_id, message_id, request_id, run_key, status, "",
                                   updated_s, _figures(figures), asked or "", output))
    prompt_column, text_column = ("prompt", "text") if with_text else ("'{}'", "''")
    for run_id, row, prompt_json, status, finish_reason, output, figures, run_key, finished_s in connection.execute(
            f"SELECT run_id, row, {prompt_column}, status, finish_reason, {text_column}, figures, run_key, "
            f"finished_s FROM batch_rows WHERE run_key IN ({marks})", run_keys):
        found.append(_batch_request(run_id, row, prompt_json, status, finish_reason, output, figures, run_key,
                                    finished_s, with_text))
    found.sort(key=lambda r: (r.finished_s or 0.0))
    return found


def figure_columns(connection: sqlite3.Connection, run_keys: list[str], names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The figures ``names`` (of FIGURE_COLUMNS) of every chat reply and batch row that the engine runs ``run_keys``
    answered with output tokens, as arrays (NaN where one is missing), with ``finished_s``: as :func:`requests`
    gives them, but read by SQLite, without a Python object a request (100,000 rows, read off the GUI thread,
    leave Python's cycle collector nothing to walk)."""
    if not run_keys:
        return {name: np.empty(0) for name in ("finished_s", *names)}
    stored = ["decode_tokens_per_s" if name == "itl_s" else name for name in names]
    marks = ",".join("?" * len(run_keys))
    picked = ", ".join(f"json_extract(figures, '$.{name}')" for name in stored)
    answered = "json_valid(figures) AND json_extract(figures, '$.output_tokens') IS NOT NULL"
    cursor = connection.execute(
        f"SELECT updated_s, {picked} FROM messages WHERE role = 'assistant' AND run_key IN ({marks}) AND {answered} "
        f"UNION ALL SELECT finished_s, {picked} FROM batch_rows WHERE run_key IN ({marks}) AND {answered}",
        [*run_keys, *run_keys])
    chunks = []
    while rows := cursor.fetchmany(10_000):  # a chunk at a time: never 100,000 row tuples alive at once
        chunks.append(np.array(rows, dtype=float).reshape(-1, len(names) + 1))
    table = np.concatenate(chunks) if chunks else np.empty((0, len(names) + 1))
    columns = {name: table[:, index + 1] for index, name in enumerate(names)}
    if "itl_s" in columns:  # the mean gap between tokens, from the decode rate (none where the rate is 0)
        rate = columns["itl_s"]
        columns["itl_s"] = np.divide(1.0, rate, out=np.full_like(rate, np.nan), where=rate != 0)
    return {"finished_s": table[:, 0], **columns}


def record_columns(found: list[RequestRecord], names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """What :func:`figure_columns` reads, from records: those answered with output tokens."""
    done = [r for r in found if r.figures.get("output_tokens") is not None]

    def column(values) -> np.ndarray:
        return np.array([np.nan if value is None else value for value in values], dtype=float)

    return {"finished_s": column(r.finished_s for r in done),
            **{name: column(r.figures.get(name) for r in done) for name in names}}


def _batch_request(run_id, row, prompt_json, status, finish_reason, output, figures, run_key, finished_s,
                   with_text: bool) -> RequestRecord:
    prompt = json.loads(prompt_json) if with_text else {}
    text = prompt.get("prompt") or "\n".join(m.get("content", "") for m in prompt.get("messages") or ())
    return RequestRecord("batch", run_id, run_id, str(prompt.get("line_no", row + 1)), prompt.get("custom_id") or "",
                         run_key, STATUS_NAMES[status], finish_reason, finished_s, _figures(figures), text, output)


def question_images(connection: sqlite3.Connection, run_keys: list[str]) -> list[tuple[str, str, ImageRef]]:
    """The images of the questions that the engine runs ``run_keys`` answered: (reply's request id,
    conversation title, image), in the order asked."""
    if not run_keys:
        return []
    marks = ",".join("?" * len(run_keys))
    return [(request_id, title, ImageRef(*ref)) for request_id, title, *ref in connection.execute(
        "SELECT m.request_id, c.title, i.sha256, i.name, i.mime, i.width, i.height, i.num_bytes "
        "FROM messages m JOIN conversations c USING (conversation_id) "
        "JOIN messages q ON q.conversation_id = m.conversation_id AND q.position = m.position - 1 "
        f"JOIN message_images i ON i.message_id = q.message_id WHERE m.role = 'assistant' AND m.run_key IN ({marks}) "
        "ORDER BY m.updated_s, i.position", run_keys)]


def session_series(connection: sqlite3.Connection, runs: list[EngineRunRecord],
                   kind: str = STATS) -> dict[str, np.ndarray]:
    """The plotted series of ``runs`` (``kind``: the plots' or the memory panel's, see
    ``workbench.storage.series``) one after the other, with a ``run`` column (index into ``runs``)
    and a row of NaN between two runs, so that a plot's line breaks there."""
    parts = []
    for index, run in enumerate(runs):
        series = load_series(connection, run.run_key, kind)
        if series:
            if parts:
                parts.append({name: np.array([np.nan]) for name in parts[-1]})
            parts.append({**series, "run": np.full(len(series["t"]), float(index))})
    if not parts:
        return {}
    names = list(parts[-1])
    return {name: np.concatenate([part[name] for part in parts]) for name in names}


def delete_session(path: Path | str, session_id: str) -> None:
    """Deletes a session with its engine runs, their series and the rows of batch runs the Batch pane
    has let go of (conversations and the pane's batch run stay: they live on in the Chat and Batch panes).
    A connection of its own, one transaction."""
    connection = connect(Path(path))
    try:
        connection.execute("PRAGMA foreign_keys = ON")
        connection.execute("BEGIN IMMEDIATE")
        runs = "SELECT run_key FROM engine_runs WHERE session_id = ?"
        forgotten = "SELECT run_id FROM batch_runs WHERE forgotten_s IS NOT NULL"
        connection.execute(f"DELETE FROM batch_rows WHERE run_key IN ({runs}) AND run_id IN ({forgotten})",
                           (session_id,))
        connection.execute(f"DELETE FROM batch_runs WHERE run_id IN ({forgotten}) AND NOT EXISTS "
                           "(SELECT 1 FROM batch_rows r WHERE r.run_id = batch_runs.run_id)")
        connection.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
        connection.execute("COMMIT")
    finally:
        connection.close()
