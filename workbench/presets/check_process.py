"""The preset checks and vLLM's defaults, read in a process of its own.

Reading vLLM's ``EngineArgs`` imports vLLM and torch: seconds of work that, in a thread of the
window's process, still holds the GIL for stretches of a second (C extensions load with it held) and
so stalls the GUI thread. One spawned process does it instead and is kept for the next check (then
milliseconds); ``shutdown`` ends it with the app, and it ends itself once the app is gone (killed, the
pool never tells it). It runs at the lowest CPU priority (nice 19): its
seconds of imports come as the first engine is ready, and on a 2-core machine they would otherwise take
a core from the window and the engine just when the user asks the first question.
"""
from __future__ import annotations

import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import tomlkit

from workbench.presets.document import PresetDocument

_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None


def _plain(value):
    """A value that crosses back without vLLM (its enums subclass str: unpickled, they import vLLM)."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    return str(getattr(value, "value", value))


def _check_here(toml_text: str, path: str, machine, facts) -> tuple[list, dict]:
    """In the checking process: the preset's problems and vLLM's defaults (plain values)."""
    from workbench.engine.vllm_plugin.engine_args import default_values
    from workbench.presets.checks import check_preset

    problems = check_preset(PresetDocument(tomlkit.parse(toml_text), path), machine, facts) if toml_text else []
    return problems, {name: _plain(value) for name, value in default_values(1).items()}


LOWEST_PRIORITY = 19
PARENT_POLL_S = 1.0


def _start_checking(app_pid: int) -> None:
    """In the checking process, before any work: the lowest CPU priority there is, and a watch on the app."""
    _lower_priority()
    threading.Thread(target=_end_with_the_app, args=(app_pid,), name="app-watch", daemon=True).start()


def _lower_priority() -> None:
    try:
        os.nice(LOWEST_PRIORITY - os.nice(0))
    except OSError:  # a platform without nice: the check runs at the app's priority
        pass


def _end_with_the_app(app_pid: int) -> None:
    """Ends the checking process once the app that started it is gone: an app killed (SIGKILL, a crash) never shuts
    its pool down, and the process would wait on its queue, vLLM imported, until the next start reaped it."""
    while os.getppid() == app_pid:
        time.sleep(PARENT_POLL_S)
    os._exit(0)


def niceness() -> int:
    """The checking process's CPU priority (for the tests)."""
    return _executor().submit(os.nice, 0).result()


def _executor() -> ProcessPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=_start_checking, initargs=(os.getpid(),))
        return _pool


def check_in_process(document: PresetDocument | None, machine, facts) -> tuple[list, dict]:
    """The preset's problems (none asked for with ``document`` None) and vLLM's defaults, read in the
    checking process; blocks the calling thread (never the GUI thread) until they come."""
    text = tomlkit.dumps(document.doc) if document is not None else ""
    path = document.path if document is not None else ""
    pool = _executor()
    try:
        return pool.submit(_check_here, text, path, machine, facts).result()
    except BrokenProcessPool:  # the process was killed (out of memory, or by hand): a new one, once
        if not _forget(pool):
            raise  # shut down meanwhile (the app is closing): no new process
        return _executor().submit(_check_here, text, path, machine, facts).result()


def _forget(pool: ProcessPoolExecutor) -> bool:
    """Lets go of a broken pool; False when it was shut down (and let go of) already."""
    global _pool
    with _lock:
        if _pool is not pool:
            return False
        _pool = None
    return True


def shutdown() -> None:
    """Ends the checking process (the app is closing); a later check starts another."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)
