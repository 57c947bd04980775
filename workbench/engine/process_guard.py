"""Keeps vLLM's processes from outliving the app.

Each app run marks its environment with an owner tag (pid and start time); vLLM's engine-core and
worker processes inherit it. The plugin makes them die with their parent (Linux ``PDEATHSIG``), and
:func:`reap_orphans` kills, at the next start, any that an earlier, killed run left behind.
"""
from __future__ import annotations

import os

import psutil

from workbench.engine.kv_plugin import OWNER_ENV

VLLM_PROCESS_PREFIX = "VLLM::"


def owner_tag(pid: int | None = None) -> str:
    process = psutil.Process(pid or os.getpid())
    return f"{process.pid}:{process.create_time():.2f}"


def mark_owner() -> str:
    """Tags this process's environment, so that engine processes started from here carry the tag."""
    if not os.environ.get(OWNER_ENV) or not os.environ[OWNER_ENV].startswith(f"{os.getpid()}:"):
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
    for process in psutil.process_iter(["pid", "name", "cmdline"]):
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


def child_pids() -> set[int]:
    try:
        return {p.pid for p in psutil.Process().children(recursive=True)}
    except psutil.Error:
        return set()


def describe_exit(pids: list[int]) -> str:
    """How the engine's processes ended, in words (for the 'engine died' message)."""
    alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    if alive:
        return f"process {alive[0]} is still running but stopped answering"
    return "its process is gone (killed, crashed, or out of memory)"


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
