"""File > Export session… and Export conversation…: asks where, renders the pictures on the GUI thread,
and writes the files on a worker thread while a progress dialog shows how far it got."""
from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
from PySide6.QtWidgets import QFileDialog, QMessageBox, QProgressDialog, QWidget
from superqt.utils import create_worker

from workbench.export.conversation import conversation_json, conversation_markdown
from workbench.export.session_export import Pictures, export_session
from workbench.sessions.stored import engine_runs, open_read_only, session, session_series
from workbench.ui.stored_plots import render_live_plot, render_plots, stored_plots_view


def png_bytes(widget: QWidget) -> bytes:
    buffer = QBuffer()
    buffer.open(QIODevice.WriteOnly)
    widget.grab().save(buffer, "PNG")
    return bytes(QByteArray(buffer.data()))


def session_pictures(db_path: Path, session_id: str, heatmap: QWidget | None, memory=None) -> Pictures:
    """The session's plots drawn from its stored series (every engine run), and the heatmap and the
    memory panel's plot (``memory``, a PlotItem) as they are now."""
    connection = open_read_only(db_path)
    try:
        summary = session(connection, session_id)
        series = session_series(connection, engine_runs(connection, session_id))
    finally:
        connection.close()
    view = stored_plots_view(series, summary.started_s if summary else time.time())
    try:
        plots = render_plots(view)
    finally:
        view.close()
        view.deleteLater()
    if memory is not None:
        plots["memory"] = render_live_plot(memory, "Memory, as the window showed it at export time", "memory")
    return Pictures(plots, png_bytes(heatmap) if heatmap is not None else None)


def start_session_export(parent: QWidget, db_path: Path, session_id: str, folder: Path,
                         heatmap: QWidget | None = None, on_done=lambda folder, error: None, memory=None):
    """Exports into ``folder`` (and ``folder``.zip) on a worker thread with a progress dialog; returns the
    worker. ``on_done(folder, error)`` is called on the GUI thread (error None on success)."""
    pictures = session_pictures(db_path, session_id, heatmap, memory)
    dialog = QProgressDialog("Exporting the session…", "", 0, 1000, parent)
    dialog.setWindowTitle("Export session")
    dialog.setCancelButton(None)
    dialog.setWindowModality(Qt.WindowModal)
    dialog.setMinimumDuration(300)
    worker = create_worker(export_session, db_path, session_id, folder, pictures, _start_thread=False)

    def progressed(progress) -> None:
        dialog.setValue(int(progress.fraction * 1000))
        dialog.setLabelText(f"Exporting the session: {progress.step}")

    def finished_with(error) -> None:
        dialog.close()
        on_done(folder, error)

    worker.yielded.connect(progressed)
    worker.returned.connect(lambda _: finished_with(None))
    worker.errored.connect(finished_with)
    worker.start()
    return worker


def ask_and_export_session(window) -> None:
    """The File menu's action: the current session of ``window`` (which keeps a database)."""
    storage = window.storage
    if storage is None or storage.session_id is None:
        QMessageBox.information(window, "Export session", "This window keeps no database (another instance "
                                "owns it, or it could not be opened), so there is no session to export.")
        return
    storage.flush()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    chosen = QFileDialog.getExistingDirectory(window, "Export the session into a new folder in…")
    if chosen:
        folder = Path(chosen) / f"workbench-session-{stamp}"
        window._session_export = start_session_export(
            window, storage.path, storage.session_id, folder, window.heatmap,
            lambda f, e: tell_export_done(window, f, e), window.memory.plot)


def tell_export_done(parent: QWidget, folder: Path, error) -> None:
    if error is None:
        QMessageBox.information(parent, "Export session", f"Written to {folder} and {folder}.zip; open "
                                "report.html in a browser.")
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
    return write_conversation(conversation, Path(chosen))


def write_conversation(conversation, path: Path) -> Path:
    """JSON for a .json name, Markdown otherwise."""
    text = conversation_json(conversation) if path.suffix.lower() == ".json" else conversation_markdown(conversation)
    path.write_text(text, encoding="utf-8")
    return path
