"""Prompt files and datasets, record by record: each becomes a :class:`BatchPrompt` or a
:class:`LineProblem` that names the line (or row) and what is wrong with it.

The format says what a record holds (``records.RECORD_FORMATS``: prompt or messages, alpaca, ShareGPT,
ms-swift's query/response, a prompt field named by the user; a JSON string is a prompt of its own;
``openai``: the OpenAI batch input that ``vllm run-batch`` takes, for ``/v1/chat/completions`` and
``/v1/completions``; ``csv``: a header row and a prompt column chosen by name, its delimiter the one that
splits the header, or the one a first line ``sep=;`` names (Excel's); ``text``: one prompt per line). The
container is the file's: JSON lines, one JSON array, Parquet, Arrow, a ``datasets`` folder saved with
``save_to_disk``, or an Excel workbook's sheet (:func:`detect_container`), each read as a stream. Blank lines
are skipped, as ``vllm run-batch`` skips them.

A record's images are checked as it is read (:class:`~workbench.batch.image_check.ImageChecker`), relative
paths read from the file's folder; a CSV's image column is found by its name (``IMAGE_COLUMN_NAMES``).
"""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Iterator

from workbench.batch.csv_rows import csv_rows
from workbench.batch.image_check import ImageChecker
from workbench.batch.json_array import JsonArrayReader, Record
from workbench.batch.prompt_file import Line, LineProblem, LineReader, read_lines, text_encoding
from workbench.batch.records import (  # noqa: F401 (BatchPrompt, LineError and parse_messages are this module's API)
    RECORD_FORMATS, BatchPrompt, LineError, guess_record_format, parse_messages, prompt_text, record_prompt,
    record_sampling, text_fields, with_images,
)
from workbench.batch.table_files import TableError, TableReader, table_kind
from workbench.engine.backend import Message

FORMATS = {**RECORD_FORMATS, "openai": "OpenAI batch JSONL (vllm run-batch)", "csv": "CSV: a prompt column",
           "text": "Plain text: a prompt per line"}
CONTAINERS = {"lines": "JSON lines (JSONL)", "array": "a JSON array of records", "parquet": "Parquet",
              "arrow": "Arrow", "dataset": "a datasets folder (save_to_disk)", "xlsx": "an Excel workbook",
              "object": "JSON over many lines (an object holding the records, or records one after another)",
              "csv": "CSV", "text": "text"}
CHAT_URL, COMPLETIONS_URL = "/v1/chat/completions", "/v1/completions"
IMAGE_COLUMN_NAMES = ("image", "images", "image_path", "image_url")  # a CSV's column of image paths or URLs
LIKELY_PROMPT_COLUMNS = ("prompt", "question", "text", "input", "content", "instruction")  # a CSV's, in order
DELIMITERS = (",", ";", "\t")
DELIMITER_NAMES = {",": "a comma", ";": "a semicolon", "\t": "a tab"}
GUESS_LINES = 20  # the lines read to guess a CSV's prompt column where no name says which
SEP_LINE = re.compile(r"sep=(.)\1*\s*", re.IGNORECASE)  # Excel's first line that names the delimiter: sep=;


def detect_container(path: str | Path) -> str:
    """How the file holds its records: a key of CONTAINERS, from its name and first bytes."""
    kind = table_kind(path)
    if kind is not None:
        return kind
    suffix = Path(path).suffix.lower()
    if suffix in (".csv", ".tsv"):
        return "csv"
    head = _first_text(path)
    if head.startswith("["):
        return "array"
    if head.startswith("{") and _wraps_records(path):
        return "object"
    if head.startswith("{") or suffix in (".jsonl", ".json"):
        return "lines"
    return "text"


def _wraps_records(path: str | Path) -> bool:
    """JSON objects written over many lines (the first line a lone "{"): one that holds the records, or records
    one after another; or one object on one line where a value is a list of records or prompts and none of its
    keys is a record format's."""
    lines = [item.text.strip() for item in LineReader(path, max_lines=3)
             if isinstance(item, Line) and item.text.strip()]
    if lines[:1] == ["{"]:
        return True
    if len(lines) != 1:
        return False
    try:
        record = json.loads(lines[0])
    except ValueError:
        return False
    return (isinstance(record, dict) and guess_record_format(record) == "jsonl"
            and not {"prompt", "messages"} & record.keys()
            and any(isinstance(v, list) and v and isinstance(v[0], (dict, str)) for v in record.values()))


