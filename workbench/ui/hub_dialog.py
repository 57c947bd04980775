"""Model > Get a model…: search the Hugging Face Hub, size a model up before a byte of weights moves
(will it fit at the current preset, on this machine), download what vLLM needs with a progress bar and
Cancel, and see or delete what is downloaded. Every Hub request runs on a worker thread; the download
itself is the application model's (``model.downloads``), read here on a 4 Hz timer.
"""
from __future__ import annotations

import time

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import (
    QAbstractItemView, QCheckBox, QDialog, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QMessageBox, QProgressBar,
    QPushButton, QTableWidget, QTableWidgetItem, QTabWidget, QTextBrowser, QVBoxLayout, QWidget,
)
from superqt.utils import create_worker

from workbench.hub.architectures import supported_architectures
from workbench.hub.cache_list import cached_models, delete_model, is_downloaded
from workbench.hub.download import DONE, RUNNING, DiskSpaceError, forget, unfinished
from workbench.hub.errors import HubError
from workbench.hub.fit import will_it_fit
from workbench.hub.remote_model import RemoteModel, download_plan, look_up
from workbench.hub.repo_id import HubInputError, hub_address
from workbench.hub.search import search_models
from workbench.hub.settings import hub_settings, remember_token
from workbench.presets.capacity import size_text
from workbench.ui.window_layout import resize_within_screen

SEARCH_COLUMNS = ("Model", "Params", "Dtype", "Weights", "Licence", "Access", "Downloads", "Likes", "vLLM runs it")
CACHE_COLUMNS = ("Model", "Size", "Revision", "Last used", "State")


def _table(object_name: str, headers: tuple[str, ...]) -> QTableWidget:
    table = QTableWidget(0, len(headers), objectName=object_name)
    table.setHorizontalHeaderLabels(headers)
    table.setSelectionBehavior(QAbstractItemView.SelectRows)
    table.setSelectionMode(QAbstractItemView.SingleSelection)
    table.setEditTriggers(QAbstractItemView.NoEditTriggers)
    table.verticalHeader().hide()
    table.horizontalHeader().setSectionResizeMode(0, QHeaderView.Stretch)
    return table


def _fill(table: QTableWidget, rows: list[tuple[str, ...]]) -> None:
    table.setRowCount(len(rows))
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            table.setItem(r, c, QTableWidgetItem(text))


def fit_html(model: RemoteModel, answer) -> str:
    colour = "#166534" if answer.fits and not model.problem else "#9b1c1c"
    parts = [f"<p><b>{model.summary()}</b></p>"]
    if model.problem:
        parts.append(f'<p style="color:#9b1c1c">{model.problem}</p>')
    parts.append(f'<p style="color:{colour}"><b>{answer.headline}</b></p>')
    parts.append("<ul>" + "".join(f"<li>{line}</li>" for line in answer.lines) + "</ul>")
    if answer.suggestions:
        parts.append("<p>What would make it fit:</p><ul>" + "".join(f"<li>{s}</li>" for s in answer.suggestions)
                     + "</ul>")
    if model.choice.note:
        parts.append(f'<p style="color:#92400e">{model.choice.note}</p>')
    if model.choice.left_out:
        parts.append(f"<p>Not fetched (other formats or folders vLLM does not load): "
                     f"{', '.join(model.choice.left_out[:8])}{'…' if len(model.choice.left_out) > 8 else ''}</p>")
    return "".join(parts)


