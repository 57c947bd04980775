"""An Excel workbook (.xlsx, .xlsm) as a table of prompts: a sheet's first non-empty row names the columns, and
each row below it is a record of its cells by those names, numbered as Excel numbers its rows. Read through
openpyxl's read-only mode, a row at a time (a sheet is never loaded whole); a formula gives the value Excel last
saved. Opening a workbook reads its shared-strings table whole (all its text, as Excel saves it), so each thread
keeps its last workbook open: the open dialog's several looks (sheets, columns, first record) open it once.
"""
from __future__ import annotations

import threading
from pathlib import Path
from typing import Iterator

from workbench.batch.table_files import TableError

_held = threading.local()  # each thread's last workbook: (path, its mtime and size), the workbook, its file


def sheet_names(path: str | Path) -> list[str]:
    return list(_book(path).sheetnames)


def sheet_rows(path: str | Path, sheet: str | None = None) -> Iterator[tuple[int, dict, float]]:
    """The sheet's records: (Excel's row number, {column name: value}, the share of the sheet read so far). The
    first sheet where ``sheet`` is not one; rows with no value are skipped, and so are a row's empty cells."""
    found = _sheet(_book(path), sheet)
    total, names = max(1, found.max_row or 1), None
    for number, values in enumerate(found.iter_rows(values_only=True), 1):
        if not any(value not in (None, "") for value in values):
            continue
        if names is None:
            names = _names(values)
            continue
        record = {name: _value(value) for name, value in zip(names, values) if value is not None}
        yield number, record, number / total


def _book(path: str | Path):
    """The workbook, read-only: this thread's last one where the file is the same (its path, modification time and
    size), else opened from a stream (so that a workbook named otherwise reads too) in its place."""
    path = Path(path)
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    held = getattr(_held, "workbook", None)
    if held is not None and held[0] == key:
        return held[1]
    book, stream = _open(path)
    if held is not None:
        _close(held)
    _held.workbook = (key, book, stream)
    return book


def _open(path: Path):
    import openpyxl

    stream = open(path, "rb")
    try:
        return openpyxl.load_workbook(stream, read_only=True, data_only=True), stream
    except Exception as exc:  # noqa: BLE001 (openpyxl raises zipfile's, the XML parser's and its own errors)
        stream.close()
        raise TableError(f"{path.name} cannot be read as an Excel workbook ({type(exc).__name__}: {exc}); if it "
                         "has a password, save a copy without one; or save it from Excel as CSV UTF-8") from None


def _close(held) -> None:
    _, book, stream = held
    book.close()
    stream.close()


def _sheet(book, sheet: str | None):
    return book[sheet] if sheet in book.sheetnames else book[book.sheetnames[0]]


def _names(values: tuple) -> list[str]:
    """A header row's names; a cell left empty names its column by its letter ("column C")."""
    from openpyxl.utils import get_column_letter

    return [str(value).strip() if value not in (None, "") else f"column {get_column_letter(i)}"
            for i, value in enumerate(values, 1)]


def _value(value):
    """A cell's value as a record holds it: text and numbers as they are, a date or time as its ISO text."""
    return value if isinstance(value, (str, int, float)) else value.isoformat() if hasattr(value, "isoformat") \
        else str(value)
