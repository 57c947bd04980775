"""Reading a prompt file into a batch's rows, a chunk at a time, so a window stays responsive.

Malformed lines are kept as problems with their line numbers. What happens at one is the caller's
choice: ``"skip"`` reads on, ``"stop"`` ends the reading there (the rows read so far stay), ``"ask"``
pauses at the first one until :meth:`PromptLoader.decide` says skip or stop (the window's dialog).
"""
from __future__ import annotations

import time
from pathlib import Path

from workbench.batch.formats import BatchPrompt, open_reader, parse_prompts
from workbench.batch.prompt_file import LineProblem
from workbench.batch.table_files import TableReader
from workbench.batch.results import BatchResults

ON_PROBLEM = ("skip", "stop", "ask")
CHUNK_S = 0.05  # a chunk's reading time at most (past one record): image checks make records slow to read


class PromptLoader:
    def __init__(self, path: str | Path, fmt: str, column: str | None = None, on_problem: str = "skip",
                 split: str | None = None, max_rows: int | None = None):
        """``split``: a DatasetDict folder's split; ``max_rows``: read the first N prompts only (ms-swift's
        ``dataset#N``). TableError where a table file or datasets folder cannot be opened at all."""
        if on_problem not in ON_PROBLEM:
            raise ValueError(f"on_problem must be one of {', '.join(ON_PROBLEM)}, not {on_problem!r}")
        self.path, self.fmt, self.column, self.split, self.max_rows = Path(path), fmt, column, split, max_rows
        self.on_problem = on_problem
        self.results = BatchResults()
        self.problems: list[LineProblem] = []
        self.awaiting: LineProblem | None = None  # "ask": the problem the caller has to decide on
        self.stopped_at: LineProblem | None = None  # the problem the reading stopped at, if any
        self.done = False
        self.limited = False  # stopped at max_rows
        self._reader = open_reader(self.path, fmt, split, whole=True)
        self.results.unit = "row" if isinstance(self._reader, TableReader) else "line"
        self._items = parse_prompts(self._reader, fmt, column)

    @property
    def fraction(self) -> float:
        """How much of the file has been read, 0 to 1."""
        return 1.0 if self.done or not self._reader.size else min(1.0, self._reader.bytes_read / self._reader.size)

    def read(self, max_items: int = 5000, max_s: float = CHUNK_S) -> bool:
        """Reads up to ``max_items`` lines, or for ``max_s`` seconds (each record's images are read and
        checked); True while there is more to read (and no decision awaited)."""
        if self.awaiting is not None:
            return False
        deadline = time.monotonic() + max_s
        for _ in range(max_items):
            item = next(self._items, None)
            if item is None:
                self.done = True
                return False
            if isinstance(item, BatchPrompt):
                self.results.append(item)
                if self.max_rows is not None and self.results.num_rows >= self.max_rows:
                    self.limited = True
                    self._stop(None)
                    return False
            elif not self._problem(item):
                return False
            if time.monotonic() > deadline:
                break
        return not self.done

    def read_all(self) -> BatchResults:
        """Reads to the end (or to the stop) at once: the headless API."""
        while self.read():
            pass
        return self.results

    def _problem(self, problem: LineProblem) -> bool:
        """Keeps the problem; False where the reading pauses or ends here."""
        self.problems.append(problem)
        if problem.fatal or self.on_problem == "stop":
            self._stop(problem)
            return False
        if self.on_problem == "ask":
            self.awaiting = problem
            return False
        return True

    def decide(self, choice: str) -> None:
        """The answer to :attr:`awaiting`: "skip" this and later malformed lines, or "stop" here."""
        if self.awaiting is None:
            return
        problem, self.awaiting = self.awaiting, None
        if choice == "stop":
            self._stop(problem)
        else:
            self.on_problem = "skip"

    def _stop(self, problem: LineProblem | None) -> None:
        self.stopped_at, self.done = problem, True
        self._items.close()

    def summary(self) -> str:
        rows = f"{self.results.num_rows:,} prompt{'s' if self.results.num_rows != 1 else ''}"
        if self.limited:
            rows = f"First {rows}"
        split = getattr(self._reader, "split", None)
        named = f"sheet {split}" if getattr(self._reader, "kind", None) == "xlsx" else f"{split} split"
        source = self.path.name + (f" (its {named})" if split else "")
        if not self.problems:
            return f"{rows} read from {source}."
        unit = self.problems[0].unit
        fatal = self.stopped_at if self.stopped_at is not None and self.stopped_at.fatal else None
        malformed = len(self.problems) - (fatal is not None)  # a file that cannot be read on is not a malformed line
        parts = [f"{malformed:,} malformed {unit}{'s' if malformed != 1 else ''} left out"] if malformed else []
        if fatal is not None:
            if not self.results.num_rows and not malformed:
                return f"No prompts read from {source}: {fatal.reason.rstrip('.')}."
            parts.append(f"stopped at {unit} {fatal.line_no}: {fatal.reason.rstrip('.')}")
        elif self.stopped_at is not None:
            parts.append(f"stopped at {unit} {self.stopped_at.line_no}")
        return f"{rows} read from {source}; {'; '.join(parts)}."

    def close(self) -> None:
        """Lets the file go unread (the user kept what the pane showed instead)."""
        self._stop(None)
