"""Engine start, phase by phase.

The plugin writes each phase (weights, memory profiling, KV allocation) to a file as the engine-core
process reaches it; :class:`PhaseWatcher` follows the file and reports :class:`StartProgress`.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable


@dataclass(frozen=True)
class StartProgress:
    phase: str  # "model", "import", "process", "weights", "profiling", "kv_alloc", "ready"
    label: str
    fraction: float  # 0..1 of the whole start


PHASES = {
    "stopping": ("Stopping the engine in use", 0.0),
    "model": ("Preparing the model", 0.0),
    "import": ("Loading vLLM", 0.05),
    "process": ("Starting the engine process", 0.15),
    "weights": ("Loading weights", 0.35),
    "profiling": ("Profiling memory", 0.65),
    "kv_alloc": ("Allocating the KV cache", 0.8),
    "ready": ("Engine ready", 1.0),
}


def progress_for(phase: str, label: str | None = None, fraction: float | None = None) -> StartProgress:
    default_label, default_fraction = PHASES[phase]
    return StartProgress(phase, label or default_label, default_fraction if fraction is None else fraction)


BUILD_SHARE = 0.8  # of a start that builds the demo model first: ~150 s of training against a ~30 s engine start


class WholeStart:
    """Reports a start's progress as one fraction from 0 to 1 over the whole of it, never going back:
    where the start builds the demo model first (phase "model"), the build fills the first
    ``BUILD_SHARE`` and the engine's phases the rest; otherwise the engine's phases fill it all."""

    def __init__(self, report: Callable[[StartProgress], None]):
        self.report = report
        self.built = False
        self.fraction = 0.0

    def __call__(self, progress: StartProgress) -> None:
        if progress.phase == "model":
            self.built = True
            fraction = BUILD_SHARE * progress.fraction
        elif self.built:
            fraction = BUILD_SHARE + (1 - BUILD_SHARE) * progress.fraction
        else:
            fraction = progress.fraction
        self.fraction = max(self.fraction, min(fraction, 1.0))
        self.report(replace(progress, fraction=self.fraction))


class EngineStartError(RuntimeError):
    """The engine did not start; the message names the cause and what to change, and
    ``log_path`` is the engine's whole log of that start (None when none was written)."""

    def __init__(self, message: str, log_path: str | None = None, retry: tuple = ()):
        super().__init__(message)
        self.log_path = log_path
        self.retry = retry  # engine arguments that fix it, offered as one click (start_failure.Change)


class PhaseWatcher:
    """Follows the phase file written by the engine-core process, on a thread of its own."""

    def __init__(self, path: Path, report: Callable[[StartProgress], None]):
        self.path, self.report = path, report
        self.error: str | None = None
        self._stop = threading.Event()
        self._seen = 0
        self._thread = threading.Thread(target=self._follow, name="engine-phase-watcher", daemon=True)

    def __enter__(self) -> "PhaseWatcher":
        self.path.write_text("")
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.catch_up()

    def catch_up(self) -> None:
        """Stops following and reads what the file holds that was not read yet."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)
        self._read_new()

    def _follow(self) -> None:
        while not self._stop.wait(0.05):
            self._read_new()

    def _read_new(self) -> None:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return
        for line in lines[self._seen:]:
            phase, _, detail = (line.split("\t") + ["", ""])[:3]
            if phase == "error":
                self.error = self.error or detail
            elif phase in PHASES:
                self.report(progress_for(phase))
        self._seen = len(lines)