def _first_text(path: str | Path) -> str:
    """The file's first characters that are not white space (a few KiB looked at)."""
    try:
        with open(path, "rb") as stream:
            head = stream.read(4096)
        return head.decode(text_encoding(head), "replace").lstrip("\ufeff \t\r\n")
    except OSError:
        return ""


def detect_format(path: str | Path) -> str:
    """The format the file's container and first record suggest (a key of FORMATS)."""
    container = detect_container(path)
    if container == "csv":  # alpaca's columns as a CSV (instruction, input, output): read as alpaca's records
        names = csv_columns(path)
        return "alpaca" if "instruction" in names and {"input", "output", "context", "response"} & set(names) else "csv"
    if container == "text":
        return container
    first = first_record(path)
    guess = guess_record_format(first) if first is not None else "jsonl"
    if container == "xlsx" and guess == "jsonl" and not {"prompt", "messages"} & set(first or ()):
        return "field"  # a sheet's columns by any names: the prompt column chosen in the dialog, as a CSV's
    return guess


def first_record(path: str | Path, split: str | None = None):
    """The file's first record (a dict, as a rule), or None where there is none that reads."""
    try:
        for item in open_reader(path, "jsonl", split):
            if isinstance(item, Line):
                if not item.text.strip():
                    continue
                try:
                    return json.loads(item.text)
                except ValueError:
                    return None
            return item.value if isinstance(item, Record) else None
    except (OSError, TableError):
        return None
    return None


def split_row_limit(path: str, max_rows: int | None = None) -> tuple[str, int | None]:
    """ms-swift's ``dataset#N``: the path, and the first N rows to read. A path that exists as written (a
    file named with a #) is taken as it is."""
    name, mark, count = path.rpartition("#")
    if not mark or Path(path).exists() or not count.isdigit() or int(count) < 1:
        return path, max_rows
    return name, int(count)


def csv_columns(path: str | Path) -> list[str]:
    """The CSV's header names, for the dialog that asks which one holds the prompts."""
    header, delimiter, _ = csv_layout(path)
    return next(csv.reader([header], delimiter=delimiter), []) if header else []


def prompt_column(path: str | Path) -> str | None:
    """The CSV's column that likely holds the prompts: the first named like one of LIKELY_PROMPT_COLUMNS, else
    the one whose first rows hold the most text (a "Frage" beside a "Nr"; numbers count as no text)."""
    columns = csv_columns(path)
    named = next((c for c in columns if c.strip().lower() in LIKELY_PROMPT_COLUMNS), None)
    return named or _wordiest_column(path, columns)


def _wordiest_column(path: str | Path, columns: list[str]) -> str | None:
    _, delimiter, named = csv_layout(path)
    lines = []
    for item in read_lines(path):
        if not isinstance(item, Line) or len(lines) > GUESS_LINES:
            break
        lines.append(item.text)
    try:
        rows = list(csv.reader(lines[1 + named:], delimiter=delimiter))
    except csv.Error:
        return None
    text = [sum(len(row[i]) for row in rows if i < len(row) and not _is_number(row[i])) for i in range(len(columns))]
    best = max(range(len(columns)), key=text.__getitem__, default=None)
    return columns[best] if best is not None and text[best] else None


def _is_number(cell: str) -> bool:
    try:
        float(cell.replace(",", "."))
    except ValueError:
        return False
    return True


def prompt_column_of(path: str | Path, fmt: str) -> str | None:
    """The column or field the open dialog would offer first for ``fmt``: a CSV's :func:`prompt_column`, a record
    field's likely one (by name, else the longest text of the first record); None for the other formats."""
    if fmt == "csv":
        return prompt_column(path)
    return next(iter(text_fields(first_record(path))), None) if fmt == "field" else None


def csv_layout(path: str | Path) -> tuple[str, str, bool]:
    """The header line, what separates the fields, and whether a first line ``sep=;`` named it (the header is
    then the second line). Otherwise the delimiter is the one of DELIMITERS that splits the header into the
    most names (Excel saves "CSV" with semicolons where the decimal mark is a comma), else a tab for .tsv and a
    comma for the rest."""
    lines = []
    for item in read_lines(path):
        if not isinstance(item, Line) or len(lines) == 2:
            break
        lines.append(item.text)
    lines += ["", ""]
    named = SEP_LINE.fullmatch(lines[0])
    if named:
        return lines[1], named.group(1), True
    default = "\t" if Path(path).suffix.lower() == ".tsv" else ","
    widths = {delimiter: len(next(csv.reader([lines[0]], delimiter=delimiter), [])) for delimiter in DELIMITERS}
    best = max(DELIMITERS, key=widths.__getitem__)
    return lines[0], best if widths[best] > widths[default] else default, False