class GetModelDialog(QDialog):
    """``use_model(name)`` starts the engine on a model (the window's ``start_with_model``)."""

    def __init__(self, model, use_model, parent=None):
        super().__init__(parent, objectName="getModelDialog", windowTitle="Get a model")
        self.model, self.use_model = model, use_model
        self.machine = getattr(getattr(parent, "presets", None), "machine", None)
        self.remote: RemoteModel | None = None  # the model sized up last
        self.listings = []
        self.workers = set()
        self.settings_label = QLabel(" · ".join(hub_settings().lines()), objectName="hubSettings", wordWrap=True)
        self.token = QLineEdit(objectName="hubToken", echoMode=QLineEdit.Password,
                               placeholderText="Access token, for gated or private models (kept for this window only)")
        self.remember = QCheckBox("Remember it with huggingface_hub (its token file)", objectName="hubRemember")
        self.remember.setToolTip("huggingface_hub.login writes the token where huggingface_hub keeps it (HF_HOME/token), "
                                 "for this app and the hf command line; the app itself stores it nowhere.")
        self.query = QLineEdit(objectName="hubQuery", placeholderText="Search by name, or type a repo id (owner/name)")
        self.query.returnPressed.connect(self.search)
        search = QPushButton("Search", objectName="hubSearchButton")
        search.clicked.connect(self.search)
        self.only_runs = QCheckBox("Only what vLLM runs", objectName="hubOnlyRuns", checked=True)
        self.results = _table("hubResults", SEARCH_COLUMNS)
        self.results.itemSelectionChanged.connect(self._on_result_chosen)
        self.repo = QLineEdit(objectName="hubRepo", placeholderText="owner/name")
        self.revision = QLineEdit(objectName="hubRevision", placeholderText="main")
        self.size_button = QPushButton("Will it fit?", objectName="hubSizeButton")
        self.size_button.clicked.connect(self.size_up)
        self.detail = QTextBrowser(objectName="hubDetail")
        self.download_button = QPushButton("Download", objectName="hubDownloadButton", enabled=False)
        self.download_button.clicked.connect(self.download)
        self.cancel_button = QPushButton("Cancel download", objectName="hubCancelButton", enabled=False)
        self.cancel_button.clicked.connect(self.cancel)
        self.use_button = QPushButton("Use this model", objectName="hubUseButton", enabled=False)
        self.use_button.clicked.connect(lambda: self._use(self.repo.text().strip()))
        self.progress = QProgressBar(objectName="hubProgress", maximum=1000, visible=False)
        self.downloading = ""  # the repo whose download the progress bar shows
        self.resume_plans = []
        self.cached_list = []
        self.status = QLabel(objectName="hubStatus", wordWrap=True)
        self.cached = _table("hubCached", CACHE_COLUMNS)
        self.tabs = QTabWidget(objectName="hubTabs")
        self.tabs.addTab(self._find_tab(search), "Find and download")
        self.tabs.addTab(self._cached_tab(), "Downloaded models")
        layout = QVBoxLayout(self)
        layout.addWidget(self.settings_label)
        token_row = QHBoxLayout()
        token_row.addWidget(self.token, 1)
        token_row.addWidget(self.remember)
        layout.addLayout(token_row)
        layout.addWidget(self.tabs)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        self.timer = QTimer(self, interval=250)
        self.timer.timeout.connect(self._show_progress)
        resize_within_screen(self, 1100, 760)
        self.refresh_cached()
        self._offer_resume()

    def _find_tab(self, search: QPushButton) -> QWidget:
        tab = QWidget()
        row = QHBoxLayout()
        for widget in (self.query, search, self.only_runs):
            row.addWidget(widget, 1 if widget is self.query else 0)
        pick = QHBoxLayout()
        for widget in (QLabel("Repo"), self.repo, QLabel("Revision"), self.revision, self.size_button,
                       self.download_button, self.cancel_button, self.use_button):
            pick.addWidget(widget, 2 if widget is self.repo else 0)
        layout = QVBoxLayout(tab)
        layout.addLayout(row)
        layout.addWidget(self.results, 3)
        layout.addLayout(pick)
        layout.addWidget(self.detail, 2)
        return tab

    def _cached_tab(self) -> QWidget:
        tab = QWidget()
        use = QPushButton("Use", objectName="hubCachedUse")
        use.clicked.connect(lambda: self._use(self._cached_choice()))
        delete = QPushButton("Delete…", objectName="hubCachedDelete")
        delete.clicked.connect(self.delete_cached)
        self.resume_button = QPushButton("Resume", objectName="hubResume", visible=False)
        self.resume_button.clicked.connect(self.resume)
        buttons = QHBoxLayout()
        for widget in (use, delete, self.resume_button):
            buttons.addWidget(widget)
        buttons.addStretch(1)
        layout = QVBoxLayout(tab)
        layout.addWidget(QLabel(f"In {hub_settings().cache_dir} (huggingface_hub's cache):"))
        layout.addWidget(self.cached, 1)
        layout.addLayout(buttons)
        return tab

    # ------------------------------------------------------------------ work off the GUI thread
    def _run(self, function, *args, done, failed=None) -> None:
        worker = create_worker(function, *args, _start_thread=False, _connect={"errored": failed or self._on_error})
        worker.returned.connect(done)
        worker.finished.connect(lambda: self.workers.discard(worker))
        self.workers.add(worker)
        worker.start()

    def _busy(self, text: str) -> None:
        self.status.setText(text)
        self.status.setStyleSheet("")
        self.progress.setRange(0, 0)
        self.progress.show()

    def _idle(self, text: str = "", error: bool = False) -> None:
        self.progress.setRange(0, 1000)
        self.progress.hide()
        self.status.setText(text)
        self.status.setStyleSheet("color: #9b1c1c;" if error else "")

    def _on_error(self, error: Exception) -> None:
        known = isinstance(error, (HubError, HubInputError, DiskSpaceError))
        self._idle(str(error) if known else f"{type(error).__name__}: {error}", error=True)
        if isinstance(error, HubError) and error.needs_token:
            self.token.setFocus()
            self.token.setStyleSheet("border: 2px solid #92400e;")

    def _token(self) -> str | None:
        token = self.token.text().strip() or None
        if token and self.remember.isChecked():
            self.remember.setChecked(False)  # once: huggingface_hub keeps it from now on
            self._run(remember_token, token, done=lambda _: self.settings_label.setText(
                " · ".join(hub_settings().lines())))
        return token

    # ------------------------------------------------------------------ search and size up
    def search(self) -> None:
        text = self.query.text().strip()
        if "/" in text and " " not in text:  # a repo id: size it up at once
            self.repo.setText(text)
            self.size_up()
            return
        self._busy(f"Searching {hub_settings().endpoint} for “{text}”…")
        token, only_runs = self._token(), self.only_runs.isChecked()  # the widgets read here, on the GUI thread
        self._run(lambda: search_models(text, supported_architectures(), token=token, only_runs_here=only_runs),
                  done=self._on_found)

    def _on_found(self, listings) -> None:
        self.listings = listings
        _fill(self.results, [item.row() for item in listings])
        self._idle(f"{len(listings)} model{'s' if len(listings) != 1 else ''} found." if listings else
                   "No text-generation model matches: try a shorter name, or untick “Only what vLLM runs”.")

    def _on_result_chosen(self) -> None:
        rows = self.results.selectionModel().selectedRows()
        if rows:
            self.repo.setText(self.listings[rows[0].row()].repo_id)
            self.remote = None
            self.download_button.setEnabled(False)

    def size_up(self) -> None:
        repo, page_revision = hub_address(self.repo.text())  # a page copied from the browser: its id and revision
        if repo != self.repo.text():
            self.repo.setText(repo)
        if page_revision and not self.revision.text().strip():
            self.revision.setText(page_revision)
        revision = self.revision.text().strip() or None
        self._busy(f"Reading {repo}'s config.json and safetensors headers (no weights)…")
        self.download_button.setEnabled(False)
        self._run(look_up, repo, revision, self._token(), done=self._on_sized)

    def _on_sized(self, remote: RemoteModel) -> None:
        self.remote = remote
        if self.machine is None:
            from workbench.presets.machine import this_machine

            self.machine = this_machine()
        others = [item.repo_id for item in self.listings]
        answer = will_it_fit(self.model.config, remote.facts, self.machine, others)
        self.detail.setHtml(fit_html(remote, answer))
        self.download_button.setEnabled(remote.problem is None)
        cached = is_downloaded(remote.repo_id, remote.revision, [f.name for f in remote.choice.files])
        self.use_button.setEnabled(cached)
        self._idle("Already downloaded: Use this model starts the engine on it." if cached else
                   f"Download fetches {size_text(remote.choice.total_bytes)} into {hub_settings().cache_dir}.")

    # ------------------------------------------------------------------ download
    def download(self, plan=None) -> None:
        plan = plan or download_plan(self.remote)
        try:
            self.model.downloads.start(plan, self._token())
        except DiskSpaceError as exc:
            self._idle(str(exc), error=True)
            return
        self.downloading = plan.repo_id
        self.download_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.progress.setRange(0, 1000)
        self.progress.show()
        self.timer.start()

    def cancel(self) -> None:
        download = self.model.downloads.get(self.downloading)
        if download is not None:
            download.cancel()

    def _show_progress(self) -> None:
        download = self.model.downloads.get(self.downloading)
        if download is None:
            self.timer.stop()
            return
        progress = download.progress()
        self.progress.setValue(int(progress.fraction * 1000))
        self.status.setText(f"{progress.repo_id}: {progress.state} · {progress.text()}")
        if progress.state == RUNNING:
            return
        self.timer.stop()
        self.cancel_button.setEnabled(False)
        self.download_button.setEnabled(progress.state != DONE)
        self.use_button.setEnabled(progress.state == DONE)
        self.progress.setVisible(progress.state != DONE)
        self.status.setStyleSheet("color: #9b1c1c;" if progress.state not in (DONE, "cancelled") else "")
        self.refresh_cached()

    def _offer_resume(self) -> None:
        plans = [p for p in unfinished() if self.model.downloads.get(p.repo_id) is None]
        self.resume_plans = plans
        self.resume_button.setVisible(bool(plans))
        if plans:
            names = ", ".join(p.repo_id for p in plans)
            self.status.setText(f"Not finished last time: {names}. Resume goes on from what arrived (Downloaded "
                                "models).")

    def resume(self) -> None:
        if self.resume_plans:
            plan = self.resume_plans.pop(0)
            self.repo.setText(plan.repo_id)
            self.tabs.setCurrentIndex(0)
            self.download(plan)
            self.resume_button.setVisible(bool(self.resume_plans))

    # ------------------------------------------------------------------ what is downloaded
    def refresh_cached(self) -> None:
        self._run(cached_models, done=self._on_cached)

    def _on_cached(self, models) -> None:
        self.cached_list = models
        _fill(self.cached, [(m.repo_id, size_text(m.size_bytes), m.revisions[0][:8] if m.revisions else "",
                             time.strftime("%Y-%m-%d %H:%M", time.localtime(m.last_used_s)),
                             "part downloaded" if m.incomplete else "ready") for m in models])

    def _cached_choice(self) -> str | None:
        rows = self.cached.selectionModel().selectedRows()
        return self.cached_list[rows[0].row()].repo_id if rows else None

    def delete_cached(self, confirm=None) -> None:
        repo = self._cached_choice()
        if repo is None:
            return
        question = f"Delete {repo} from {hub_settings().cache_dir}? Its files go; downloading it again fetches them anew."
        asked = confirm(question) if confirm is not None else \
            QMessageBox.question(self, "Delete a model", question) == QMessageBox.Yes
        if not asked:
            return
        forget(repo)
        self._busy(f"Deleting {repo}…")
        self._run(delete_model, repo, done=lambda freed: (self._idle(f"Deleted {repo}: {size_text(freed)} freed."),
                                                            self.refresh_cached()))

    def _use(self, repo: str | None) -> None:
        if repo:
            self.use_model(repo)
            self.accept()

    def closeEvent(self, event) -> None:
        self.timer.stop()  # a download goes on: it is the application model's, and shown next time
        super().closeEvent(event)

