"""File > Export session… and Export conversation…: asks where, renders the pictures on the GUI thread,
and writes the files off the GUI thread while a progress dialog shows how far it got."""
from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import QFileDialog, QMessageBox, QProgressDialog, QWidget
from superqt.utils import create_worker

from workbench.export.conversation import export_conversation
from workbench.engine.kv_snapshot import KVSnapshot
from workbench.export.session_export import Pictures, export_session
from workbench.sessions.stored import engine_runs, open_read_only, session, session_series
from workbench.storage.series import MEMORY
from workbench.ui.heatmap_picture import heatmap_caption, heatmap_png
from workbench.ui.stored_plots import (
    render_off_screen, render_one, stored_memory_panel, stored_plots_view, window_font,
)

STORED_MEMORY_TITLE = "Memory (the memory panel's stored series)"

PICTURES_SHARE = 0.3  # of the progress bar: rendering the pictures on the GUI thread, then the files


class SessionExportJob(QObject):
    """One export: the pictures rendered on the GUI thread, one plot per turn of the event loop (a picture
    takes about half a second: the window keeps answering between them), then the files written off
    the GUI thread; one progress dialog for both. ``heatmap``: the snapshot the heatmap shows at export
    time (None: no engine). Every plot, the memory plot too, is drawn from the stored series, as
    timeseries.csv holds them. ``on_done(folder, error)`` runs on the GUI thread (error None on success).
    ``storage``: the window's, when it records the session exported: the export then holds everything
    recorded up to the moment it was asked for (the points kept for the next chunk and the writer's
    uncommitted records included), waiting for that commit off the GUI thread."""

    def __init__(self, parent: QWidget, db_path: Path, session_id: str, folder: Path, heatmap: KVSnapshot | None,
                 on_done, storage=None):
        super().__init__(parent)
        self.db_path, self.session_id, self.folder, self.on_done = Path(db_path), session_id, Path(folder), on_done
        self.heatmap_png = heatmap_png(heatmap, window_font()) if heatmap is not None else None
        self.heatmap_caption = heatmap_caption(heatmap) if heatmap is not None else ""
        self.plots: dict[str, tuple[str, bytes, bytes]] = {}
        self._todo: list = []
        self._view = None
        self._memory_panel = None  # the memory plot, drawn from its stored series
        self.writing = None
        self.dialog = QProgressDialog("Exporting the session: reading what was recorded…", "", 0, 1000, parent)
        self.dialog.setWindowTitle("Export session")
        self.dialog.setCancelButton(None)
        self.dialog.setWindowModality(Qt.WindowModal)
        self.dialog.setMinimumDuration(0)
        # the live session: what was recorded up to now goes to disk first, waited for off the GUI thread
        self.committed = storage.mark_commit() if storage is not None and storage.session_id == session_id else None
        self.reader = create_worker(stored_plot_series, self.db_path, self.session_id, self.committed,
                                    _start_thread=False, _connect={"errored": self._finish})
        self.reader.returned.connect(self._prepare)
        self.reader.start()

    def _prepare(self, stored) -> None:
        origin_s, series, memory = stored
        try:
            self._view = stored_plots_view(series, origin_s)
            self._todo = list(self._view.plots.items())
            if memory:  # after the stored plots in the report
                self._memory_panel = stored_memory_panel(memory, origin_s)
                self._todo.append(("memory", self._memory_panel.plot))
        except Exception as error:  # series that cannot be drawn: said, nothing written
            self._finish(error)
            return
        self.dialog.setLabelText("Exporting the session: drawing the plots…")
        QTimer.singleShot(0, self._render_next)

    def _render_next(self) -> None:
        try:
            name, plot = self._todo.pop(0)
            self.plots[name] = render_off_screen(self._memory_panel, plot, STORED_MEMORY_TITLE, name) \
                if name == "memory" else render_one(self._view, name, plot)
        except Exception as error:
            self._finish(error)
            return
        done = len(self.plots)
        self.dialog.setValue(int(1000 * PICTURES_SHARE * done / (done + len(self._todo))))
        if self._todo:
            QTimer.singleShot(0, self._render_next)
            return
        self._close_view()
        pictures = Pictures(dict(self.plots), self.heatmap_png, self.heatmap_caption)
        # errors go to _finish only (without it superqt raises them again on the GUI thread)
        self.writing = create_worker(export_session, self.db_path, self.session_id, self.folder, pictures,
                                    _start_thread=False, _connect={"errored": self._finish})
        self.writing.yielded.connect(self._on_writing_yielded)
        self.writing.returned.connect(lambda _: self._finish(None))
        self.writing.start()

    def _on_writing_yielded(self, progress) -> None:
        self.dialog.setValue(int(1000 * (PICTURES_SHARE + (1 - PICTURES_SHARE) * progress.fraction)))
        self.dialog.setLabelText(f"Exporting the session: {progress.step}")

    def _close_view(self) -> None:
        for view in (self._view, self._memory_panel):
            if view is not None:
                view.close()
                view.deleteLater()
        self._view = self._memory_panel = None

    def _finish(self, error) -> None:
        self._close_view()
        self.dialog.close()
        self.on_done(self.folder, error)