def open_reader(path: str | Path, fmt: str, split: str | None = None, whole: bool = False):
    """What reads the file's records in its container: a LineReader (text, CSV, JSON lines), a
    JsonArrayReader or a TableReader; each has ``bytes_read`` and ``size`` for a progress bar. ``whole``: the file
    is read to its end (a workbook's sheet then in a process of its own)."""
    if fmt in ("csv", "text"):
        return LineReader(path)
    container = detect_container(path)
    if container in ("parquet", "arrow", "dataset", "xlsx"):
        return TableReader(path, split, whole=whole)
    return JsonArrayReader(path) if container in ("array", "object") else LineReader(path)


def parse_prompts(source, fmt: str, column: str | None = None,
                  split: str | None = None) -> Iterator[BatchPrompt | LineProblem]:
    """The file's prompts in order, and a problem for each record that is not one. ``source``: a path,
    or the reader :func:`open_reader` gave (the caller watches its progress)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown prompt-file format {fmt!r}; choose one of {', '.join(FORMATS)}")
    reader = source if hasattr(source, "bytes_read") else open_reader(source, fmt, split)
    unit = "row" if isinstance(reader, TableReader) else "line"
    checker = ImageChecker(images_folder(reader.path), unit)
    if fmt == "csv":
        yield from _csv_prompts(reader, column or "prompt", checker)
        return
    if fmt == "text":
        yield from _text_prompts(reader)
        return
    build = (_OpenAIBatchParser(checker).prompt if fmt == "openai"
             else (lambda n, r: record_prompt(fmt, n, r, checker, column)))
    records = reader if not isinstance(reader, LineReader) else (
        _csv_records(reader) if detect_container(reader.path) == "csv" else _json_lines(reader))
    for item in records:
        if isinstance(item, LineProblem):
            yield item
            continue
        try:
            yield build(item.number, item.value)
        except LineError as exc:
            yield LineProblem(item.number, str(exc), unit=unit)


def images_folder(path: Path) -> Path:
    """Where a file's relative image paths are read from: its folder (a datasets folder itself)."""
    path = Path(path).resolve()
    return path if path.is_dir() else path.parent


# ------------------------------------------------------------------ plain text and JSON lines
def _text_prompts(lines) -> Iterator[BatchPrompt | LineProblem]:
    for item in lines:
        if isinstance(item, LineProblem):
            yield item
        elif item.text.strip():
            yield BatchPrompt(item.line_no, prompt=item.text)


def _json_lines(lines) -> Iterator[Record | LineProblem]:
    for item in lines:
        if isinstance(item, LineProblem):
            yield item
        elif item.text.strip():
            try:
                yield Record(item.line_no, _json_object(item.text))
            except LineError as exc:
                yield LineProblem(item.line_no, str(exc))


