"""The engine's own log: everything vLLM's processes print, kept in a file per engine start.

vLLM's engine core runs in a process of its own (with its workers, under tensor parallelism), and
a failure there reaches the client only as a summary ("Engine core initialization failed. See root
cause above."). The cause is in what that process printed. :class:`EngineLogCapture` points the
app's standard output and error at a pipe while the engine processes are created, so that they
inherit it; a thread copies everything from the pipe to the console, as before, and to the log
file. The processes keep writing there for their whole life, so an engine that dies later leaves
its last words in the same file.

No Qt and no vLLM here: the GUI shows the file, and :func:`root_cause` reads it.
"""
from __future__ import annotations

import os
import re
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from workbench.engine.process_death import OomVerdict, OomWitness, ended
from workbench.paths import data_dir

MAX_LOGS_KEPT = 20
_PIPE_READ_BYTES = 65536


def new_log_path() -> Path:
    """A fresh file under the data folder's ``logs/``; the oldest beyond ``MAX_LOGS_KEPT`` go."""
    folder = data_dir() / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    for old in sorted(folder.glob("engine-*.log"))[:-(MAX_LOGS_KEPT - 1) or None]:
        old.unlink(missing_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return folder / f"engine-{stamp}-{os.getpid()}-{time.monotonic_ns() % 1_000_000:06d}.log"


class EngineLogCapture:
    """Copies what the engine processes print to the console and to ``path``.

    Use :meth:`attach` right before the engine processes are created and :meth:`detach_parent`
    right after: in between, this process's own output goes to the log too (vLLM's client logs
    its side of the start there). The copying thread ends once every process holding the pipe
    has exited."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._saved: dict[int, int] = {}
        self._write_end: int | None = None
        self._thread: threading.Thread | None = None

    def attach(self) -> bool:
        """False (and nothing changed) where this process has no standard output or error to
        redirect, as under some desktop launchers: the engine then starts without a log."""
        try:
            console = os.dup(2)
            saved = {fd: os.dup(fd) for fd in (1, 2)}
        except OSError:
            return False
        read_end, write_end = os.pipe()
        _flush_std_streams()
        for fd, copy in saved.items():
            self._saved[fd] = copy
            os.dup2(write_end, fd)
        self._write_end = write_end
        log = open(self.path, "ab", buffering=0)
        self._thread = threading.Thread(target=_pump, args=(read_end, console, log),
                                         name="engine-log", daemon=True)
        self._thread.start()
        return True

    def detach_parent(self) -> None:
        """Gives this process its own output back; the engine processes keep the pipe."""
        if self._write_end is None:
            return
        _flush_std_streams()
        for fd, saved in self._saved.items():
            os.dup2(saved, fd)
            os.close(saved)
        self._saved.clear()
        os.close(self._write_end)
        self._write_end = None

    def wait_closed(self, timeout_s: float) -> bool:
        """Waits until every writer has gone (the engine processes exited); True if they have."""
        if self._thread is None:
            return True
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def text(self) -> str:
        return read_log(self.path)


def _flush_std_streams() -> None:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except (AttributeError, ValueError, OSError):
            pass


def _pump(read_end: int, console: int, log) -> None:
    """Copies the pipe to the console and the log until end of file; never blocks the writers
    for long (a full pipe would stall the engine), and a console that went away is dropped."""
    try:
        while chunk := os.read(read_end, _PIPE_READ_BYTES):
            log.write(chunk)
            if console >= 0:
                try:
                    os.write(console, chunk)
                except OSError:
                    console = -1
    finally:
        os.close(read_end)
        if console >= 0:
            os.close(console)
        log.close()


def read_log(path: Path | str, max_bytes: int = 4 << 20) -> str:
    """The log's text (its last ``max_bytes`` when longer); empty when the file is gone."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


# ------------------------------------------------------------------ reading the cause out of a log

# vLLM prefixes each line its engine processes print: "(EngineCore_DP0 pid=123) " and, for log
# records, "ERROR 11-29 22:00:00 [core.py:1510] ". Colour codes appear when the console is a tty.
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_PROCESS_PREFIX = re.compile(r"^\((?P<process>[\w.-]+)(?: pid=\d+)?\)\s?")
_RECORD_PREFIX = re.compile(r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+"
                            r"\[[^\]]*\]\s?")
_EXCEPTION_LINE = re.compile(r"^(?P<name>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure|Warning)|"
                             r"[A-Za-z_][\w.]*\.[A-Z]\w*)(?::\s?(?P<detail>.*))?$")
# The client's own summaries of a failure elsewhere: never the root cause.
_CLIENT_SUMMARIES = ("Engine core initialization failed", "EngineDeadError", "EngineCore encountered an issue")


@dataclass(frozen=True)
class LogLine:
    process: str  # "EngineCore_DP0", "Worker_TP1", ... or "" for the app's own process
    level: str  # "ERROR", "WARNING", ... or "" for plain output (tracebacks)
    text: str


@dataclass(frozen=True)
class RootCause:
    """What an engine log says went wrong: the exception, its traceback, and the error lines logged."""

    exception: str  # "ValueError: ..." as Python printed it; "" when the log holds no traceback
    process: str  # the process that raised it
    error_lines: tuple[str, ...]  # the last ERROR records outside tracebacks, prefixes removed
    traceback: str = ""  # the frames above the exception


def parse_line(raw: str) -> LogLine:
    line = _ANSI.sub("", raw.rstrip("\r\n"))
    process = ""
    if match := _PROCESS_PREFIX.match(line):
        process, line = match.group("process"), line[match.end():]
    level = ""
    if match := _RECORD_PREFIX.match(line):
        level, line = match.group("level"), line[match.end():]
    return LogLine(process, level, line)


@dataclass(frozen=True)
class _Traceback:
    process: str
    frames: str
    exception: str


def root_cause(log_text: str, max_error_lines: int = 4) -> RootCause | None:
    """The first exception that a traceback in the log ends with (outside the client's own
    summaries), preferring one raised in an engine process; None when the log shows no error."""
    lines = [parse_line(raw) for raw in log_text.splitlines()]
    tracebacks, messages = _read_tracebacks(lines)
    tracebacks = [t for t in tracebacks if not any(s in t.exception for s in _CLIENT_SUMMARIES)]
    chosen = ([t for t in tracebacks if t.process] or tracebacks or [None])[0]
    errors = [m for m in messages if not any(s in m for s in _CLIENT_SUMMARIES)]
    if chosen is None and not errors:
        return None
    if chosen is None:
        return RootCause("", "", tuple(errors[-max_error_lines:]))
    return RootCause(chosen.exception, chosen.process, tuple(errors[-max_error_lines:]), chosen.frames)


_WORKER_DIED = re.compile(r"Worker proc (?P<name>\S+) died unexpectedly \(exit code: (?P<code>-?\d+)\)")
_WORKER_PREFIX = re.compile(r"^\((?P<process>Worker[\w.-]*) pid=(?P<pid>\d+)\)", re.MULTILINE)


def worker_death(log_text: str, witness: OomWitness | None = None) -> str:
    """What vLLM's executor logged of a model worker that died: "its model worker VllmWorker-0 (pid
    6104) was killed by signal 4 (SIGILL): <what that usually means>"; "" when the log holds no such
    line. ``witness``: the kernel's count of out-of-memory kills at the engine's start, which (with the
    kernel's log, where readable) tells whether a SIGKILL came from the out-of-memory killer."""
    text = _ANSI.sub("", log_text)
    found = list(_WORKER_DIED.finditer(text))
    if not found:
        return ""
    name, code = found[-1].group("name"), int(found[-1].group("code"))
    pid = _worker_pid(text, name)
    who = f"its model worker {name}" + (f" (pid {pid})" if pid else "")
    verdict = (witness or OomWitness(None, 0)).verdict([pid] if pid else [])
    return ended(who, code, verdict if pid else OomVerdict("unknown"))


def _worker_pid(text: str, name: str) -> int | None:
    """The pid of vLLM's worker ``name`` ("VllmWorker-1") from the prefixes of its lines ("(Worker_TP1
    pid=6104)", or "(Worker pid=6104)" where it is the only one)."""
    pids: dict[str, int] = {m.group("process"): int(m.group("pid")) for m in _WORKER_PREFIX.finditer(text)}
    rank = name.rsplit("-", 1)[-1]
    if f"Worker_TP{rank}" in pids:
        return pids[f"Worker_TP{rank}"]
    return next(iter(pids.values())) if len(set(pids.values())) == 1 else None


def _read_tracebacks(lines: list[LogLine]) -> tuple[list[_Traceback], list[str]]:
    """Each traceback (its frames and the exception line that ends it, the last link of a chain),
    and the ERROR records outside tracebacks, in order."""
    tracebacks: list[_Traceback] = []
    messages: list[str] = []
    frames: dict[str, list[str]] = {}  # process -> frames of its open traceback
    for line in lines:
        text = line.text.strip()
        open_frames = frames.get(line.process)
        if text.startswith("Traceback (most recent call last)"):
            frames[line.process] = []
        elif open_frames is not None and (line.text.startswith((" ", "\t")) or not text):
            open_frames.append(line.text)
        elif open_frames is not None and _EXCEPTION_LINE.match(text):
            del frames[line.process]
            tracebacks.append(_Traceback(line.process, "\n".join(open_frames), text))
        elif open_frames is None and line.level in ("ERROR", "CRITICAL") and text and not text.startswith(
                _CHAIN_MARKERS):
            messages.append(text)
    return tracebacks, messages


_CHAIN_MARKERS = ("Traceback (most recent call last)", "The above exception", "During handling of the above")
