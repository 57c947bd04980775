"""An Excel workbook (.xlsx, .xlsm) as a table of prompts: a sheet's first non-empty row names the columns, and
each row below it is a record of its cells by those names, numbered as Excel numbers its rows. Read through
openpyxl's read-only mode, a row at a time (a sheet is never loaded whole); a formula gives the value Excel last
saved. Opening a workbook reads its shared-strings table whole (all its text, as Excel saves it), so each thread
keeps its last workbook open: the open dialog's several looks (sheets, columns, first record) open it once.

A whole sheet (the batch pane's read) is read in a process of its own (:func:`sheet_rows_apart`, this module run as
``python -m workbench.batch.workbook PATH SHEET``), its records sent back as JSON lines: openpyxl's parsing held
Python's interpreter lock on the pane's worker for up to 550 ms at a time at 100,000 rows, and the window waited.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path
from xml.etree import ElementTree
from typing import Iterator

from workbench.batch.table_files import TableError

_held = threading.local()  # each thread's last workbook: (path, its mtime and size), the workbook, its file


def sheet_names(path: str | Path) -> list[str]:
    """The workbook's sheets in its order, read from its ``xl/workbook.xml`` alone: opening the workbook reads all
    its text (0.77 s at 100,000 rows), and the pane asks for the sheets on the GUI thread. A file that is no
    workbook is opened, to say why."""
    try:
        with zipfile.ZipFile(path) as archive:
            root = ElementTree.fromstring(archive.read("xl/workbook.xml"))
    except (OSError, zipfile.BadZipFile, KeyError, ElementTree.ParseError):
        return list(_book(path).sheetnames)
    return [element.get("name", "") for element in root.iter() if element.tag.rpartition("}")[2] == "sheet"]


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


def sheet_rows_apart(path: str | Path, sheet: str | None = None) -> Iterator[tuple[int, dict, float]]:
    """:func:`sheet_rows`, read in a process of its own; the process ends with the generator (read to its end or
    closed). TableError where the workbook cannot be read, with the reason the process gave."""
    said = tempfile.TemporaryFile()  # its warnings and a crash's trace: a pipe left unread could fill and stop it
    process = subprocess.Popen([sys.executable, "-m", "workbench.batch.workbook", str(path), sheet or ""],
                               stdout=subprocess.PIPE, stderr=said, stdin=subprocess.DEVNULL)
    try:
        for line in process.stdout:
            item = json.loads(line)
            if isinstance(item, dict):
                raise TableError(item["error"])
            yield item[0], item[1], item[2]
        if process.wait() != 0:
            said.seek(0)
            last = said.read().decode("utf-8", "replace").strip().splitlines()[-1:]
            reason = "; ".join(last) or f"its reading process ended with {process.returncode}"
            raise TableError(f"{Path(path).name} could not be read to its end ({reason})")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
        said.close()


def _send_rows(path: str, sheet: str | None) -> int:
    """The reading process: each record as a JSON line [row number, record, share read], or {"error": why}."""
    out = sys.stdout
    try:
        try:
            for number, record, share in sheet_rows(path, sheet):
                out.write(json.dumps([number, record, share]) + "\n")
        except BrokenPipeError:
            raise
        except (TableError, OSError, ValueError) as exc:
            out.write(json.dumps({"error": str(exc)}) + "\n")
        out.flush()
    except BrokenPipeError:  # the reader let go (a row limit met, the file opened again)
        sys.stdout = None  # nothing more to flush at exit
    return 0


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


if __name__ == "__main__":
    sys.exit(_send_rows(sys.argv[1], sys.argv[2] or None))
