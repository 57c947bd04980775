"""The four prompt-file formats, line by line: each line becomes a :class:`BatchPrompt` or a
:class:`LineProblem` that names the line and what is wrong with it.

- ``jsonl``: ``{"prompt": "..."}`` or ``{"messages": [...]}`` on each line (``custom_id`` optional);
- ``openai``: the OpenAI batch input that ``vllm run-batch`` takes (``custom_id``, ``method``, ``url``,
  ``body``), for ``/v1/chat/completions`` and ``/v1/completions``;
- ``csv``: a header row and a prompt column chosen by name;
- ``text``: one prompt per line.
Blank lines are skipped, as ``vllm run-batch`` skips them.
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from workbench.batch.prompt_file import Line, LineProblem, LineReader, first_line
from workbench.engine.backend import Message

FORMATS = {"jsonl": "JSONL: prompt or messages", "openai": "OpenAI batch JSONL (vllm run-batch)",
           "csv": "CSV: a prompt column", "text": "Plain text: a prompt per line"}
CHAT_URL, COMPLETIONS_URL = "/v1/chat/completions", "/v1/completions"
ROLES = ("system", "user", "assistant")
SAMPLING_FIELDS = {"max_tokens": int, "max_completion_tokens": int, "temperature": float, "top_p": float,
                   "top_k": int, "seed": int}


@dataclass(frozen=True, slots=True)
class BatchPrompt:
    """One prompt of the file: raw text (a completion) or chat messages (the chat template applies)."""

    line_no: int
    prompt: str | None = None
    messages: tuple[Message, ...] | None = None
    custom_id: str | None = None
    url: str | None = None  # OpenAI batch input only
    sampling: tuple[tuple[str, float | int], ...] = ()  # the body's own settings, over the run's

    def preview(self) -> str:
        if self.prompt is not None:
            return self.prompt
        return self.messages[-1].content if self.messages else ""


class LineError(ValueError):
    """What is wrong with one line (its reason; the caller knows the line)."""


def detect_format(path: str | Path) -> str:
    """The format a file's name and first line suggest: csv, openai, jsonl or text."""
    suffix = Path(path).suffix.lower()
    if suffix in (".csv", ".tsv"):
        return "csv"
    head = first_line(path).strip()
    if head.startswith("{"):
        try:
            record = json.loads(head)
        except ValueError:
            return "jsonl"
        return "openai" if isinstance(record, dict) and {"custom_id", "body"} <= record.keys() else "jsonl"
    return "jsonl" if suffix in (".jsonl", ".json") else "text"


def csv_columns(path: str | Path) -> list[str]:
    """The CSV's header names, for the dialog that asks which one holds the prompts."""
    header = first_line(path)
    return next(csv.reader([header]), []) if header else []


