"""Engine processes die with the app that started them, even when it is killed (Linux)."""
from __future__ import annotations

import os
import signal

OWNER_ENV = "WORKBENCH_OWNER"


def die_with_parent(parent_pid: int | None = None) -> None:
    """An engine process is killed with its parent, even when the parent is SIGKILLed (Linux).

    ``parent_pid``: the parent that started this process. A process asks this of the kernel only once
    it runs (a vLLM process once it has imported vLLM and loaded its plugins, seconds after it was
    started); if that parent has died in the meantime, nothing would ever kill it, so it ends now."""
    try:
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the reaper at the next start removes leftovers
    if parent_pid is not None and os.getppid() != parent_pid:
        os.kill(os.getpid(), signal.SIGKILL)  # what the parent's death would have sent
