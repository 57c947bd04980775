"""Engine processes die with the app that started them, even when it is killed (Linux)."""
from __future__ import annotations

OWNER_ENV = "WORKBENCH_OWNER"


def die_with_parent() -> None:
    """An engine process is killed with its parent, even when the parent is SIGKILLed (Linux)."""
    try:
        import ctypes
        import signal

        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the reaper at the next start removes leftovers
