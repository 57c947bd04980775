"""A CSV file's rows as a stream, each with the line it starts on; quoted fields may span lines.

A quote opened and never closed would make the rest of the file one field: it is reported at the row
where it opens, and the reading starts again on the line after it, so no row after it is lost. Other
broken rows (a character after a closing quote) are reported and skipped.
"""
from __future__ import annotations

import csv
from typing import Iterator

from workbench.batch.prompt_file import LineProblem, LineReader

UNCLOSED = ("a quote (\") opened in this row is never closed, so the rest of the file would be one field; "
            "close it (a quote inside a quoted field is written \"\"). The lines after it are read as rows")


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
    where = {"start": 0, "fatal": False}

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
            yield item.text + "\n"

    reader = csv.reader(texts(), delimiter=delimiter, strict=True)
    while True:
        where["start"] = 0
        try:
            row = next(reader, None)
        except csv.Error as exc:
            start = where["start"]
            if "unexpected end of data" in str(exc):
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
