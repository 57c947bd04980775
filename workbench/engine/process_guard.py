"""Keeps vLLM's processes from outliving the app.

Each app run marks its environment with an owner tag (pid and start time); vLLM's engine-core and
worker processes inherit it. The plugin makes them die with their parent (Linux ``PDEATHSIG``), and
:func:`reap_orphans` kills, at the next start, any that an earlier, killed run left behind.
"""
from __future__ import annotations

import multiprocessing
import os
import threading
import time
from typing import Callable

import psutil

from workbench.engine.engine_log import worker_death
from workbench.engine.process_death import OomWitness, ended
from workbench.engine.vllm_plugin.process_life import OWNER_ENV

VLLM_PROCESS_PREFIX = "VLLM::"
# Set for the engine-client process (``engine.client_process``): its parent's pid. The client keeps
# that process's owner tag, so that it and its engine processes are leftovers of the app if it dies.
CLIENT_PARENT_ENV = "WORKBENCH_CLIENT_PARENT"
LEGACY_TAG_SLACK_S = 5.0  # how far a running earlier version's start time may seem to have moved


def owner_tag(pid: int | None = None) -> str:
    """``pid:start`` where ``start`` is the process's start in clock ticks since boot (``/proc/PID/stat``).
    Not psutil's ``create_time()``: that adds the boot time as the wall clock now gives it, which moves
    when the clock is stepped or slewed (NTP), and a live app read as dead would have its engines reaped."""
    pid = pid or os.getpid()
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
    except OSError as error:
        raise psutil.NoSuchProcess(pid) from error
    return f"{pid}:{int(fields[19])}"  # field 22, starttime; fields[0] is field 3 (the state)


def mark_owner() -> str:
    """Tags this process's environment, so that engine processes started from here carry the tag.
    The engine-client process keeps its parent's tag (the app's)."""
    owners = {f"{os.getpid()}:", f"{os.environ.get(CLIENT_PARENT_ENV)}:"}
    if not os.environ.get(OWNER_ENV) or not any(os.environ[OWNER_ENV].startswith(p) for p in owners):
        os.environ[OWNER_ENV] = owner_tag()
    return os.environ[OWNER_ENV]


def owner_alive(tag: str) -> bool:
    """True while the app that ``tag`` (``owner_tag``) names runs."""
    pid, _, started = tag.partition(":")
    try:
        if "." in started:  # an earlier version's tag: the wall-clock start time, to within the clock's moves
            return abs(psutil.Process(int(pid)).create_time() - float(started)) < LEGACY_TAG_SLACK_S
        return owner_tag(int(pid)) == tag
    except (psutil.Error, ValueError):
        return False


def _owner_of(process: psutil.Process) -> str | None:
    try:
        return process.environ().get(OWNER_ENV)
    except (psutil.Error, OSError):
        return None


def reap_orphans() -> list[int]:
    """Kills workbench-started vLLM processes whose app is gone; returns their pids."""
    reaped = []
    for process in psutil.process_iter():  # only the environment is read, in _owner_of
        if process.pid == os.getpid():
            continue
        tag = _owner_of(process)
        if tag is None or owner_alive(tag):
            continue
        try:
            process.kill()
            reaped.append(process.pid)
        except psutil.Error:
            pass
    return reaped


def child_pids(vllm_only: bool = False, pid: int | None = None) -> set[int]:
    """This process's descendants (or ``pid``'s); with ``vllm_only``, just vLLM's (named ``VLLM::...``)."""
    pids = set()
    try:
        for process in psutil.Process(pid).children(recursive=True):
            try:
                if not vllm_only or process.name().startswith(VLLM_PROCESS_PREFIX):
                    pids.add(process.pid)
            except psutil.Error:
                continue
    except psutil.Error:
        pass
    return pids


ROLES = (("EngineCore", "engine core"), ("Worker", "model worker"))
REAP_SETTLE_S = 1.0  # how long a reaped child's exit code is given to be recorded by whoever reaped it
END_WAIT_S = 2.0  # a process that is dying (killed with its parent) is given this long before it is judged