def parse_prompts(source: str | Path | LineReader, fmt: str,
                  column: str | None = None) -> Iterator[BatchPrompt | LineProblem]:
    """The file's prompts in order, and a problem for each line that is not one."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown prompt-file format {fmt!r}; choose one of {', '.join(FORMATS)}")
    lines = iter(source if isinstance(source, LineReader) else LineReader(source))
    if fmt == "csv":
        yield from _csv_prompts(lines, column or "prompt")
        return
    parse_line = {"jsonl": _jsonl_prompt, "openai": _OpenAIBatchParser().prompt, "text": _text_prompt}[fmt]
    for item in lines:
        if isinstance(item, LineProblem):
            yield item
        elif item.text.strip():
            try:
                yield parse_line(item)
            except LineError as exc:
                yield LineProblem(item.line_no, str(exc))


# ------------------------------------------------------------------ plain text and JSONL
def _text_prompt(line: Line) -> BatchPrompt:
    return BatchPrompt(line.line_no, prompt=line.text)


def _json_object(line: Line) -> dict:
    try:
        record = json.loads(line.text)
    except json.JSONDecodeError as exc:
        raise LineError(f"broken JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(record, dict):
        raise LineError(f"expected a JSON object {{...}}, got a JSON {type(record).__name__}")
    return record


def _jsonl_prompt(line: Line) -> BatchPrompt:
    record = _json_object(line)
    custom_id = _optional_text(record, "custom_id")
    if "prompt" in record and "messages" in record:
        raise LineError("has both \"prompt\" and \"messages\": give one of them")
    if "messages" in record:
        return BatchPrompt(line.line_no, messages=parse_messages(record["messages"]), custom_id=custom_id)
    if "prompt" not in record:
        raise LineError("missing field: \"prompt\" or \"messages\"")
    return BatchPrompt(line.line_no, prompt=_prompt_text(record["prompt"]), custom_id=custom_id)


def _optional_text(record: dict, name: str) -> str | None:
    value = record.get(name)
    if value is not None and not isinstance(value, str):
        raise LineError(f"\"{name}\" must be a string, got {json.dumps(value)[:40]}")
    return value


def _prompt_text(value) -> str:
    if isinstance(value, list) and len(value) == 1:
        value = value[0]  # OpenAI's completions accept a list; one prompt a line here
    if not isinstance(value, str):
        raise LineError(f"\"prompt\" must be a string, got {json.dumps(value)[:40]}")
    if not value.strip():
        raise LineError("\"prompt\" is empty")
    return value


def parse_messages(value) -> tuple[Message, ...]:
    """Chat messages as OpenAI writes them; text content only (a string, or parts of type text)."""
    if not isinstance(value, list) or not value:
        raise LineError("\"messages\" must be a non-empty list of {\"role\": ..., \"content\": ...}")
    messages = []
    for number, item in enumerate(value, 1):
        if not isinstance(item, dict):
            raise LineError(f"message {number} is not an object")
        role = item.get("role")
        if role not in ROLES:
            raise LineError(f"message {number} has role {json.dumps(role)}; the roles are {', '.join(ROLES)}")
        messages.append(Message(role, _content_text(item.get("content"), number)))
    return tuple(messages)


def _content_text(content, number: int) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    raise LineError(f"message {number} has no text content (a string, or parts of type \"text\")")


# ------------------------------------------------------------------ OpenAI batch input
class _OpenAIBatchParser:
    """Lines of ``vllm run-batch``'s input; remembers the custom_ids seen, which must not repeat."""

    def __init__(self):
        self.seen: dict[str, int] = {}  # custom_id -> the line that used it first

    def prompt(self, line: Line) -> BatchPrompt:
        record = _json_object(line)
        missing = [name for name in ("custom_id", "method", "url", "body") if name not in record]
        if missing:
            raise LineError(f"missing field{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
        custom_id, url, body = record["custom_id"], record["url"], record["body"]
        if not isinstance(custom_id, str) or not custom_id:
            raise LineError("\"custom_id\" must be a non-empty string")
        if record["method"] != "POST":
            raise LineError(f"method {json.dumps(record['method'])} is not supported: batch requests are POST")
        if url not in (CHAT_URL, COMPLETIONS_URL):
            raise LineError(f"url {json.dumps(url)} is not supported: the batch pane runs {CHAT_URL} and "
                            f"{COMPLETIONS_URL}")
        if not isinstance(body, dict):
            raise LineError("\"body\" must be a JSON object")
        if custom_id in self.seen:
            raise LineError(f"custom_id {json.dumps(custom_id)} repeats line {self.seen[custom_id]}'s: "
                            "each request needs its own")
        prompt = self._body_prompt(line.line_no, custom_id, url, body)
        self.seen[custom_id] = line.line_no
        return prompt

    @staticmethod
    def _body_prompt(line_no: int, custom_id: str, url: str, body: dict) -> BatchPrompt:
        if body.get("stream"):
            raise LineError("\"stream\": true is not supported in a batch (vLLM refuses it too)")
        sampling = tuple(_body_sampling(body))
        if url == CHAT_URL:
            if "messages" not in body:
                raise LineError("missing field: body.messages")
            return BatchPrompt(line_no, messages=parse_messages(body["messages"]), custom_id=custom_id, url=url,
                               sampling=sampling)
        if "prompt" not in body:
            raise LineError("missing field: body.prompt")
        return BatchPrompt(line_no, prompt=_prompt_text(body["prompt"]), custom_id=custom_id, url=url,
                           sampling=sampling)


def _body_sampling(body: dict) -> Iterator[tuple[str, float | int]]:
    for name, kind in SAMPLING_FIELDS.items():
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)):
            raise LineError(f"body.{name} must be {'an integer' if kind is int else 'a number'}, got {value!r}")
        if name in ("max_tokens", "max_completion_tokens") and value < 1:
            raise LineError(f"body.{name} must be 1 or more, got {value}")
        yield ("max_tokens" if name == "max_completion_tokens" else name), kind(value)


# ------------------------------------------------------------------ CSV
def _csv_prompts(lines: Iterator[Line | LineProblem], column: str) -> Iterator[BatchPrompt | LineProblem]:
    """CSV rows, quoted fields across lines included; a row's number is the line it starts on."""
    problems: list[LineProblem] = []
    where = {"start": 0, "fatal": False}

    def texts() -> Iterator[str]:
        for item in lines:
            if isinstance(item, LineProblem):
                problems.append(item)
                where["fatal"] = where["fatal"] or item.fatal
                continue
            where["start"] = where["start"] or item.line_no
            yield item.text + "\n"

    reader = csv.reader(texts())
    index = None
    while True:
        where["start"] = 0
        try:
            row = next(reader, None)
        except csv.Error as exc:
            problems.append(LineProblem(where["start"], f"not valid CSV: {exc}"))
            row = []
        yield from problems
        problems.clear()
        if row is None or where["fatal"]:
            return
        if index is None:
            if column not in row:
                yield LineProblem(where["start"], f"the CSV has no column named {column!r} (its columns: "
                                                  f"{', '.join(map(repr, row)) or 'none'})", fatal=True)
                return
            index = row.index(column)
        elif row and any(cell.strip() for cell in row):
            yield _csv_prompt(row, index, column, where["start"])


def _csv_prompt(row: list[str], index: int, column: str, line_no: int) -> BatchPrompt | LineProblem:
    if index >= len(row):
        return LineProblem(line_no, f"the row has {len(row)} field{'s' if len(row) != 1 else ''}; the "
                                    f"{column!r} column is field {index + 1}")
    if not row[index].strip():
        return LineProblem(line_no, f"the {column!r} field is empty")
    return BatchPrompt(line_no, prompt=row[index])