def _json_object(text: str) -> dict | str:
    """A line's record: a JSON object, or a string (a prompt on its own)."""
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LineError(f"broken JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(record, (dict, str)):
        raise LineError(f"expected a JSON object {{...}} or a prompt string, got a JSON {type(record).__name__}")
    return record


# ------------------------------------------------------------------ OpenAI batch input
class _OpenAIBatchParser:
    """Lines of ``vllm run-batch``'s input; remembers the custom_ids seen, which must not repeat."""

    def __init__(self, checker: ImageChecker):
        self.seen: dict[str, int] = {}  # custom_id -> the line that used it first
        self.checker = checker

    def prompt(self, line_no: int, record) -> BatchPrompt:
        if not isinstance(record, dict):
            raise LineError(f"expected a JSON object {{...}}, got a JSON {type(record).__name__}")
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
        prompt = self._body_prompt(line_no, custom_id, url, body)
        self.seen[custom_id] = line_no
        return prompt

    def _body_prompt(self, line_no: int, custom_id: str, url: str, body: dict) -> BatchPrompt:
        if body.get("stream"):
            raise LineError("\"stream\": true is not supported in a batch (vLLM refuses it too)")
        sampling = tuple(record_sampling(body, "body."))
        if url == CHAT_URL:
            if "messages" not in body:
                raise LineError("missing field: body.messages")
            parts: list = []
            messages, images = with_images(line_no, parse_messages(body["messages"], parts), parts, [], self.checker)
            return BatchPrompt(line_no, messages=messages, custom_id=custom_id, url=url, sampling=sampling,
                               images=images)
        if "prompt" not in body:
            raise LineError("missing field: body.prompt")
        return BatchPrompt(line_no, prompt=prompt_text(body["prompt"]), custom_id=custom_id, url=url,
                           sampling=sampling)


# ------------------------------------------------------------------ CSV
def _csv_prompts(lines: LineReader, column: str, checker: ImageChecker) -> Iterator[BatchPrompt | LineProblem]:
    """The CSV's rows under its header, each a prompt from ``column``; a row's number is the line it starts on."""
    found: dict[str, int | None] = {}

    def on_header(line_no: int, names: list[str]) -> LineProblem | None:
        if column not in names:
            return LineProblem(line_no, f"the CSV has no column named {column!r} (its columns: "
                                        f"{', '.join(map(repr, names)) or 'none'})", fatal=True)
        found["index"] = names.index(column)
        found["image"] = next((names.index(n) for n in IMAGE_COLUMN_NAMES if n in names and n != column), None)
        return None

    for item in _csv_body(lines, on_header):
        yield item if isinstance(item, LineProblem) else _csv_prompt(item[1], found["index"], column, item[0],
                                                                      found["image"], checker)


def _csv_records(lines: LineReader) -> Iterator[Record | LineProblem]:
    """The CSV's rows as records of their header's names (alpaca's columns, a prompt with its completion), the
    empty cells left out."""
    names: list[str] = []
    for item in _csv_body(lines, lambda _, header: names.extend(header)):
        yield item if isinstance(item, LineProblem) else Record(item[0], {
            name: cell for name, cell in zip(names, item[1]) if cell.strip()})


def _csv_body(lines: LineReader, on_header) -> Iterator[tuple[int, list[str]] | LineProblem]:
    """The rows under the header, each with the line it starts on; ``on_header(line_no, names)`` sees the header
    first, and a problem it returns ends the reading. A row with more fields than the header is a problem."""
    width = None
    _, delimiter, named = csv_layout(lines.path)
    for item in csv_rows(lines, delimiter):
        if isinstance(item, LineProblem):
            yield item
            continue
        line_no, row = item
        if named and line_no == 1:
            continue
        if width is None:
            problem = on_header(line_no, row)
            if problem is not None:
                yield problem
                return
            width = len(row)
        elif any(cell.strip() for cell in row[width:]):  # a prompt cut at a delimiter it holds, else
            yield LineProblem(line_no, f"the row has {len(row)} fields, the header {width}: put a field that holds "
                                       f"{DELIMITER_NAMES.get(delimiter, repr(delimiter))} in double quotes")
        elif any(cell.strip() for cell in row):
            yield line_no, row


def _csv_prompt(row: list[str], index: int, column: str, line_no: int, image_index: int | None,
                checker: ImageChecker) -> BatchPrompt | LineProblem:
    if index >= len(row):
        return LineProblem(line_no, f"the row has {len(row)} field{'s' if len(row) != 1 else ''}; the "
                                    f"{column!r} column is field {index + 1}")
    if not row[index].strip():
        return LineProblem(line_no, f"the {column!r} field is empty")
    cell = row[image_index].strip() if image_index is not None and image_index < len(row) else ""
    if not cell:
        return BatchPrompt(line_no, prompt=row[index])
    try:
        sources = json.loads(cell) if cell.startswith("[") else [cell]
        if not isinstance(sources, list) or not all(isinstance(s, str) and s.strip() for s in sources):
            raise LineError("the image field must be a path or URL, or a JSON list of them")
        (message,), images = with_images(line_no, (Message("user", row[index]),), [], sources, checker)
    except (LineError, ValueError) as exc:
        return LineProblem(line_no, str(exc) if isinstance(exc, LineError) else
                           f"the image field is not a JSON list ({exc}): write one path, or [\"a.png\", \"b.png\"]")
    return BatchPrompt(line_no, prompt=message.content, images=images)
