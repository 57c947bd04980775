"""Keeps vLLM's processes from outliving the app.

Each app run marks its environment with an owner tag (pid and start time); vLLM's engine-core and
worker processes inherit it. The plugin makes them die with their parent (Linux ``PDEATHSIG``), and
:func:`reap_orphans` kills, at the next start, any that an earlier, killed run left behind.
"""
from __future__ import annotations

import os
import threading
from typing import Callable

import psutil

from workbench.engine.vllm_plugin.process_life import OWNER_ENV

VLLM_PROCESS_PREFIX = "VLLM::"
# Set for the engine-client process (``engine.client_process``): its parent's pid. The client keeps
# that process's owner tag, so that it and its engine processes are leftovers of the app if it dies.
CLIENT_PARENT_ENV = "WORKBENCH_CLIENT_PARENT"


def owner_tag(pid: int | None = None) -> str:
    process = psutil.Process(pid or os.getpid())
    return f"{process.pid}:{process.create_time():.2f}"


def mark_owner() -> str:
    """Tags this process's environment, so that engine processes started from here carry the tag.
    The engine-client process keeps its parent's tag (the app's)."""
    owners = {f"{os.getpid()}:", f"{os.environ.get(CLIENT_PARENT_ENV)}:"}
    if not os.environ.get(OWNER_ENV) or not any(os.environ[OWNER_ENV].startswith(p) for p in owners):
        os.environ[OWNER_ENV] = owner_tag()
    return os.environ[OWNER_ENV]


def _owner_alive(tag: str) -> bool:
    pid, _, created = tag.partition(":")
    try:
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
        if tag is None or _owner_alive(tag):
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


def describe_exit(pids: list[int]) -> str:
    """How the engine's processes ended, in words (for the 'engine died' message)."""
    alive = [p for p in pids if is_running(p)]
    if alive:
        return f"process {alive[0]} is still running but stopped answering"
    return "its process is gone (killed, crashed, or out of memory)"


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
        for pid in pids:
            try:
                process = psutil.Process(pid)
                if "EngineCore" in process.name() or not self._processes:
                    self._processes.append(process)
            except psutil.Error:
                pass
        self._on_death, self._interval_s = on_death, interval_s
        self._stopped = threading.Event()
        threading.Thread(target=self._watch, name="engine-watchdog", daemon=True).start()

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
