"""An Excel workbook (.xlsx, .xlsm) as a table of prompts: a sheet's first non-empty row names the columns, and
each row below it is a record of its cells by those names, numbered as Excel numbers its rows. Read through
openpyxl's read-only mode, a row at a time (a sheet is never loaded whole); a formula gives the value Excel last
saved.

Rows are read in a process of their own (this module, run as ``python -m workbench.batch.workbook``) and sent back
as JSON lines: opening a workbook reads its shared-strings table whole (all its text, as Excel saves it: 0.7 s at
100,000 rows), and openpyxl's parse in the window's process held Python's interpreter lock for up to 550 ms at a
time. :func:`sheet_rows` streams a whole sheet (the batch pane's read); :func:`sheet_head` gives a sheet's first
rows (the open dialog's looks: the format, the columns, the first record), read for every sheet at once and kept
while the file is unchanged. :func:`sheet_names` reads the workbook's ``xl/workbook.xml`` alone.
"""
from __future__ import annotations

import itertools
import json
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Iterator
from xml.etree import ElementTree

from workbench.batch.table_files import TableError

HEAD_ROWS = 20  # the records of each sheet read for the dialog's looks; a look that reads past them reads on
_last_heads: dict = {}  # the workbook looked at last: "key" (its path, modification time and size), "heads"
_heads_lock = threading.Lock()


def sheet_names(path: str | Path) -> list[str]:
    """The workbook's sheets in its order, from its ``xl/workbook.xml`` alone (the pane asks on the GUI thread). A
    file that is no workbook is opened, to say why (it fails at once)."""
    try:
        with zipfile.ZipFile(path) as archive:
            root = ElementTree.fromstring(archive.read("xl/workbook.xml"))
    except (OSError, zipfile.BadZipFile, KeyError, ElementTree.ParseError):
        return list(_open(Path(path)).sheetnames)
    return [element.get("name", "") for element in root.iter() if element.tag.rpartition("}")[2] == "sheet"]


def sheet_rows(path: str | Path, sheet: str | None = None) -> Iterator[tuple[int, dict, float]]:
    """The sheet's records: (Excel's row number, {column name: value}, the share of the sheet read so far), read in
    a process of its own that ends with the generator (read to its end or closed). The first sheet where ``sheet``
    is not one; rows with no value are skipped, and so are a row's empty cells. TableError where the workbook
    cannot be read, with the reason."""
    yield from map(tuple, _apart("rows", path, sheet or ""))


def sheet_head(path: str | Path, sheet: str | None = None) -> Iterator[tuple[int, dict, float]]:
    """:func:`sheet_rows`, its first HEAD_ROWS records from the heads of all the sheets, read in one process and
    kept while the file is unchanged (the dialog looks several times: sheets, columns, first record)."""
    heads = _heads(path)
    name = sheet if sheet in heads else next(iter(heads), None)
    rows, complete = heads[name] if name is not None else ([], True)
    yield from map(tuple, rows)
    if not complete:
        last = rows[-1][0]
        yield from (row for row in sheet_rows(path, name) if row[0] > last)


def _heads(path: str | Path) -> dict:
    path = Path(path)
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    with _heads_lock:
        if _last_heads.get("key") == key:
            return _last_heads["heads"]
    heads = next(_apart("heads", path))["heads"]
    with _heads_lock:
        _last_heads.update(key=key, heads=heads)
    return heads


def _apart(*argv) -> Iterator:
    """What this module run as a process with ``argv`` writes, a JSON value a line; TableError for an error it
    names, or where it ends otherwise than well. The process is ended with the generator."""
    path = Path(argv[1])
    said = tempfile.TemporaryFile()  # its warnings and a crash's trace: a pipe left unread could fill and stop it
    process = subprocess.Popen([sys.executable, "-m", "workbench.batch.workbook", *map(str, argv)],
                               stdout=subprocess.PIPE, stderr=said, stdin=subprocess.DEVNULL)
    try:
        for line in process.stdout:
            item = json.loads(line)
            if isinstance(item, dict) and "error" in item:
                raise TableError(item["error"])
            yield item
        if process.wait() != 0:
            said.seek(0)
            last = said.read().decode("utf-8", "replace").strip().splitlines()[-1:]
            reason = "; ".join(last) or f"its reading process ended with {process.returncode}"
            raise TableError(f"{path.name} could not be read to its end ({reason})")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
        said.close()


# ------------------------------------------------------------------ the reading process
def _main(argv: list[str]) -> int:
    """``rows PATH SHEET``: each record as a JSON line [row number, record, share read]; ``heads PATH``: one line
    {"heads": {sheet: [its first HEAD_ROWS records, whether that is all of them]}}; {"error": why} where the
    workbook cannot be read."""
    try:
        for line in _lines(argv):
            sys.stdout.write(line)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader let go (a row limit met, the file opened again)
        sys.stdout = None  # nothing more to flush at exit
    return 0


def _lines(argv: list[str]) -> Iterator[str]:
    try:
        book = _open(Path(argv[1]))
        if argv[0] == "heads":
            yield json.dumps({"heads": _read_heads(book)}) + "\n"
            return
        for row in _read_sheet(book, argv[2] or None):
            yield json.dumps(row) + "\n"
    except (TableError, OSError, ValueError) as exc:
        yield json.dumps({"error": str(exc)}) + "\n"


def _read_heads(book) -> dict:
    heads = {}
    for name in book.sheetnames:
        rows = list(itertools.islice(_read_sheet(book, name), HEAD_ROWS + 1)) if _is_table(book[name]) else []
        heads[name] = [rows[:HEAD_ROWS], len(rows) <= HEAD_ROWS]
    return heads


def _read_sheet(book, sheet: str | None) -> Iterator[tuple[int, dict, float]]:
    found = book[sheet] if sheet in book.sheetnames else book[book.sheetnames[0]]
    if not _is_table(found):
        return
    total, names = max(1, found.max_row or 1), None
    for number, values in enumerate(found.iter_rows(values_only=True), 1):
        if not any(value not in (None, "") for value in values):
            continue
        if names is None:
            names = _names(values)
            continue
        record = {name: _value(value) for name, value in zip(names, values) if value is not None}
        yield number, record, number / total


def _is_table(sheet) -> bool:
    return hasattr(sheet, "iter_rows")  # a chart sheet has no rows


def _open(path: Path):
    """The workbook, read-only, opened from a stream (so that a workbook named otherwise reads too)."""
    import openpyxl

    try:
        return openpyxl.load_workbook(open(path, "rb"), read_only=True, data_only=True)  # noqa: SIM115 (kept open)
    except Exception as exc:  # noqa: BLE001 (openpyxl raises zipfile's, the XML parser's and its own errors)
        raise TableError(f"{path.name} cannot be read as an Excel workbook ({type(exc).__name__}: {exc}); if it "
                         "has a password, save a copy without one; or save it from Excel as CSV UTF-8") from None


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
    sys.exit(_main(sys.argv[1:]))
