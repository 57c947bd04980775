"""A CSV file's rows as a stream, each with the line it starts on; quoted fields may span lines.

A quote opened and not closed would make the lines after it part of one field (up to the next quote, or
the end of the file): a broken row that spans lines is reported at the line where it starts, and the
reading starts again on the line after it, so no row after it is lost. A broken row of one line (a
character after a closing quote) is reported and skipped.
"""
from __future__ import annotations

import csv
from typing import Iterator

from workbench.batch.prompt_file import LineProblem, LineReader

# The CSV files the app writes (a batch's results, a session's requests and time series) start with UTF-8's
# byte-order mark: without it Excel reads them as the system's code page and shows "Ã©" for "é". Python
# reads them with "utf-8-sig", pandas and the batch pane with no option at all.
WRITE_ENCODING = "utf-8-sig"

UNCLOSED = ("a quote (\") opened in this row is not closed, so the lines after it would be one field; close it "
            "(a quote inside a quoted field is written \"\"). The lines after it are read as rows")


def csv_rows(lines: LineReader, delimiter: str = ",") -> Iterator[tuple[int, list[str]] | LineProblem]:
    after = 0  # the lines up to this one are read already (a restart after an unclosed quote)
    while True:
        unclosed_at = yield from _one_pass(lines, delimiter, after)
        if unclosed_at is None:
            return
        after = unclosed_at


def _one_pass(lines: LineReader, delimiter: str, after: int):
    """Rows from line ``after + 1`` on; returns the line of an unclosed quote (to start again after it)."""
    problems: list[LineProblem] = []
    where = {"start": 0, "last": 0, "fatal": False}

    def texts() -> Iterator[str]:
        for item in lines:
            if isinstance(item, LineProblem):
                if item.line_no > after or item.fatal:
                    problems.append(item)
                    where["fatal"] = where["fatal"] or item.fatal
                continue
            if item.line_no <= after:
                continue
            where["start"] = where["start"] or item.line_no
            where["last"] = item.line_no
            yield item.text + "\n"

    reader = csv.reader(texts(), delimiter=delimiter, strict=True)
    while True:
        where["start"] = 0
        try:
            row = next(reader, None)
        except csv.Error as exc:
            start = where["start"]
            if where["last"] > start or "unexpected end of data" in str(exc):
                yield from problems
                yield LineProblem(start, UNCLOSED)
                return start
            problems.append(LineProblem(start, f"not valid CSV: {exc}; quote a field that holds the delimiter, "
                                               "a quote or a line break"))
            row = []
        yield from problems
        problems.clear()
        if row is None or where["fatal"]:
            return None
        if row:
            yield where["start"], row
