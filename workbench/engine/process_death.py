"""How an engine process ended, in words: the signal that killed it and what is known of who sent it.

A process killed by a signal leaves its parent only the signal's number (a negative return code of
``subprocess`` and ``multiprocessing``); who sent it is not told. The kernel's out-of-memory killer
is named only where the kernel says so: its log (``/dev/kmsg``, where ``kernel.dmesg_restrict``
lets this user read it) names each process it killed, and its count of kills (``oom_kill`` in
``/proc/vmstat``, which counts a cgroup's kills too) says whether it killed anything since the
engine started. Otherwise the words say what can have sent the signal, and give no memory advice.
"""
from __future__ import annotations

import os
import re
import signal
import time
from dataclasses import dataclass

OOM_ADVICE = "lower max_num_seqs or max_model_len, or choose a smaller model"
_KILLED_BY = "was killed by signal"  # the phrase every signal death says, read back by death_label
_OUTSIDE = "something outside vLLM ended it — "
_SIGNAL_MEANINGS = {
    "SIGTERM": "something outside vLLM asked it to end — a `kill`, a system monitor, or the system shutting down",
    "SIGINT": "it was interrupted (Ctrl+C in the terminal the app runs in)",
    "SIGILL": "the CPU refused one of its instructions: this vLLM build does not fit this CPU",
    "SIGSEGV": "a crash in vLLM's or PyTorch's native code",
    "SIGBUS": "memory it had mapped went away (a full /dev/shm, or a model file changed while loaded)",
    "SIGABRT": "it aborted itself: a failed check in vLLM's or PyTorch's native code",
}
# "Out of memory: Killed process 1234 (VLLM::Worker) total-vm:..." and the cgroup's "Memory cgroup out of memory: ..."
_OOM_KILLED = re.compile(r"out of memory: Killed process (?P<pid>\d+) \((?P<name>[^)]*)\)", re.IGNORECASE)
_KMSG_RECORDS_READ = 200_000


@dataclass(frozen=True)
class OomVerdict:
    """What the kernel says of an out-of-memory kill of given processes: ``"killed"`` (its log names
    one), ``"not"`` (its log names none, or it counted no kill at all), ``"likely"`` (it counted
    kills, its log cannot be read) or ``"unknown"``; ``evidence`` in words."""

    known: str
    evidence: str = ""


@dataclass(frozen=True)
class OomWitness:
    """The kernel's count of out-of-memory kills when an engine started, to compare at its death."""

    kills_at_start: int | None
    started_us: int  # the kernel log's clock (CLOCK_MONOTONIC), in µs

    @classmethod
    def now(cls) -> OomWitness:
        return cls(oom_kill_count(), int(time.clock_gettime(time.CLOCK_MONOTONIC) * 1e6))

    def verdict(self, pids) -> OomVerdict:
        pids = set(pids)
        killed = kernel_oom_kills(self.started_us - 5_000_000)
        if killed is not None:
            named = [line for pid, line in killed if pid in pids]
            if named:
                return OomVerdict("killed", f'the kernel log says "{named[-1]}"')
            return OomVerdict("not", "the kernel log names no out-of-memory kill of it")
        count = oom_kill_count()
        if count is None or self.kills_at_start is None:
            return OomVerdict("unknown")
        if count == self.kills_at_start:
            return OomVerdict("not", "the kernel counted no out-of-memory kill since the engine started "
                                     "(oom_kill in /proc/vmstat)")
        return OomVerdict("likely", f"the kernel counted {count - self.kills_at_start} out-of-memory kill(s) since "
                                    "the engine started (oom_kill in /proc/vmstat; its log cannot be read here)")


def oom_kill_count() -> int | None:
    """The kernel's count of processes its out-of-memory killer ended since boot; None where unreadable."""
    try:
        with open("/proc/vmstat") as vmstat:
            for line in vmstat:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def kernel_oom_kills(since_us: int = 0) -> list[tuple[int, str]] | None:
    """(pid, the kernel's line) for each out-of-memory kill the kernel log holds from ``since_us`` on;
    None where the log cannot be read (most desktops: ``kernel.dmesg_restrict`` keeps it from users)."""
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    killed = []
    try:
        for _ in range(_KMSG_RECORDS_READ):
            try:
                record = os.read(fd, 8192).decode("utf-8", errors="replace")
            except BlockingIOError:
                break  # the end of the log
            except BrokenPipeError:
                continue  # a record overwritten while reading: the next one follows
            kill = oom_kill_in(record)
            if kill is not None and kill[0] >= since_us:
                killed.append(kill[1:])
    except OSError:
        return None
    finally:
        os.close(fd)
    return killed


def oom_kill_in(record: str) -> tuple[int, int, str] | None:
    """(time in µs, pid, the kernel's words) where a ``/dev/kmsg`` record ("6,1234,5678901,-;Out of
    memory: Killed process 4321 (VLLM::Worker) total-vm:...") tells of an out-of-memory kill."""
    header, _, message = record.partition(";")
    fields = header.split(",")
    found = _OOM_KILLED.search(message)
    if found is None or len(fields) < 3 or not fields[2].isdigit():
        return None
    return int(fields[2]), int(found.group("pid")), message.splitlines()[0].split(" total-vm")[0]


def ended(who: str, exit_code: int | None, oom: OomVerdict = OomVerdict("unknown")) -> str:
    """How ``who`` ("its engine core (VLLM::EngineCore, pid 6077)") ended, from its exit code as its
    parent saw it (negative: the signal that killed it; None: not known), with what the signal
    means; memory advice only where ``oom`` says the out-of-memory killer did it."""
    if exit_code is None:
        return f"{who} is gone; how it ended is not known"
    if exit_code >= 0:
        return f"{who} exited with code {exit_code}"
    number = -exit_code
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"{who} {_KILLED_BY} {number}"
    meaning = _sigkill_meaning(oom) if name == "SIGKILL" else _SIGNAL_MEANINGS.get(name, "")
    return f"{who} {_KILLED_BY} {number} ({name})" + (f": {meaning}" if meaning else "")


def _sigkill_meaning(oom: OomVerdict) -> str:
    if oom.known == "killed":
        return f"the kernel's out-of-memory killer ended it ({oom.evidence}); {OOM_ADVICE}"
    if oom.known == "likely":
        return (f"{_OUTSIDE}the out-of-memory killer, a `kill`, or a system monitor; {oom.evidence}, so memory is "
                f"the first suspect: {OOM_ADVICE}")
    if oom.known == "not":
        return f"{_OUTSIDE}a `kill`, or a system monitor; not the kernel's out-of-memory killer: {oom.evidence}"
    return f"{_OUTSIDE}the out-of-memory killer, a `kill`, or a system monitor"


_SIGNAL_NAMED = re.compile(re.escape(_KILLED_BY) + r" (?P<number>\d+)(?: \((?P<name>SIG\w+)\))?")
_EXITED = re.compile(r"exited with code (?P<code>\d+)")


def is_signal_death(words: str) -> bool:
    """True when ``words`` (from :func:`ended`) say a signal killed a process."""
    return _SIGNAL_NAMED.search(words) is not None


def death_label(message: str) -> str:
    """A short label for the moment an engine died ("engine died: SIGKILL"), from its message."""
    if found := _SIGNAL_NAMED.search(message):
        return f"engine died: {found.group('name') or 'signal ' + found.group('number')}"
    if found := _EXITED.search(message):
        return f"engine died: exit code {found.group('code')}"
    return "engine died"
