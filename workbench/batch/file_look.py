"""What the open dialog shows of a prompt file before it is read: how the file holds its records, the format they
suggest, a datasets folder's splits or a workbook's sheets, the columns or fields a prompt can come from (the
likely one first), and the first record as the chosen format reads it.

Each look reads the file (a workbook's whole text as it opens: 0.7 s at 100,000 rows), so the dialog asks for them
on a thread of its own (``ui/open_prompt_dialog.py``); these functions are that thread's work.
"""
from __future__ import annotations

from dataclasses import dataclass

from workbench.batch.formats import (
    csv_columns, detect_container, detect_format, first_record, parse_prompts, prompt_column,
)
from workbench.batch.prompt_file import LineProblem, LineReader
from workbench.batch.records import elide, text_fields
from workbench.batch.table_files import TableError, splits

PREVIEW_LINES = 200  # the lines a CSV's first record is looked for in (a quote left open reads no further)
ASKED_CHARS, REFERENCE_CHARS = 160, 120  # the first record's prompt and answer, shortened


@dataclass(frozen=True)
class FileLook:
    """The dialog's first look at a file: everything it offers, and the first record as first offered."""

    container: str  # a key of formats.CONTAINERS
    detected: str  # a key of formats.FORMATS
    splits: tuple[str, ...]  # a DatasetDict's splits, a workbook's sheets; () for one table
    columns: tuple[str, ...]  # a CSV's columns, or the first record's text fields (the likely prompt's first)
    column: str | None  # the one offered first
    preview: str  # the first record, read as ``detected`` by ``column``


def look_at(path: str) -> FileLook:
    container = detect_container(path)
    detected = detect_format(path)
    try:
        names = tuple(splits(path)) if container in ("dataset", "xlsx") else ()
    except TableError:
        names = ()  # a workbook that cannot be read says so in the preview
    split = names[0] if names else None
    if container == "csv":
        columns = tuple(csv_columns(path)) or ("prompt",)
        column = prompt_column(path) or columns[0]
    elif container == "text":
        columns, column = (), None
    else:
        columns = fields_of(path, split)
        column = columns[0]
    shown = column if detected in ("csv", "field") else None
    return FileLook(container, detected, names, columns, column, first_record_preview(path, detected, split, shown))


def fields_of(path: str, split: str | None) -> tuple[str, ...]:
    """The text fields of the first record of ``split`` (a sheet's columns), the likely prompt's first."""
    return tuple(text_fields(first_record(path, split))) or ("question",)


def sheet_look(path: str, fmt: str, split: str | None) -> tuple[tuple[str, ...], str]:
    """A workbook's other sheet: its columns, and its first record read by the first of them where ``fmt`` reads
    a named column."""
    fields = fields_of(path, split)
    return fields, first_record_preview(path, fmt, split, fields[0] if fmt in ("csv", "field") else None)


def first_record_preview(path: str, fmt: str, split: str | None, column: str | None = None) -> str:
    """The file's first record as the chosen format reads it: what is asked, and the reference answer."""
    try:
        source = LineReader(path, max_lines=PREVIEW_LINES) if fmt in ("csv", "text") else path
        items = parse_prompts(source, fmt, column, split=split)
        item = next(items, None)
        items.close()
    except (OSError, TableError) as exc:
        return f"Cannot be read: {exc}"
    if item is None:
        return "The file holds no records."
    if isinstance(item, LineProblem):
        return f"{item}"
    asked = elide(item.preview(), ASKED_CHARS)
    turns = f" ({len(item.messages)} messages)" if item.messages and len(item.messages) > 1 else ""
    reference = f"\nReference: {elide(item.reference, REFERENCE_CHARS)}" if item.reference is not None else ""
    return f"Asks: {asked}{turns}{reference}"