def describe_exit(pids: list[int], watchdog: EngineWatchdog | None = None,
                  log_text: Callable[[], str] = lambda: "") -> str:
    """How the engine's processes ended, in words (for the 'engine died' message): the model worker's
    death where vLLM logged it, else the end of the first process whose exit code this process saw
    (its child, the engine core), given :data:`END_WAIT_S` to end. "Still running but stopped
    answering" only of a process that still runs after that, and only when none ended.

    ``log_text`` reads the engine's log; it is called once the engine core's end is known, so that
    the lines its last moments wrote (vLLM's "Worker proc ... died unexpectedly") are there to read."""
    witness = watchdog.witness if watchdog is not None else OomWitness(None, 0)
    codes = watchdog.wait_for_exit_codes(END_WAIT_S) if watchdog is not None else {}
    if worker := worker_death(log_text(), witness):
        return worker
    names = watchdog.names if watchdog is not None else {}
    alive = _still_running([p for p in pids if codes.get(p) is None], END_WAIT_S)
    known = [pid for pid in pids if codes.get(pid) is not None]
    if not known and alive:
        return f"{_who(min(alive, key=pids.index), names)} is still running but stopped answering"
    if not known:
        return f"its processes are gone (pid {', '.join(map(str, pids))}); how they ended is not known"
    first = known[0]
    words = ended(_who(first, names), codes[first], witness.verdict([first]))
    gone = [_who(pid, names) for pid in pids if pid != first and pid not in alive]
    left = [_who(pid, names) for pid in pids if pid in alive]
    return (words + (f"; {' and '.join(gone)} ended with it" if gone else "")
            + (f"; {' and '.join(left)} outlived it and is ended now" if left else ""))


def _who(pid: int, names: dict[int, str]) -> str:
    """Words for an engine process: "its engine core (VLLM::EngineCore, pid 6077)"."""
    name = names.get(pid, "")
    role = next((role for key, role in ROLES if key in name), "engine process")
    return f"its {role} ({name + ', ' if name else ''}pid {pid})"


def _still_running(pids: list[int], timeout_s: float) -> set[int]:
    """Those of ``pids`` still running after ``timeout_s``. A zombie has ended: a killed grandchild
    waits as one until whoever adopted it reaps it, which a container's first process may do late."""
    deadline = time.monotonic() + timeout_s
    running = {pid for pid in pids if is_running(pid)}
    while running and time.monotonic() < deadline:
        time.sleep(0.05)
        running = {pid for pid in running if is_running(pid)}
    return running


def is_running(pid: int) -> bool:
    """Alive and not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def kill_processes(pids: list[int], timeout_s: float = 5.0) -> None:
    processes = []
    for pid in pids:
        try:
            processes.append(psutil.Process(pid))
        except psutil.Error:
            continue
    for process in processes:
        try:
            process.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(processes, timeout=timeout_s)
    for process in alive:
        try:
            process.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=timeout_s)


class EngineWatchdog:
    """Calls ``on_death`` once if the engine-core process exits while the engine is in use."""

    def __init__(self, pids: list[int], on_death: Callable[[], None], interval_s: float = 0.25):
        self._processes = []
        self.names: dict[int, str] = {}  # pid -> process name, read while it runs
        for pid in pids:
            try:
                process = psutil.Process(pid)
                self.names[pid] = process.name()
                if "EngineCore" in self.names[pid] or not self._processes:
                    self._processes.append(process)
            except psutil.Error:
                pass
        # The engine processes this process started (the engine core): their exit codes, as their
        # parent sees them. Never waited for through psutil, which would reap them behind vLLM's back.
        self._children = [child for child in multiprocessing.active_children() if child.pid in set(pids)]
        self.witness = OomWitness.now()
        self._on_death, self._interval_s = on_death, interval_s
        self._stopped = threading.Event()
        threading.Thread(target=self._watch, name="engine-watchdog", daemon=True).start()

    def wait_for_exit_codes(self, timeout_s: float) -> dict[int, int | None]:
        """pid -> exit code of each engine process started here (None: still running after ``timeout_s``)."""
        deadline = time.monotonic() + timeout_s
        for child in self._children:
            child.join(max(0.0, deadline - time.monotonic()))
        # vLLM's own thread may join the same child: the one whose waitpid lost the race reads None
        # until the winner, a moment later, records the code. A child gone from the process table has one.
        settle = time.monotonic() + REAP_SETTLE_S
        while time.monotonic() < settle and any(c.exitcode is None and not is_running(c.pid) for c in self._children):
            time.sleep(0.02)
        return {child.pid: child.exitcode for child in self._children}

    def _dead(self) -> bool:
        for process in self._processes:
            try:
                if not process.is_running() or process.status() == psutil.STATUS_ZOMBIE:
                    return True
            except psutil.Error:
                return True
        return False

    def _watch(self) -> None:
        while not self._stopped.wait(self._interval_s):
            if self._dead():
                if not self._stopped.is_set():
                    self._on_death()
                return

    def stop(self) -> None:
        self._stopped.set()
