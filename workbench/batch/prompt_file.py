"""A prompt file read as a stream of lines: never the whole text at once, never a whole overlong line.

Each line comes out as a :class:`Line` or, where it cannot be read as text, a :class:`LineProblem`
naming the line and the reason: not UTF-8, longer than the limit, binary data, an empty file. Text is
UTF-8 (a byte-order mark or none), or UTF-16 with its byte-order mark, as Windows' Notepad ("Unicode") and
PowerShell's ``>`` write it.
"""
from __future__ import annotations

import codecs
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterator

MAX_LINE_BYTES = 1 << 20  # a longer line is reported and skipped, never held
BINARY_PROBE_BYTES = 8192  # a NUL byte in the file's first 8 KiB: a binary file, not text


@dataclass(frozen=True, slots=True)
class Line:
    line_no: int  # 1-based, as an editor counts
    text: str  # without its line ending


@dataclass(frozen=True, slots=True)
class LineProblem:
    line_no: int
    reason: str
    fatal: bool = False  # nothing after it can be read (a binary file, an empty one, a missing column)
    unit: str = "line"  # "row" in a table file (Parquet, Arrow): line_no is then the row's number

    def __str__(self) -> str:
        return f"{self.unit} {self.line_no}: {self.reason}"


def _size_text(num_bytes: int) -> str:
    return f"{num_bytes / (1 << 20):.1f} MB" if num_bytes >= 1 << 20 else f"{num_bytes:,} bytes"


def _skip_rest_of_line(stream: BinaryIO, chunk: int) -> int:
    """Reads on to the end of an overlong line, a chunk at a time; returns the bytes skipped."""
    skipped = 0
    while True:
        part = stream.readline(chunk)
        skipped += len(part)
        if not part or part.endswith(b"\n"):
            return skipped


def _decode(raw: bytes, line_no: int) -> Line | LineProblem:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        byte = raw[exc.start]
        return LineProblem(line_no, f"not UTF-8 text: byte 0x{byte:02x} at byte {exc.start + 1} of the line "
                                    f"({exc.reason}); save the file as UTF-8")
    if text.startswith("\ufeff"):
        text = text[1:]  # a byte-order mark, as some editors write: on a later line where files were joined (cat)
    return Line(line_no, text.rstrip("\r\n"))


# Files a prompt file is often packed in, by their first bytes: what the user is told to do with them.
PACKED = (
    (b"\x1f\x8b", "a gzip-compressed file, not text: unpack it first (gunzip, or 7-Zip) and open the file it gives"),
    (b"PK\x03\x04", "a zip archive, not text: unpack it first and open the prompt file inside (a spreadsheet saved as "
                    ".ods is one too: save it as .xlsx or as CSV UTF-8)"),
    (b"\xd0\xcf\x11\xe0", "an Excel 97-2003 workbook (.xls) or another older Office file, not text: save it from "
                          "Excel as .xlsx or as CSV UTF-8 and open that"),
    (b"\xfd7zXZ\x00", "an xz-compressed file, not text: unpack it first (unxz) and open the file it gives"),
    (b"\x28\xb5\x2f\xfd", "a zstd-compressed file, not text: unpack it first (unzstd) and open the file it gives"),
)


def text_encoding(head: bytes) -> str:
    """The encoding of a text file that starts with ``head``: "utf-16" where it starts with UTF-16's byte-order
    mark (Python's codec reads the mark, either byte order, and drops it), else "utf-8"."""
    return "utf-16" if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) else "utf-8"


def _looks_like_utf16(head: bytes) -> bool:
    """Text of mostly ASCII in UTF-16 with no byte-order mark: every other byte NUL."""
    pairs = len(head) // 2
    return pairs >= 4 and max(head[0:2 * pairs:2].count(0), head[1:2 * pairs:2].count(0)) >= 0.9 * pairs


def _binary_problem(stream: BinaryIO) -> LineProblem | None:
    head = stream.read(BINARY_PROBE_BYTES)
    stream.seek(0)
    if not head:
        return LineProblem(1, "the file is empty (0 bytes): there are no prompts to read", fatal=True)
    for magic, what in PACKED:
        if head.startswith(magic):
            return LineProblem(1, f"this is {what}", fatal=True)
    nul = head.find(b"\x00")
    if nul < 0 or text_encoding(head) == "utf-16":
        return None
    if _looks_like_utf16(head):
        return LineProblem(1, "UTF-16 text without a byte-order mark, which cannot be told from binary data: save "
                              "the file as UTF-8 (or as UTF-16 with its byte-order mark)", fatal=True)
    line_no = head.count(b"\n", 0, nul) + 1
    return LineProblem(line_no, f"binary data (a NUL byte at byte {nul + 1} of the file): this is not a text "
                                "file of prompts", fatal=True)


class LineReader:
    """The file's lines in order, one at a time; a binary or empty file gives one fatal problem.
    ``bytes_read`` and ``size`` say how far it has got (for a progress bar). ``max_lines``: stop after that many
    (a preview's look at the start of a file of any size)."""

    def __init__(self, path: str | Path, max_line_bytes: int = MAX_LINE_BYTES, max_lines: int | None = None):
        self.path = Path(path)
        self.max_line_bytes = max_line_bytes
        self.max_lines = max_lines
        self.size = self.path.stat().st_size
        self.bytes_read = 0

    def __iter__(self) -> Iterator[Line | LineProblem]:
        with open(self.path, "rb") as stream:
            problem = _binary_problem(stream)
            if problem is not None:
                self.bytes_read = self.size
                yield problem
                return
            if text_encoding(stream.read(2)) == "utf-16":
                stream.seek(0)
                yield from self._lines(codecs.EncodedFile(stream, "utf-8", "utf-16"), stream)
            else:
                stream.seek(0)
                yield from self._lines(stream, stream)

    def _lines(self, stream: BinaryIO, file: BinaryIO) -> Iterator[Line | LineProblem]:
        """``stream``'s lines as UTF-8 bytes; ``file`` is where it reads them from (for progress: a UTF-16 file's
        position, where its UTF-8 bytes are not its own)."""
        limit, line_no, recoded = self.max_line_bytes, 0, stream is not file
        while self.max_lines is None or line_no < self.max_lines:
            raw = stream.readline(limit + 1)
            self.bytes_read = min(self.size, file.tell()) if recoded else self.bytes_read + len(raw)
            if not raw:
                self.bytes_read = self.size
                return
            line_no += 1
            if len(raw) > limit and not raw.endswith(b"\n"):
                skipped = _skip_rest_of_line(stream, limit)
                self.bytes_read = min(self.size, file.tell()) if recoded else self.bytes_read + skipped
                yield LineProblem(line_no, f"the line is {_size_text(len(raw) + skipped)} long; the limit is "
                                           f"{_size_text(limit)} a line")
            elif b"\x00" in raw:
                yield LineProblem(line_no, "binary data (a NUL byte) in the line")
            else:
                yield _decode(raw, line_no)


def read_lines(path: str | Path, max_line_bytes: int = MAX_LINE_BYTES) -> Iterator[Line | LineProblem]:
    """The file's lines in order (see :class:`LineReader`)."""
    return iter(LineReader(path, max_line_bytes))
