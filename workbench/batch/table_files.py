"""Datasets stored as columns: Parquet, Arrow (the IPC file or stream format) and a Hugging Face ``datasets``
folder written by ``save_to_disk`` (its ``state.json`` lists the Arrow shards; a ``DatasetDict`` folder has
one such folder per split). Read through pyarrow a record batch at a time, never whole: each row comes out
as a dict with its 1-based row number. An Excel workbook is a table too (``workbook``): its sheets are its
splits, its rows numbered as Excel numbers them.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from workbench.batch.json_array import Record
from workbench.batch.prompt_file import LineProblem

BATCH_ROWS = 512
PARQUET_MAGIC, ARROW_FILE_MAGIC, ARROW_STREAM_MARK = b"PAR1", b"ARROW1", b"\xff\xff\xff\xff"
TABLE_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".arrow": "arrow", ".feather": "arrow", ".ipc": "arrow",
                  ".xlsx": "xlsx", ".xlsm": "xlsx"}
DATASET_FILES = ("state.json", "dataset_dict.json", "dataset_info.json")


class TableError(ValueError):
    """The file or folder cannot be read as a table: the reason and the fix."""


def table_kind(path: str | Path) -> str | None:
    """"parquet", "arrow", "xlsx" or "dataset" (a save_to_disk folder, or a file inside one that names it), or
    None."""
    path = Path(path)
    if path.is_dir() or path.name in DATASET_FILES:
        return "dataset"
    if path.suffix.lower() in TABLE_SUFFIXES:
        return TABLE_SUFFIXES[path.suffix.lower()]
    try:
        with open(path, "rb") as stream:
            head = stream.read(8)
    except OSError:
        return None
    if head.startswith(PARQUET_MAGIC):
        return "parquet"
    if head.startswith(b"PK\x03\x04") and _is_workbook(path):
        return "xlsx"  # a workbook named otherwise
    if head.startswith(ARROW_FILE_MAGIC):
        return "arrow"
    return None


def _is_workbook(path: Path) -> bool:
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            return "xl/workbook.xml" in archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def dataset_folder(path: str | Path) -> Path:
    path = Path(path)
    return path if path.is_dir() else path.parent


def splits(path: str | Path) -> list[str]:
    """A DatasetDict folder's splits, in its own order; [] for a folder of one dataset. A workbook's sheets."""
    if table_kind(path) == "xlsx":
        from workbench.batch.workbook import sheet_names

        return sheet_names(path)
    listing = dataset_folder(path) / "dataset_dict.json"
    if not listing.is_file():
        return []
    try:
        return list(json.loads(listing.read_text(encoding="utf-8"))["splits"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TableError(f"{listing} cannot be read ({exc}); save the dataset again with save_to_disk") from None


def shards(path: str | Path, split: str | None = None) -> list[Path]:
    """The Arrow files of a save_to_disk folder (of ``split``, for a DatasetDict), in order."""
    folder = dataset_folder(path)
    names = splits(folder)
    if names:
        folder = folder / (split if split in names else _preferred_split(names))
    state = folder / "state.json"
    if not state.is_file():
        raise TableError(f"{folder} is not a folder saved with datasets' save_to_disk (it has no state.json); "
                         "open the dataset's .parquet or .arrow file, or save it with save_to_disk")
    try:
        files = [folder / item["filename"] for item in json.loads(state.read_text(encoding="utf-8"))["_data_files"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TableError(f"{state} cannot be read ({exc}); save the dataset again with save_to_disk") from None
    missing = [f.name for f in files if not f.is_file()]
    if missing:
        raise TableError(f"{folder} lacks {', '.join(missing)}, which its state.json lists; copy the whole folder")
    return files


def _preferred_split(names: list[str]) -> str:
    """The split a batch run asks first: the test split, then validation, else the first."""
    return next((n for n in ("test", "validation", "eval") if n in names), names[0])


class TableReader:
    """A table file's (or save_to_disk folder's) rows in order, as :class:`Record` objects numbered from 1;
    a file pyarrow cannot read gives one fatal problem. ``bytes_read`` and ``size`` say how far it has got."""

    def __init__(self, path: str | Path, split: str | None = None, whole: bool = False):
        """``whole``: the file is read to its end (the pane's read), else its first rows are looked at (a workbook's
        then come from the heads of its sheets, read once)."""
        self.path, self.kind, self.whole = Path(path), table_kind(path), whole
        try:
            names = splits(path) if self.kind in ("dataset", "xlsx") else []
        except TableError:
            if self.kind != "xlsx":
                raise
            names = []  # a workbook that cannot be read says so as its first row's problem
        first = names[0] if self.kind == "xlsx" and names else _preferred_split(names) if names else None
        self.split = split if split in names else first
        self.files = shards(path, self.split) if self.kind == "dataset" else [self.path]
        self.size = sum(f.stat().st_size for f in self.files)
        self.bytes_read = 0

    def __iter__(self) -> Iterator[Record | LineProblem]:
        if self.kind == "xlsx":
            yield from self._sheet_records()
            return
        number = 0
        for file in self.files:
            try:
                for batch, done in self._batches(file):
                    for row in batch.to_pylist():
                        number += 1
                        yield Record(number, row)
                    self.bytes_read = done
            except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
                self.bytes_read = self.size
                yield LineProblem(number + 1, f"{file.name} cannot be read as {self._label()}: {exc}", fatal=True,
                                  unit="row")
                return

    def _sheet_records(self) -> Iterator[Record | LineProblem]:
        from workbench.batch.workbook import sheet_head, sheet_rows

        number = 1
        try:
            for number, record, share in (sheet_rows if self.whole else sheet_head)(self.path, self.split):
                self.bytes_read = int(self.size * min(1.0, share))
                yield Record(number, record)
        except (TableError, OSError, ValueError) as exc:
            yield LineProblem(number, f"{exc}", fatal=True, unit="row")
        self.bytes_read = self.size

    def _label(self) -> str:
        return {"parquet": "Parquet", "arrow": "Arrow", "dataset": "a datasets folder's Arrow"}[self.kind or "arrow"]

    def _batches(self, file: Path):
        import pyarrow as pa
        import pyarrow.parquet as pq

        before = self.bytes_read
        if self.kind == "parquet":
            table = pq.ParquetFile(file)
            total, rows = max(1, table.metadata.num_rows), 0
            for batch in table.iter_batches(batch_size=BATCH_ROWS):
                rows += batch.num_rows
                yield batch, before + int(file.stat().st_size * rows / total)
            return
        with pa.memory_map(str(file)) as source:
            head = source.read(6)
            source.seek(0)
            reader = pa.ipc.open_file(source) if head == ARROW_FILE_MAGIC else pa.ipc.open_stream(source)
            if head == ARROW_FILE_MAGIC:
                for index in range(reader.num_record_batches):
                    yield from _slices(reader.get_batch(index), before + source.tell())
            else:
                for batch in reader:
                    yield from _slices(batch, before + source.tell())


def _slices(batch, done: int):
    """A record batch in slices of BATCH_ROWS rows (a shard's batches can hold many thousands)."""
    for start in range(0, batch.num_rows, BATCH_ROWS):
        yield batch.slice(start, BATCH_ROWS), done


def columns(path: str | Path, split: str | None = None) -> list[str]:
    """The table's column names, from its schema (no rows read)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    kind = table_kind(path)
    file = shards(path, split)[0] if kind == "dataset" else Path(path)
    try:
        if kind == "parquet":
            return list(pq.ParquetFile(file).schema_arrow.names)
        with pa.memory_map(str(file)) as source:
            head = source.read(6)
            source.seek(0)
            reader = pa.ipc.open_file(source) if head == ARROW_FILE_MAGIC else pa.ipc.open_stream(source)
            return list(reader.schema.names)
    except (OSError, ValueError) as exc:
        raise TableError(f"{file.name} cannot be read as a table: {exc}") from None