def start_session_export(parent: QWidget, db_path: Path, session_id: str, folder: Path,
                         heatmap: KVSnapshot | None = None, on_done=lambda folder, error: None,
                         storage=None) -> SessionExportJob:
    """Exports into ``folder`` (and ``folder``.zip) with a progress dialog; returns the job. ``heatmap``:
    the snapshot the window's heatmap shows (None for a past session). With the ``storage`` that records
    ``session_id``, everything recorded until this call is in the export."""
    return SessionExportJob(parent, db_path, session_id, folder, heatmap, on_done, storage)


class NotSavedYet(RuntimeError):
    """What was recorded before the export was asked for is not on disk: the export would miss it."""


COMMIT_WAIT_S = 300.0  # only a writer that hangs takes this long; a busy machine's commit takes seconds


def wait_for_commit(committed) -> None:
    """Returns once ``committed`` (a storage ``CommitMark``, or None: nothing to wait for) is on disk."""
    if committed is None or committed.wait(COMMIT_WAIT_S):
        return
    problem = committed.writer.problem
    cause = problem.message if problem is not None else f"the database did not confirm within {COMMIT_WAIT_S:.0f} s"
    raise NotSavedYet(f"the last seconds of the session are not saved yet, so the export would miss them ({cause})")


def stored_plot_series(db_path: Path, session_id: str, committed):
    """Off the GUI thread: once ``committed`` is on disk, the session's start time and the stored series
    its plots are drawn from, the memory panel's too."""
    wait_for_commit(committed)
    connection = open_read_only(db_path)
    try:
        summary = session(connection, session_id)
        runs = engine_runs(connection, session_id)
        series = session_series(connection, runs)
        memory = session_series(connection, runs, MEMORY)
    finally:
        connection.close()
    return (summary.started_s if summary else time.time()), series, memory


def ask_and_export_session(window) -> None:
    """The File menu's action: the current session of ``window`` (which keeps a database)."""
    storage = window.storage
    if storage is None or storage.session_id is None:
        QMessageBox.information(window, "Export session", "This window keeps no database (another instance "
                                "owns it, or it could not be opened), so there is no session to export.")
        return
    stamp = time.strftime("%Y%m%d-%H%M%S")
    chosen = QFileDialog.getExistingDirectory(window, "Export the session into a new folder in…")
    if chosen:
        folder = Path(chosen) / f"workbench-session-{stamp}"
        window._session_export = start_session_export(
            window, storage.path, storage.session_id, folder, window.heatmap.snapshot,
            lambda f, e: tell_export_done(window, f, e), storage)


def tell_export_done(parent: QWidget, folder: Path, error) -> None:
    if error is None:
        QMessageBox.information(parent, "Export session", f"Written to {folder} and {folder}.zip; open "
                                "report.html in a browser.")
    elif isinstance(error, NotSavedYet):
        QMessageBox.warning(parent, "Export session", f"The export was not written: {error}. Nothing recorded is "
                            "lost (the workbench keeps it and saves it again); export again once it is saved.")
    else:
        QMessageBox.warning(parent, "Export session", f"The export failed: {error}. Nothing half-written was "
                            "left; choose another folder (one you can write to, with free space) and try again.")


def ask_and_export_conversation(window) -> Path | None:
    conversation = window.chat.current if window.model.conversations else None
    if conversation is None:
        QMessageBox.information(window, "Export conversation", "Select a conversation first.")
        return None
    chosen, _ = QFileDialog.getSaveFileName(
        window, "Export the conversation", f"{conversation.title}.md", "Markdown (*.md);;JSON (*.json)")
    if not chosen:
        return None
    try:
        path = write_conversation(conversation, Path(chosen), window.model.images_dir, window)
    except OSError as error:  # the conversation itself stays as it is in the window and the database
        reason = error.strerror or str(error)
        QMessageBox.warning(window, "Export conversation", f"{chosen} could not be written ({reason}). Choose a "
                            "folder you can write to, with free space, and export again.")
        return None
    return path


def write_conversation(conversation, path: Path, images_dir: Path | None = None, parent: QWidget | None = None) -> Path:
    """JSON for a .json name, Markdown otherwise, its images copied beside it; images that could not be
    copied are named to the user (with ``parent``) and left out."""
    missing = export_conversation(conversation, path, images_dir)
    if missing and parent is not None:
        QMessageBox.warning(parent, "Export conversation", f"{path} was written without these images:\n"
                            + "\n".join(missing))
    return path
