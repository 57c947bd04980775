"""Import a command line: paste it (or open a file), see what each command keeps and which flags do
nothing, name the preset, Import. The reading itself is ``presets.command_in`` (no Qt), on a worker
thread: the first one builds vLLM's own argument parser, which takes longer than a window may wait."""
from __future__ import annotations

from pathlib import Path

import html
import re

from PySide6.QtCore import Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QDialog, QFileDialog, QHBoxLayout, QLabel, QLineEdit, QMessageBox, QPlainTextEdit, QProgressBar, QPushButton,
    QTextBrowser, QVBoxLayout,
)
from superqt.utils import create_worker, qdebounced

from workbench.presets import store
from workbench.presets.command_in import NON_OPTION, ImportedCommand, import_text, to_document
from workbench.presets.command_text import CommandTextError, decode
from workbench.presets.trust import is_trusted, remember_trust
from workbench.ui.preset_replace import ask_replace
from workbench.ui.window_layout import resize_within_screen

COLOURS = {NON_OPTION: "#9b1c1c", "bad value": "#9b1c1c", "check": "#92400e", "note": "#1e3a8a",
           "needs a value": "#92400e"}
MAX_FILE_BYTES = 1 << 20


def summary(number: int, result: ImportedCommand) -> str:
    if result.error:
        return f"Command {number}: not read: {result.error}"
    parts = [f"Command {number} ({result.form}{', ' + result.name if result.name else ''})"]
    if result.model:
        parts.append(f"model {result.model}")
    values = {**result.engine, **result.engine_tables}
    parts.append("keeps " + (", ".join(f"{k}={v}" for k, v in values.items()) or "no engine value"))
    if result.sampling:
        parts.append("sampling " + ", ".join(f"{k} {v}" for k, v in result.sampling.items()))
    if result.batch_input:
        parts.append(f"batch input {result.batch_input}")
    if result.visible_devices is not None:
        parts.append(f"CUDA_VISIBLE_DEVICES={result.visible_devices}")
    if result.server:
        parts.append("for Serve " + ", ".join(f"{k}={v}" for k, v in result.server.items()))
    if result.vllm_version:
        parts.append(f"written for vLLM {result.vllm_version}")
    return "; ".join(parts)


def _outcomes_html(result: ImportedCommand) -> str:
    """Each option as written and what it became, one row each; the refused ones are the messages."""
    rows = "".join(f"<tr><td><code>{html.escape(b.option)}</code></td><td>{html.escape(b.goes_to)}</td>"
                   f"<td>{html.escape(b.detail)}</td></tr>" for b in result.outcomes)
    return f'<table cellspacing="0" cellpadding="2" style="margin-left: 12px">{rows}</table>' if rows else ""


def _block_html(number: int, result: ImportedCommand) -> str:
    items = "".join(f'<li style="color: {COLOURS.get(m.kind, "#000000")}">{html.escape(m.text)}</li>'
                    for m in result.messages)
    colour = COLOURS["bad value"] if result.error else "#000000"
    return f'<p style="margin: 4px 0 0 0; color: {colour}"><b>{html.escape(summary(number, result))}</b></p>' + \
        _outcomes_html(result) + (f'<ul style="margin-top: 0">{items}</ul>' if items else "")


def read_commands(text: str, base_dir: Path | None) -> tuple[list[ImportedCommand], str | None]:
    """Off the GUI thread: the commands of ``text``, or the reason there are none."""
    try:
        return import_text(text, base_dir), None
    except CommandTextError as exc:
        return [], str(exc)


