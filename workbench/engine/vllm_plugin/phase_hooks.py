"""Engine start phases, written to a file by the engine-core process as it reaches them.

The client's ``start_phases.PhaseWatcher`` follows the file and reports progress; a hook that sees an
exception writes it too, so the client knows the phase a start failed in.
"""
from __future__ import annotations

import os
import time

PHASE_FILE_ENV = "WORKBENCH_PHASE_FILE"


def write_phase(phase: str, detail: str = "") -> None:
    path = os.environ.get(PHASE_FILE_ENV)
    if not path:
        return
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{phase}\t{time.time():.3f}\t{detail.replace(chr(10), ' ')}\n")
    except OSError:  # the progress shown is the only loss: a start never fails for its phase file
        pass


def report_phase_on(cls, name: str, phase: str) -> None:
    original = getattr(cls, name)

    def wrapper(self, *args, **kwargs):
        write_phase(phase)
        try:
            return original(self, *args, **kwargs)
        except BaseException as exc:
            write_phase("error", f"{type(exc).__name__}: {exc}")
            raise

    wrapper.__wrapped__ = original
    setattr(cls, name, wrapper)
