"""A JSON file that holds one array of records (``[{...}, {...}]``, as alpaca's and LLaMA-Factory's datasets
are written), read as a stream: a chunk at a time, one record decoded at a time, never the whole text. An
object that holds the array (``{"version": 2, "data": [...]}``, as ``json.dump(..., indent=2)`` of a dict
writes it) is read by the array of its first key that holds one; objects that hold none are records, one after
another (as ``jq .`` prints them).

Each record comes out with the line it starts on, or a :class:`LineProblem` where the text is not a JSON
array or a record is broken (the reading ends there: after broken JSON there is no telling where the next
record starts).
"""
from __future__ import annotations

import codecs
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from workbench.batch.prompt_file import LineProblem, text_encoding

CHUNK_CHARS = 1 << 16
MAX_RECORD_CHARS = 16 << 20  # a longer record is reported, never held
_decoder = json.JSONDecoder()
_SPACE = " \t\r\n"


@dataclass(frozen=True, slots=True)
class Record:
    number: int  # the line the record starts on
    value: object


class JsonArrayReader:
    """The array's records in order; ``bytes_read`` and ``size`` say how far it has got."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.size = self.path.stat().st_size
        self.bytes_read = 0

    def __iter__(self) -> Iterator[Record | LineProblem]:
        with open(self.path, "rb") as stream:
            yield from _Scanner(stream, self).records()


class _Scanner:
    def __init__(self, stream, progress: JsonArrayReader):
        self.stream, self.progress = stream, progress
        self.encoding = text_encoding(stream.read(2))  # UTF-8, or UTF-16 with its byte-order mark
        stream.seek(0)
        self.decode = codecs.getincrementaldecoder(self.encoding)()
        self.buffer, self.at, self.line = "", 0, 1  # text held, where the scan is in it, the line there

    def _more(self, size: int = CHUNK_CHARS) -> bool:
        raw = self.stream.read(size)
        self.progress.bytes_read += len(raw)
        try:
            text = self.decode.decode(raw, final=not raw)
        except UnicodeDecodeError as exc:
            raise _Stop(f"not {self.encoding.upper()} text ({exc.reason}); save the file as UTF-8") from None
        if not raw:
            return False  # the end: the text held stays as it is (an error's position still points into it)
        self.buffer = self.buffer[self.at:] + text
        self.at = 0
        return True

    def _skip_space(self) -> str:
        """The next character that is not white space ("" at the end of the file)."""
        while True:
            while self.at < len(self.buffer) and self.buffer[self.at] in _SPACE:
                self.line += self.buffer[self.at] == "\n"
                self.at += 1
            if self.at < len(self.buffer):
                return self.buffer[self.at]
            if not self._more():
                return ""

    def records(self) -> Iterator[Record | LineProblem]:
        try:
            if self.progress.size == 0:
                raise _Stop("the file is empty (0 bytes): there are no prompts to read")
            self._more()
            if self.buffer.startswith("\ufeff"):
                self.at = 1
            first = self._skip_space()
            if first == "{" and not self._enter_object():
                yield from self._one_after_another()
                return
            if first not in "{[":
                raise _Stop("not a JSON array: the file should start with [ (or hold one record a line, JSONL)")
            self.at += 1
            if self._skip_space() == "]":
                return
            while True:
                yield self._record()
                following = self._skip_space()
                self.at += 1
                if following == "]":
                    return
                if not following:
                    raise _Stop("the file ends before the array is closed with ]")
                if following != ",":
                    raise _Stop(f"expected , or ] after a record, found {following or 'the end of the file'}")
                self._skip_space()
        except _Stop as stop:
            self.progress.bytes_read = self.progress.size
            yield LineProblem(self.line, str(stop), fatal=True)

    def _enter_object(self) -> bool:
        """Moves to the array of the object's first key that holds one (the values before it skipped); False,
        with the scan back at the file's start, where the object holds none: it is a record itself."""
        self.at += 1
        while True:
            found = self._skip_space()
            if found == ",":
                self.at += 1
                continue
            if found in ("}", ""):
                self._restart()
                return False
            key = self._record().value
            if not isinstance(key, str) or self._skip_space() != ":":
                raise _Stop("broken JSON: a key in double quotes and a colon expected in the object")
            self.at += 1
            if self._skip_space() == "[":
                return True
            self._record()  # a value that is not the records: skipped

    def _one_after_another(self) -> Iterator[Record]:
        """Records written one after another, each over many lines (as ``jq .`` prints them)."""
        while self._skip_space():
            yield self._record()

    def _restart(self) -> None:
        self.stream.seek(0)
        self.progress.bytes_read = 0
        self.decode = codecs.getincrementaldecoder(self.encoding)()
        self.buffer, self.at, self.line = "", 0, 1
        self._more()
        self.at = 1 if self.buffer.startswith("\ufeff") else 0

    def _record(self) -> Record:
        start_line, chunk = self.line, CHUNK_CHARS
        while True:
            try:
                value, end = _decoder.raw_decode(self.buffer, self.at)
            except json.JSONDecodeError as exc:
                held = len(self.buffer) - self.at
                if held <= MAX_RECORD_CHARS and self._more(chunk):
                    chunk *= 2  # a long record: fewer, larger reads
                    continue
                self.line = start_line + self.buffer.count("\n", self.at, exc.pos)
                if held > MAX_RECORD_CHARS:
                    raise _Stop(f"broken JSON ({exc.msg}), or a record longer than {MAX_RECORD_CHARS >> 20} MB; "
                                "the records before it are read") from None
                if exc.pos >= len(self.buffer) - 1 or exc.msg.startswith("Unterminated string"):
                    raise _Stop("the file ends inside a record: the record and the array are not closed") from None
                raise _Stop(f"broken JSON: {exc.msg}; the records before it are read") from None
            if end == len(self.buffer) and self._more(chunk):
                continue  # a number may go on in the next chunk
            self.line += self.buffer.count("\n", self.at, end)
            self.at = end
            return Record(start_line, value)


class _Stop(Exception):
    """The text cannot be read on: its reason."""
