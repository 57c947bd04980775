"""The File menu: export the session or the current conversation, the Sessions window, and Quit."""
from __future__ import annotations

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QMessageBox

from workbench.ui.session_export_action import ask_and_export_conversation, ask_and_export_session


def open_sessions(window):
    """The Sessions window over the window's database (None when it keeps none): made once (its plots take
    about 0.1 s to build), then brought to the front and read again each time it is asked for."""
    from workbench.ui.sessions_view import SessionsView

    storage = window.storage
    if storage is None or storage.opened.connection is None and not storage.path.exists():
        QMessageBox.information(window, "Sessions", "No database is open, so no sessions are kept.")
        return None
    storage.flush()
    view = window.findChild(SessionsView, "sessionsView")
    if view is None or view.db_path != storage.path:
        view = SessionsView(storage.path, storage.session_id, window)
    else:
        view.current_session = storage.session_id
        view.refresh()
    view.show()
    view.raise_()
    view.activateWindow()
    return view


def quit_key() -> QKeySequence:
    """The platform's Quit key (Ctrl+Q on a Linux desktop, Cmd+Q on a Mac); Ctrl+Q where it names none (Windows,
    or a platform without a desktop's key scheme)."""
    platform = QKeySequence(QKeySequence.Quit)
    return platform if not platform.isEmpty() else QKeySequence("Ctrl+Q")


def add_file_menu(window: QMainWindow) -> None:
    menu = window.menuBar().addMenu("&File")
    for text, slot in (("Export session…", lambda: ask_and_export_session(window)),
                       ("Export conversation…", lambda: ask_and_export_conversation(window)),
                       ("Sessions…", lambda: open_sessions(window))):
        action = QAction(text, window)
        action.triggered.connect(slot)
        menu.addAction(action)
    menu.addSeparator()
    # as the window's close button: the window goes at once, the engine and the database stop behind it
    quit_action = QAction("Quit", window, shortcut=quit_key(), menuRole=QAction.QuitRole)
    quit_action.triggered.connect(window.close)
    menu.addAction(quit_action)
