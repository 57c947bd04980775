"""A batch's rows, column by column: numpy arrays for the figures, lists for the texts.

One object for 100,000 rows, not one per row: the table reads the columns, sorting and filtering
work on whole arrays. Written on one thread only (the GUI's, through the application model).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from psygnal import Signal

from workbench.batch.formats import BatchPrompt
from workbench.engine.metrics import RequestFigures

QUEUED, RUNNING, DONE, ERROR, CANCELLED = range(5)
STATUS_NAMES = ("queued", "running", "done", "error", "cancelled")
COUNT_COLUMNS = ("prompt_tokens", "output_tokens", "cached_prompt_tokens", "image_tokens")
FIGURE_NAMES = {"image_tokens": "num_image_tokens"}  # a column whose figure (RequestFigures) is named otherwise
TIME_COLUMNS = ("queue_s", "ttft_s", "itl_s", "e2e_s")


class BatchResults:
    """The rows of one batch: its prompts in file order, each row's status, figures and output."""

    row_finished = Signal(int)  # a row ended: done, error or cancelled (storage keeps it)

    def __init__(self, capacity: int = 1024):
        self.num_rows = 0
        self.prompts: list[BatchPrompt] | Sequence[BatchPrompt] = []  # a kept run's: read when asked for
        self.texts: list[str] = []  # output text, as streamed
        self.errors: dict[int, str] = {}  # row -> why it failed
        self.finish_reason_names: list[str] = [""]  # code 0: none yet
        self.unit = "line"  # what a prompt's line_no counts: "row" for a table file (Parquet, Arrow)
        self.num_references = 0  # rows whose record holds its own answer (a dataset's output, response)
        self.num_image_rows = 0  # rows with images
        self._arrays: dict[str, np.ndarray] = {}
        self._allocate(capacity)
        self.version = 0  # bumped on every change: readers redraw when it moved

    def _allocate(self, capacity: int) -> None:
        def grown(name: str, dtype, fill) -> np.ndarray:
            array = np.full(capacity, fill, dtype)
            old = self._arrays.get(name)
            if old is not None:
                array[: len(old)] = old
            return array

        self._arrays = {
            "line_no": grown("line_no", np.int64, 0),
            "status": grown("status", np.uint8, QUEUED),
            "finish_reason": grown("finish_reason", np.uint8, 0),
            "text_version": grown("text_version", np.int64, 0),  # the version at which the row's text last changed
            **{name: grown(name, np.int32, -1) for name in COUNT_COLUMNS},
            **{name: grown(name, np.float64, np.nan) for name in TIME_COLUMNS},
        }

    def column(self, name: str) -> np.ndarray:
        """A read-only view of one column's filled rows."""
        view = self._arrays[name][: self.num_rows]
        view.flags.writeable = False
        return view

    # ------------------------------------------------------------------ writing
    def append(self, prompt: BatchPrompt) -> int:
        row = self.num_rows
        if row == len(self._arrays["status"]):
            self._allocate(2 * row)
        self._arrays["line_no"][row] = prompt.line_no
        self.prompts.append(prompt)
        self.texts.append("")
        self.num_references += prompt.reference is not None
        self.num_image_rows += bool(prompt.images)
        self.num_rows += 1
        self.version += 1
        self._arrays["text_version"][row] = self.version
        return row

    def append_stored(self, prompts: Sequence[BatchPrompt], line_nos: np.ndarray, num_references: int,
                      num_image_rows: int) -> None:
        """The rows of a kept run, into these empty results at once, as storage read them (``prompts``: a
        ``StoredPrompts``, each read when first asked for), with what the table needs of them read beside."""
        if self.num_rows:
            raise ValueError("append_stored fills empty results only")
        if len(prompts) > len(self._arrays["status"]):
            self._allocate(len(prompts))
        self._arrays["line_no"][: len(prompts)] = line_nos
        self.prompts = prompts
        self.texts = [""] * len(prompts)
        self.num_references, self.num_image_rows = num_references, num_image_rows
        self.num_rows = len(prompts)
        self.version += 1
        self._arrays["text_version"][: len(prompts)] = self.version

    def set_status(self, row: int, status: int) -> None:
        self._arrays["status"][row] = status
        self.version += 1

    def add_text(self, row: int, text: str) -> None:
        self.texts[row] += text
        self.version += 1
        self._arrays["text_version"][row] = self.version

    def finish(self, row: int, status: int, finish_reason: str | None, figures: RequestFigures | None,
               error: str = "") -> None:
        arrays = self._arrays
        arrays["status"][row] = status
        arrays["finish_reason"][row] = self._finish_code(finish_reason or "")
        if figures is not None:
            for name in COUNT_COLUMNS:
                value = getattr(figures, FIGURE_NAMES.get(name, name), None)
                arrays[name][row] = -1 if value is None else value
            for name in TIME_COLUMNS:
                value = getattr(figures, name)
                arrays[name][row] = np.nan if value is None else value
        if error:
            self.errors[row] = error
        self.version += 1
        self.row_finished.emit(row)

    def finish_stored(self, rows: np.ndarray, statuses: np.ndarray, finish_reasons: list[str],
                      figures: dict[str, np.ndarray], texts: list[str]) -> None:
        """:meth:`finish` of many rows at once, as storage kept them (a run read back at start; nothing
        listens yet, so no ``row_finished``): ``figures``, one array per column of COUNT_COLUMNS (-1: none)
        and TIME_COLUMNS (NaN: none), each as long as ``rows``, as are their output ``texts``."""
        arrays = self._arrays
        arrays["status"][rows] = statuses
        arrays["finish_reason"][rows] = [self._finish_code(reason or "") for reason in finish_reasons]
        for name in (*COUNT_COLUMNS, *TIME_COLUMNS):
            arrays[name][rows] = figures[name]
        for row, text in zip(rows.tolist(), texts):
            self.texts[row] = text
        self.version += 1
        arrays["text_version"][rows] = self.version

    def _finish_code(self, reason: str) -> int:
        names = self.finish_reason_names
        if reason not in names:
            names.append(reason)
        return names.index(reason)

    # ------------------------------------------------------------------ reading
    def status(self, row: int) -> int:
        return int(self._arrays["status"][row])

    def status_name(self, row: int) -> str:
        return STATUS_NAMES[int(self._arrays["status"][row])]

    def finish_reason(self, row: int) -> str:
        return self.finish_reason_names[int(self._arrays["finish_reason"][row])]

    def value(self, name: str, row: int):
        """One figure: an int (None for not yet known) or a float (None for NaN)."""
        value = self._arrays[name][row]
        if name in COUNT_COLUMNS:
            return int(value) if value >= 0 else None
        return None if np.isnan(value) else float(value)

    def texts_changed_since(self, version: int) -> np.ndarray:
        """The rows whose output text changed (or that were added) after the results' ``version``."""
        return np.flatnonzero(self._arrays["text_version"][: self.num_rows] > version)

    def count(self, status: int) -> int:
        return int(np.count_nonzero(self._arrays["status"][: self.num_rows] == status))

    def num_output_tokens(self) -> int:
        tokens = self._arrays["output_tokens"][: self.num_rows]
        return int(tokens[tokens > 0].sum())