class CommandImportDialog(QDialog):
    """``current_model``: the model a command without --model runs on (the one the trust question names)."""

    read_done = Signal()  # the text's commands are shown (after each read)

    def __init__(self, current_model: str, parent=None):
        super().__init__(parent, objectName="commandImportDialog", windowTitle="Import a command line")
        self.current_model = current_model
        self.results: list[ImportedCommand] = []
        self.base_dir: Path | None = None  # the opened file's folder, where --config files are looked for
        self.saved: list[Path] = []
        self.paste = QPlainTextEdit(objectName="importPaste")
        self.paste.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))
        self.paste.setPlaceholderText("Paste vllm serve …, swift infer …, an LLM(...) call or a YAML config; "
                                      "several commands separated by blank lines")
        self.read_soon = qdebounced(self.read, timeout=250, parent=self)  # read once typing pauses
        self.paste.textChanged.connect(self.read_soon)
        self.messages = QTextBrowser(objectName="importMessages")  # wrapped: each message is read whole
        self.name = QLineEdit(store.free_name("imported"), objectName="importName")  # replaces no preset
        self.status = QLabel(objectName="importStatus", wordWrap=True)
        self.busy = QProgressBar(objectName="importBusy", minimum=0, maximum=0, visible=False, textVisible=False)
        self.busy.setMaximumHeight(8)
        self.worker = None  # the read in flight
        self.read_again = False  # the text changed while it ran
        open_button = QPushButton("Open file…", objectName="importOpenButton")
        open_button.clicked.connect(lambda: self.open_file())
        self.import_button = QPushButton("Import", objectName="importButton", enabled=False)
        self.import_button.clicked.connect(lambda: self.import_presets())
        cancel = QPushButton("Close")
        cancel.clicked.connect(self.reject)
        name_row = QHBoxLayout()
        for widget in (QLabel("Preset name"), self.name, open_button, self.import_button, cancel):
            name_row.addWidget(widget, 1 if widget is self.name else 0)
        layout = QVBoxLayout(self)
        layout.addWidget(self.paste, 2)
        layout.addWidget(QLabel("<b>What each option became, and the flags that do nothing</b>"))
        layout.addWidget(self.messages, 3)
        layout.addWidget(self.busy)
        layout.addWidget(self.status)
        layout.addLayout(name_row)
        resize_within_screen(self, 900, 640)

    def open_file(self, path: str | None = None) -> None:
        path = path or QFileDialog.getOpenFileName(self, "Open a command line", "",
                                                   "Commands (*.sh *.txt *.yaml *.yml *.py);;All files (*)")[0]
        if not path:
            return
        try:
            size = Path(path).stat().st_size
            if size > MAX_FILE_BYTES:
                raise CommandTextError(f"{path} is {size:,} bytes: a command line is not that long; open the script "
                                       "or config that holds it")
            text = decode(Path(path).read_bytes(), path)
        except OSError as exc:
            self._show_error(f"{path} cannot be read: {exc.strerror or exc}")
            return
        except CommandTextError as exc:
            self._show_error(str(exc))
            return
        self.base_dir = Path(path).parent
        self.paste.setPlainText(text)
        self.read()

    @property
    def reading(self) -> bool:
        return self.worker is not None

    def read(self) -> None:
        """Reads the text on a worker thread; :attr:`read_done` once its commands are shown."""
        self.read_soon.cancel()
        if self.worker is not None:
            self.read_again = True
            return
        self.import_button.setEnabled(False)
        self.busy.show()
        self.status.setText("Reading the command with vLLM's own parser…")
        self.status.setStyleSheet("")
        self.worker = create_worker(read_commands, self.paste.toPlainText(), self.base_dir, _start_thread=False)
        self.worker.returned.connect(self._on_read)
        self.worker.start()

    def _on_read(self, outcome: tuple[list[ImportedCommand], str | None]) -> None:
        self.worker = None
        if self.read_again:
            self.read_again = False
            self.read()
            return
        self.busy.hide()
        self.results, error = outcome
        self.messages.clear()
        if error is not None:
            self._show_error(error)
        else:
            self._show_results()
        self.read_done.emit()

    def _show_results(self) -> None:
        self.messages.setHtml("".join(_block_html(number, result)
                                      for number, result in enumerate(self.results, start=1)))
        readable = [r for r in self.results if not r.error]
        named = sum(len(r.non_options()) for r in readable)
        self.status.setText(f"{len(readable)} of {len(self.results)} command(s) read; {named} flag(s) that are not "
                            "options named; everything else is kept.")
        self.status.setStyleSheet("")
        self.import_button.setEnabled(bool(readable))

    def _show_error(self, text: str) -> None:
        self.status.setText(text)
        self.status.setStyleSheet("color: #9b1c1c;")
        self.import_button.setEnabled(False)

    def preset_names(self) -> list[str]:
        """The name given, or for several commands that name and each command's own (its variable in a
        Python snippet) or number."""
        readable = [r for r in self.results if not r.error]
        base = self.name.text().strip()
        if len(readable) == 1:
            return [base]
        names = [f"{base}-{re.sub(r'[^A-Za-z0-9_-]+', '-', r.name).strip('-')}"[:64] if r.name else f"{base}-{i}"
                 for i, r in enumerate(readable, start=1)]
        return names if len(set(names)) == len(names) else [f"{base}-{i}" for i in range(1, len(readable) + 1)]

    def import_presets(self, allow_trust=None, allow_replace=None) -> list[Path]:
        """Saves each readable command as a user preset. ``allow_trust(model) -> bool`` answers the
        trust_remote_code question, ``allow_replace(names) -> bool`` whether presets of those names are replaced
        (the user is asked when either is None; only names that are taken are asked about); nothing is saved
        when they are not."""
        readable = [r for r in self.results if not r.error]
        try:
            names = [store.check_name(n) for n in self.preset_names()]
        except store.PresetNameError as exc:
            self._show_error(str(exc))
            return []
        taken = [name for name in names if store.taken_by(name)]
        if taken and not (allow_replace(taken) if allow_replace else ask_replace(self, taken)):
            self.status.setText("Nothing imported: the presets of those names are kept. Choose another name, "
                                "then Import.")
            return []
        self.saved = []
        for name, result in zip(names, readable):
            if result.engine.get("trust_remote_code"):
                self._ask_trust(result.model or self.current_model, allow_trust)
            self.saved.append(store.save_user_preset(to_document(result, name), name))
        self.status.setText("Imported as " + ", ".join(p.stem for p in self.saved) + ".")
        return self.saved

    def _ask_trust(self, model: str, allow_trust) -> None:
        if is_trusted(model):
            return
        if allow_trust is None:
            answer = QMessageBox.question(self, "Run the model's own code?",
                                          f"The command sets trust_remote_code: vLLM would run Python code that comes "
                                          f"with {model}. Allow it for this model (remembered)?")
            allowed = answer == QMessageBox.Yes
        else:
            allowed = allow_trust(model)
        if allowed:
            remember_trust(model)
