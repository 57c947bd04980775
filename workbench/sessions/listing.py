"""What the Sessions window lists, read in one go off the GUI thread: every session with its headline
figures, and every engine run (the choices of the comparison). A session of 100,000 batch rows takes
a while to read, so the window hands this to a worker and shows it when it comes back. The figures are
read as arrays (SQLite reads the JSON), not as a record a request: Python's cycle collector, which runs
on whichever thread allocates and so stalls the window too, then has little to walk."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from workbench.engine.metrics import percentile
from workbench.sessions.figures import figures_of
from workbench.sessions.stored import EngineRunRecord, SessionSummary, figure_columns, list_sessions, open_read_only


@dataclass(frozen=True)
class SessionLine:
    summary: SessionSummary
    output_tokens_per_s: float  # while generating: idle time between questions not counted
    ttft_ms_p50: float


@dataclass(frozen=True)
class SessionListing:
    lines: tuple[SessionLine, ...]  # newest first
    runs: tuple[tuple[SessionSummary, int, EngineRunRecord], ...]  # (session, its run's number, run), oldest first


def read_listing(db_path: Path | str) -> SessionListing:
    """Every session of the database at ``db_path`` with its figures; sqlite3.Error where it cannot be read."""
    connection = open_read_only(db_path)
    try:
        lines = []
        for summary in list_sessions(connection):
            found = figure_columns(connection, [run.run_key for run in summary.runs],
                                   ("e2e_s", "output_tokens", "ttft_s"))
            ttft_ms = found["ttft_s"][np.isfinite(found["ttft_s"])] * 1e3
            lines.append(SessionLine(summary, figures_of(found["finished_s"], found["e2e_s"],
                                                         found["output_tokens"]).output_tokens_per_s,
                                     percentile(ttft_ms, 50)))
    finally:
        connection.close()
    runs = sorted(((line.summary, index + 1, run) for line in lines for index, run in enumerate(line.summary.runs)),
                  key=lambda item: item[2].started_s)
    return SessionListing(tuple(lines), tuple(runs))
