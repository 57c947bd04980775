"""The preset panel, beside the heatmap: choose a preset, see how it differs from the running engine
and what it will cost, edit it, save, import, export or reset it, and apply it without a restart."""
from __future__ import annotations

import copy
from pathlib import Path

from PySide6.QtCore import QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QComboBox, QFileDialog, QHBoxLayout, QInputDialog, QLabel, QMessageBox, QPushButton, QVBoxLayout, QWidget,
)
from superqt.utils import create_worker

from workbench.engine.events import EngineState
from workbench.engine.spec import DEMO_MODEL, DEMO_VL_MODEL, EngineConfig
from workbench.engine.vllm_plugin import engine_args
from workbench.model.app_model import AppModel
from workbench.presets import store
from workbench.presets.capacity import compare_with_engine, plan_capacity
from workbench.presets.check_process import check_in_process
from workbench.presets.checks import check_preset, check_vision_model
from workbench.presets.document import PresetDocument, PresetFileError, is_platform_table, plain
from workbench.presets.machine import this_machine
from workbench.presets.model_facts import facts_for
from workbench.presets.resolve import config_rows, diff_configs, resolve_preset
from workbench.presets.trust import remember_trust
from workbench.ui.engine_status import ElidedProgressBar
from workbench.ui.preset_replace import ask_replace
from workbench.ui.preset_values import NOT_READ, PresetValuesTable, running_value, value_text

FINISH, ABORT = "finish", "abort"
ERROR_STYLE = "color: #9b1c1c;"
NO_FACTS = "The model's config.json could not be read: no estimate."
NO_FACTS_DEMO = "The demo model is built at the engine's first start: the estimate comes once it is built."


def origin_text(origin: dict) -> str:
    """What an imported preset's command named beyond engine settings: the model, the batch input, the GPUs."""
    parts = []
    if origin.get("model"):
        parts.append(f"model {origin['model']} (Model > Choose model…)")
    if origin.get("batch_input"):
        rows = f", the first {origin['batch_limit']:,} rows" if origin.get("batch_limit") else ""
        parts.append(f"batch input {origin['batch_input']}{rows} (the Batch tab)")
    if origin.get("visible_devices") is not None:
        parts.append(f"CUDA_VISIBLE_DEVICES={origin['visible_devices']}")
    return ("From the command line: " + "; ".join(parts) + ".") if parts else ""


def check_off_thread(document: PresetDocument, machine, facts) -> tuple[list, dict]:
    """The preset's problems and vLLM's defaults, off the GUI thread that waits for the checking
    process (``presets.check_process``): vLLM is imported there, never in the window's process."""
    return check_in_process(document, machine, facts)


def defaults_off_thread() -> dict:
    """vLLM's defaults, read the same way (see :func:`check_off_thread`); vLLM's registry is asked too
    (a process of its own, once per vLLM version), so that the panel can tell a text-only model from a
    vision one without waiting for an Apply."""
    from workbench.engine.vllm_architectures import registry_answer

    defaults = check_in_process(None, None, None)[1]
    registry_answer()
    return defaults


def problems_now(document: PresetDocument, machine, facts) -> list:
    """The problems the GUI thread can tell without waiting: all of them where vLLM's names are read in
    this process already, else whether the model reads the images the preset is for (from its config, or
    vLLM's registry as kept); Apply checks everything off the GUI thread."""
    if engine_args.loaded():
        return check_preset(document, machine, facts, ask_registry=False)
    problem = check_vision_model(document, facts, ask_registry=False) if document.needs_vision_model else None
    return [problem] if problem is not None else []


