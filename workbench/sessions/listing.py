"""What the Sessions window lists, read in one go off the GUI thread: every session with its headline
figures, and every engine run (the choices of the comparison). A session of 100,000 batch rows takes
seconds to read, so the window hands this to a worker and shows it when it comes back."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from workbench.sessions.compare import run_figures
from workbench.sessions.figures import generating_figures
from workbench.sessions.stored import EngineRunRecord, SessionSummary, list_sessions, open_read_only, requests


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
            found = requests(connection, [run.run_key for run in summary.runs], with_text=False)
            lines.append(SessionLine(summary, generating_figures(found).output_tokens_per_s,
                                     run_figures(found, {})["ttft_ms_p50"]))
    finally:
        connection.close()
    runs = sorted(((line.summary, index + 1, run) for line in lines for index, run in enumerate(line.summary.runs)),
                  key=lambda item: item[2].started_s)
    return SessionListing(tuple(lines), tuple(runs))
