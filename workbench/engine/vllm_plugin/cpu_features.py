"""AMX for vLLM's CPU kernels, asked for in each of vLLM's processes.

Linux gives a process the AMX tile registers only after it asks (``arch_prctl(ARCH_REQ_XCOMP_PERM,
XFEATURE_XTILEDATA)``); an AMX instruction before that is SIGILL. oneDNN asks on its first AMX
kernel, but vLLM 0.32's CPU build runs an AMX kernel of its own before that when a batch is only a
few tokens: on a Xeon with AMX the model worker died with SIGILL (exit code -4) whenever the engine's
first prompt was 4 tokens or fewer (``docs/results/cpu-sigill-short-first-prompt/``). Asked at the
plugin's registration, before the worker loads the model, the permission holds for every thread of
the process. On other machines the call fails harmlessly or is not made.
"""
from __future__ import annotations

import ctypes
import platform
import sys

ARCH_REQ_XCOMP_PERM = 0x1023
XFEATURE_XTILEDATA = 18
SYS_ARCH_PRCTL = 158  # x86-64


def request_amx() -> bool:
    """True if Linux now lets this process use AMX (it has it, and said yes); False otherwise."""
    if not sys.platform.startswith("linux") or platform.machine() != "x86_64":
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syscall(SYS_ARCH_PRCTL, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0
    except (OSError, AttributeError):
        return False


def on_cpu_build() -> bool:
    try:
        from vllm.platforms import current_platform

        return current_platform.is_cpu()
    except Exception:  # a vLLM this cannot ask: leave the process as it is
        return False
