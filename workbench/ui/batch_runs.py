"""What the batch pane says about a run, and the picker of the runs it can show.

- :func:`progress_text` is the line under the controls: "120 / 300 · ETA 12s · …" while a run goes,
  "180 done · 120 cancelled · …" once it has ended (never "300 / 300" for rows that did not run);
- :func:`run_title` names a run in the picker and in questions: "Run 3 · prompts.jsonl · 180 done";
- :class:`RunsPicker` lists this session's and restored runs, and the file read but not run yet.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QWidget

from workbench.batch.run import BatchProgress, BatchRun

PENDING = ""  # the picker's key for the file read but not run yet


def duration_text(seconds: float | None) -> str:
    if seconds is None:
        return "…"
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m {seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def ended(p: BatchProgress) -> bool:
    return p.state in ("finished", "cancelled")


def counts_text(p: BatchProgress) -> str:
    """How far a run is: rows ended of all while it goes; once ended, what became of the rows."""
    if not ended(p):
        parts = [f"{p.num_finished:,} / {p.num_rows:,}"]
    else:
        parts = [f"{p.num_done:,} done"] + ([f"{p.num_cancelled:,} cancelled"] if p.num_cancelled else [])
    return " · ".join(parts + ([f"{p.num_failed:,} failed"] if p.num_failed else []))


def progress_text(p: BatchProgress) -> str:
    parts = [counts_text(p)]
    if p.state == "running":
        parts.append("ETA: measuring…" if p.eta_s is None else f"ETA {duration_text(p.eta_s)}")
    elif ended(p) and p.elapsed_s > 0:  # none for a kept run whose rows hold no times (a server's)
        parts.append(f"ran {duration_text(p.elapsed_s)}")
    if p.elapsed_s > 0 or p.state == "running":
        parts.append(f"{p.tokens_per_s:,.0f} tok/s")
    if not ended(p):
        parts.append(f"{p.num_in_flight} in the engine")
    elif p.num_in_flight:
        parts.append(f"cancelling: {p.num_in_flight} still in the engine")
    return " · ".join(parts) + f" · {p.message or p.state}"


def file_name(run: BatchRun) -> str:
    return Path(run.source[0]).name or "a prompt file"


def run_title(run: BatchRun, restored: bool = False) -> str:
    """The picker's line for a run: "Run 3 · prompts.jsonl · 180 done · 120 cancelled"."""
    progress = run.progress()
    state = "" if ended(progress) else f" · {progress.state}"
    return (f"Run {run.run_no} · {file_name(run)} · {counts_text(progress)}{state}"
            + (" · earlier session" if restored else ""))


def leave_question(run: BatchRun, new_name: str) -> tuple[str, str]:
    """The title and text that ask whether ``run`` may leave the pane for the file ``new_name``."""
    progress, title = run.progress(), f"Run {run.run_no} · {file_name(run)}"
    if not ended(progress):
        return ("A batch run is still going",
                f"{title} is still going ({run.state}): {progress.num_finished:,} of {progress.num_rows:,} rows "
                f"ended. Cancel it and open {new_name}? Its results so far stay under Runs. No keeps it going, "
                f"and {new_name} is not opened.")
    kept = progress.num_done + progress.num_failed
    return ("Open another prompt file",
            f"Open {new_name}? {title} leaves the pane: {counts_text(progress)}. Its {kept:,} results stay "
            "under Runs, where its table and export come back.")


class RunsPicker(QWidget):
    """A combo box of (key, title) entries: a run's id, or :data:`PENDING`; ``chosen`` when the user
    picks one. ``remove_requested`` with the key shown when Remove is pressed."""

    chosen = Signal(str)
    remove_requested = Signal(str)

    def __init__(self):
        super().__init__()
        self.combo = QComboBox(objectName="batchRunsPicker")
        self.combo.setMinimumContentsLength(16)  # longer names elide: the pane fits a narrow work region
        self.combo.view().setTextElideMode(Qt.ElideNone)  # the list itself shows whole names
        self.combo.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.combo.activated.connect(lambda index: self.chosen.emit(self.combo.itemData(index)))
        self.remove_button = QPushButton("Remove run", objectName="batchRemoveRunButton")
        self.remove_button.setToolTip("Takes the run shown off this list; the rows that ran stay in the "
                                      "session's record.")
        self.remove_button.clicked.connect(lambda: self.remove_requested.emit(self.current_key()))
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(QLabel("Runs"))
        row.addWidget(self.combo, 1)
        row.addWidget(self.remove_button)

    def set_entries(self, entries: list[tuple[str, str]], current: str | None) -> None:
        """Shows ``entries`` (rebuilt only where the keys changed) with ``current`` selected."""
        combo = self.combo
        keys = [key for key, _ in entries]
        if keys != [combo.itemData(i) for i in range(combo.count())]:
            combo.blockSignals(True)
            combo.clear()
            for key, title in entries:
                combo.addItem(title, key)
            combo.blockSignals(False)
        for index, (_, title) in enumerate(entries):
            if combo.itemText(index) != title:
                combo.setItemText(index, title)
        if current in keys:
            combo.setCurrentIndex(keys.index(current))
        self.setVisible(any(key != PENDING for key in keys))

    def current_key(self) -> str | None:
        return self.combo.currentData()

    def titles(self) -> list[str]:
        return [self.combo.itemText(i) for i in range(self.combo.count())]