class PresetPanel(QWidget):
    """Holds the preset being looked at (a copy, edited in place); the configuration lives in the model.
    ``abort`` stops a chat reply (through the one owner of engine commands); ``restart`` starts the
    engine on the model's configuration.

    The preset's checks and vLLM's defaults are read off the GUI thread (they import vLLM): Apply
    shows "Checking the preset…" meanwhile, and the result is applied on the GUI thread."""

    checked = Signal(bool)  # an Apply's check ended: True when the switch went ahead (or waits for requests)

    def __init__(self, model: AppModel, abort, restart, take_engine=None):
        super().__init__(objectName="presetPanel")
        self.model, self.abort, self.restart = model, abort, restart
        # take_engine(doing, act): act, once what uses the engine (a search) has let it go (the window's
        # TuneActions); None where the user kept it
        self.take_engine = take_engine or (lambda doing, act: act())
        self.confirm_replace = lambda names: ask_replace(self, names)  # replaced by tests
        self.machine = this_machine()
        self.catalog = store.PresetCatalog()
        self.document: PresetDocument | None = None
        self.resolved = None
        self.problems: list = []
        self.pending = None  # a resolved preset waiting for the requests in flight to finish
        self.defaults: dict | None = engine_args.default_values(1) if engine_args.loaded() else None
        self.checking = None  # the job checking the preset for an Apply, while it runs
        self._when_busy: str | None = None
        self._loading = None  # the job reading vLLM's defaults, while it runs
        self._last_state = (model.engine.state, model.engine.start_id)
        self._build()
        self.wait_timer = QTimer(self, interval=100)
        self.wait_timer.timeout.connect(self._on_wait_timer)
        model.engine_changed.connect(self._on_model_engine_changed)
        model.config_changed.connect(lambda _config: self.refresh())
        self.reload()

    def _build(self) -> None:
        self.choice = QComboBox(objectName="presetChoice")
        self.choice.currentTextChanged.connect(self._on_choice_changed)
        self.description = QLabel(objectName="presetDescription", wordWrap=True)
        self.values = PresetValuesTable(self._on_value_edited)
        self.diff = QLabel(objectName="presetDiff", wordWrap=True)
        self.problem_text = QLabel(objectName="presetProblems", wordWrap=True, styleSheet=ERROR_STYLE)
        self.load_problems = QLabel(objectName="presetLoadProblems", wordWrap=True, styleSheet=ERROR_STYLE)
        self.capacity = QLabel(objectName="capacityPlan", wordWrap=True)
        self.capacity.setStyleSheet("background: #f3f4f6; padding: 4px;")
        self.progress = ElidedProgressBar(objectName="presetProgress", visible=False)
        self.buttons = {}
        row = QHBoxLayout()
        for name, text, slot in (("apply", "Apply", self.apply), ("save", "Save as…", self.save_as),
                                 ("import", "Import…", self.import_file), ("export", "Export…", self.export_file),
                                 ("reset", "Reset", self.reset)):
            self.buttons[name] = QPushButton(text, objectName=f"preset{name.capitalize()}Button")
            self.buttons[name].clicked.connect(lambda _=False, s=slot: s())
            row.addWidget(self.buttons[name])
        commands = QHBoxLayout()
        for name, text, slot in (("exportAs", "Export as…", self.export_as),
                                 ("importCommand", "Import command line…", self.import_command)):
            self.buttons[name] = QPushButton(text, objectName=f"preset{name[0].upper()}{name[1:]}Button")
            self.buttons[name].clicked.connect(lambda _=False, s=slot: s())
            commands.addWidget(self.buttons[name])
        self.origin = QLabel(objectName="presetOrigin", wordWrap=True, visible=False)
        self.setMinimumWidth(360)  # the engine region at a 1280-pixel screen holds it without scrolling
        layout = QVBoxLayout(self)
        for widget in (QLabel("<b>Preset</b>"), self.choice, self.description, self.origin, self.load_problems,
                       self.values,
                       self.diff, self.problem_text, QLabel("<b>Capacity</b>"), self.capacity, self.progress):
            layout.addWidget(widget, 1 if widget is self.values else 0)
        layout.addLayout(row)
        layout.addLayout(commands)

    # -------------------------------------------------------------- presets
    def reload(self, select: str | None = None) -> None:
        """Reads every preset again; a broken user file is listed, and the others load. Unless a preset
        is named, the one the configuration came from is shown, or none (the app's own configuration)."""
        self.catalog = store.load_catalog()
        self.load_problems.setText("\n".join(f"Not loaded: {p}" for p in self.catalog.problems))
        self.load_problems.setVisible(bool(self.catalog.problems))
        current = select or (self.choice.currentText() if self.document is not None else "") or self.model.preset_name
        self.choice.blockSignals(True)
        self.choice.clear()
        self.choice.addItems(self.catalog.names())
        self.choice.setPlaceholderText(self._no_preset_text())
        self.choice.setCurrentIndex(-1)
        self.choice.blockSignals(False)
        if current in self.catalog.entries:
            self.choose(current)
        else:
            self.document = None
            self.refresh()

    def _no_preset_text(self) -> str:
        from workbench.engine.demo_model import is_demo_model

        return ("Demo configuration (not a preset)" if is_demo_model(self.model.config.model)
                else "The app's configuration (not a preset)")

    def choose(self, name: str) -> None:
        self.choice.setCurrentText(name)
        self._on_choice_changed(name)

    @Slot(str)
    def _on_choice_changed(self, name: str) -> None:
        entry = self.catalog.entries.get(name)
        if entry is None:
            return
        self.document = PresetDocument(copy.deepcopy(entry.document.doc), entry.document.path)
        self.buttons["reset"].setEnabled(entry.source == "edited")
        self.refresh()

    def refresh(self) -> None:
        """Resolves, checks and plans the preset being looked at, against the engine as it is now
        (running, starting, failed or none). Checks only where vLLM's names are read already: Apply
        reads them off the GUI thread."""
        if self.document is None:
            self._show_no_preset()
            return
        for name in ("apply", "save", "export", "exportAs"):
            self.buttons[name].setEnabled(name != "apply" or self._can_apply())
        facts = facts_for(self.model.config.model)
        self.resolved = resolve_preset(self.document, self.model.config, self.machine, facts)
        self.problems = problems_now(self.document, self.machine, facts)
        budget = self.document.gpu_memory_budget
        self.description.setText(self.document.description + (f" Budget: {budget:.0%} of each GPU, the engine's "
                                                               "processes in all." if budget else ""))
        self.origin.setText(origin_text(self.document.origin()))
        self.origin.setVisible(bool(self.origin.text()))
        running = config_rows(self.model.config, self.machine.on_cpu)
        self.values.show_preset(self.resolved, running, self.machine.platform_keys, self.defaults,
                                self._resolved_now(), self._running_header())
        self.diff.setText(self._diff_text())
        self.problem_text.setText("\n".join(p.message for p in self.problems))
        self.problem_text.setVisible(bool(self.problems))
        self._show_capacity(facts, self.resolved.config)

    def _show_no_preset(self) -> None:
        self.resolved, self.problems = None, []
        for name in ("apply", "save", "export", "exportAs", "reset"):
            self.buttons[name].setEnabled(False)
        self.values.show_engine(config_rows(self.model.config, self.machine.on_cpu), self.defaults,
                                self._resolved_now(), self._running_header())
        self.origin.setVisible(False)
        self.problem_text.setVisible(False)
        self.description.setText(f"{self._no_preset_text()}: the engine's settings are the app's own, listed below. "
                                 "Choose a preset to see how it differs and what it costs, then Apply it.")
        self.diff.setText("")
        self._show_capacity(facts_for(self.model.config.model), self.model.config)  # what the app's own costs

    def _running_header(self) -> str:
        return "Running" if self.model.engine.ready else "Configured"

    def _resolved_now(self) -> dict:
        """vLLM's resolved engine arguments of the running engine ({} with none running)."""
        engine = self.model.engine
        return engine.info.resolved if engine.ready and engine.info is not None else {}

    def _can_apply(self) -> bool:
        return self.checking is None and self.model.engine.state is not EngineState.STARTING

    def _diff_text(self) -> str:
        """How the preset differs from the engine as it is: running, starting, or none (never "the
        running engine" where there is none)."""
        engine = self.model.engine
        resolved_now = self._resolved_now()
        running = config_rows(self.model.config, self.machine.on_cpu)
        changes = [(key, old, new) for key, old, new in diff_configs(self.model.config, self.resolved.config,
                                                                      self.machine.on_cpu)
                   if not (old is None and new == running_value(key, running, resolved_now, self.defaults))]
        what = {EngineState.READY: "the running engine", EngineState.STARTING: "the engine starting now"}.get(engine.state)
        if what is None:
            why = {EngineState.FAILED: "its last start failed", EngineState.DIED: "it stopped unexpectedly"}.get(
                engine.state, "it is stopped" if engine.start_id else "it has not started yet")
            return f"No engine is running ({why}): Apply starts one with this preset."
        if not changes:
            return f"Same as {what}."
        defaults = self.defaults if self.defaults is not None else None
        parts = []
        for key, old, new in changes:
            old_text = f"vLLM default: {resolved_now[key]}" if old is None and resolved_now.get(key) is not None \
                else value_text(old, defaults.get(key) if defaults is not None else NOT_READ)
            parts.append(f"{key} {old_text} → {value_text(new, defaults.get(key) if defaults is not None else NOT_READ)}")
        return f"Differs from {what}: " + "; ".join(parts)

    def _show_capacity(self, facts, planned: EngineConfig) -> None:
        """The KV cache ``planned`` would get here, and beside it vLLM's own count of the engine that runs."""
        if facts is None:
            self.capacity.setText(NO_FACTS_DEMO if planned.model in (DEMO_MODEL, DEMO_VL_MODEL) else NO_FACTS)
            return
        plan = plan_capacity(planned, facts, self.machine)
        lines = plan.lines()
        info = self.model.engine.info
        if self.model.engine.ready and info is not None:  # vLLM's own count only of an engine that runs
            running_plan = plan if planned == self.model.config else plan_capacity(self.model.config, facts,
                                                                                   self.machine)
            lines.append("Running engine: " + compare_with_engine(running_plan, info.num_kv_blocks))
            self.model.note_capacity_plan(self.model.engine.start_id, running_plan.num_blocks)
        self.capacity.setText("\n".join(lines))

    @Slot()
    def _on_value_edited(self, key: str, value) -> None:
        written = plain(self.document.doc["engine"][key])
        if is_platform_table(written):
            written[self.machine.table_key(written)] = value
            value = written
        self.document.set_engine_value(key, value)
        self.refresh()

    # -------------------------------------------------------------- vLLM's names and defaults, off the GUI thread
    def load_defaults(self) -> None:
        """Reads vLLM's defaults off the GUI thread (once); the table and the diff say them after."""
        if self.defaults is not None or self._loading is not None:
            return
        # errors go to the handler only (without it superqt raises them again on the GUI thread)
        self._loading = create_worker(defaults_off_thread, _start_thread=False,
                                      _connect={"errored": self._on_defaults_errored})
        self._loading.returned.connect(self._on_defaults_returned)
        self._loading.start()

    @Slot(object)
    def _on_defaults_returned(self, defaults: dict) -> None:
        self._loading, self.defaults = None, defaults
        self.refresh()

    @Slot(object)
    def _on_defaults_errored(self, _error) -> None:
        self._loading = None  # vLLM could not be read here: the values say "vLLM default" without a figure

    # -------------------------------------------------------------- applying
    def apply(self, when_busy: str | None = None) -> bool:
        """Checks the preset off the GUI thread ("Checking the preset…"), then switches the engine to it
        (``checked`` tells the outcome). With requests in flight, ``when_busy`` (or the user, asked) says
        whether they finish first or are aborted. False when no check was started (one runs already,
        or no preset is chosen)."""
        if self.document is None or self.checking is not None:
            return False
        self._when_busy = when_busy
        document = PresetDocument(copy.deepcopy(self.document.doc), self.document.path)
        self.checking = create_worker(
            check_off_thread, document, self.machine, facts_for(self.model.config.model), _start_thread=False,
            _connect={"errored": self._on_check_errored})
        self.checking.returned.connect(self._on_check_returned)
        self.buttons["apply"].setEnabled(False)
        self.progress.setRange(0, 0)  # busy: the check has no steps to count
        self.progress.show_progress("Checking the preset…", 0.0)
        self.progress.setVisible(True)
        self.checking.start()
        return True

    def _end_check(self) -> None:
        self.checking = None
        self.progress.setRange(0, 100)
        self.progress.setVisible(self.model.engine.state is EngineState.STARTING)
        self.buttons["apply"].setEnabled(self._can_apply())

    @Slot(object)
    def _on_check_returned(self, result) -> None:
        self._end_check()
        self.problems, self.defaults = result
        went_ahead = self._after_check()
        self.checked.emit(went_ahead)

    @Slot(object)
    def _on_check_errored(self, error) -> None:
        self._end_check()
        self.problem_text.setText(f"Not applied: the preset could not be checked ({type(error).__name__}: {error}).")
        self.problem_text.setVisible(True)
        self.checked.emit(False)

    def _after_check(self) -> bool:
        """On the GUI thread, once the check has ended: refuses with the problems, or asks what it must
        (trust, requests in flight) and switches."""
        problems = self.problems
        self.refresh()
        if problems:
            self.problems = problems
            self.problem_text.setText("Not applied:\n" + "\n".join(p.message for p in problems))
            self.problem_text.setVisible(True)
            return False
        if self.resolved.needs_trust and not self._confirm_trust():
            return False
        if self.model.num_in_flight():
            when_busy = self._when_busy or self._ask_in_flight()
            if when_busy is None:
                return False
            if when_busy == ABORT:
                for request_id in self.model.open_chat_requests():
                    self.abort(request_id)
            else:
                self.pending = self.resolved
                self.diff.setText(f"Waiting for {self.model.num_in_flight()} request(s) to finish…")
                self.wait_timer.start()
                return True
        return self._switch(self.resolved)

    def _switch(self, resolved) -> bool:
        """Applies ``resolved`` and restarts the engine on it; False where a search kept the engine."""
        def switch() -> bool:
            self.model.apply_preset(resolved.name, resolved.config, resolved.sampling)
            self.restart()
            return True

        return bool(self.take_engine(f"apply the preset {resolved.name!r}", switch))

    @Slot()
    def _on_wait_timer(self) -> None:
        if self.pending is not None and not self.model.num_in_flight():
            self.wait_timer.stop()
            pending, self.pending = self.pending, None
            self._switch(pending)

    def _ask_in_flight(self) -> str | None:
        box = QMessageBox(QMessageBox.Question, "Requests in flight",
                          f"{self.model.num_in_flight()} request(s) are running. Let them finish before the "
                          "switch, or abort them now? Conversations stay either way.", parent=self)
        finish = box.addButton("Finish them", QMessageBox.AcceptRole)
        abort = box.addButton("Abort them", QMessageBox.DestructiveRole)
        box.addButton(QMessageBox.Cancel)
        box.exec()
        return {finish: FINISH, abort: ABORT}.get(box.clickedButton())

    def _confirm_trust(self) -> bool:
        model = self.model.config.model
        answer = QMessageBox.question(self, "Run the model's own code?",
                                      f"The preset sets trust_remote_code: vLLM would run Python code that comes "
                                      f"with {model}. Allow it for this model (remembered)?")
        if answer != QMessageBox.Yes:
            return False
        remember_trust(model)
        self.refresh()
        return True

    def _on_model_engine_changed(self, status) -> None:
        starting = status.state is EngineState.STARTING
        if self.checking is None:
            self.progress.setVisible(starting)
            if starting and status.progress is not None:
                self.progress.show_progress(status.progress.label, status.progress.fraction)
        state = (status.state, status.start_id)
        if state == self._last_state and not (status.ready and status.info is not None):
            return  # start progress only
        self._last_state = state
        if status.state is not EngineState.STARTING:  # the first start has settled: read vLLM's defaults now
            self.load_defaults()
        self.refresh()

    # -------------------------------------------------------------- files
    def save_as(self, name: str | None = None) -> Path | None:
        if name is None:
            name, ok = QInputDialog.getText(self, "Save preset", "Name:", text=self.document.name)
            if not ok:
                return None
        try:
            if name != self.document.name and not self.confirm_replace([name]):
                return None  # the preset of that name kept; the one shown stays as edited
            path = store.save_user_preset(self.document, name)
        except store.PresetNameError as exc:
            self.problem_text.setText(str(exc))
            self.problem_text.setVisible(True)
            return None
        self.reload(select=name)
        return path

    def import_file(self, source: str | None = None) -> Path | None:
        source = source or QFileDialog.getOpenFileName(self, "Import preset", "", "Presets (*.toml)")[0]
        if not source:
            return None
        try:
            path = store.import_preset(Path(source), lambda name: self.confirm_replace([name]))
            if path is None:
                return None  # the preset of that name kept
        except (PresetFileError, store.PresetNameError) as exc:
            self.problem_text.setText(f"Not imported: {exc}")
            self.problem_text.setVisible(True)
            return None
        self.reload(select=path.stem)
        return path

    def export_file(self, target: str | None = None) -> Path | None:
        target = target or QFileDialog.getSaveFileName(self, "Export preset", f"{self.document.name}.toml",
                                                       "Presets (*.toml)")[0]
        return store.export_preset(self.document, Path(target)) if target else None

    def export_as(self, show: bool = True):
        """The preset as command lines (Export as…); returns the dialog."""
        from workbench.presets.command_out import deployment_of
        from workbench.ui.command_export import CommandExportDialog

        deployment = deployment_of(self.document, self.machine, self.model.config.model,
                                   facts_for(self.model.config.model))
        dialog = CommandExportDialog(deployment, self.document.name, self)
        if show:
            dialog.show()
        return dialog

    def import_command(self, show: bool = True):
        """Import command line…: the dialog; the presets it saves are listed when it closes."""
        from workbench.ui.command_import import CommandImportDialog

        dialog = CommandImportDialog(self.model.config.model, self)
        dialog.finished.connect(lambda _result: dialog.saved and self.reload(select=dialog.saved[-1].stem))
        if show:
            dialog.show()
        return dialog

    def reset(self) -> None:
        name = self.choice.currentText()
        if store.reset_shipped(name):
            self.reload(select=name)
