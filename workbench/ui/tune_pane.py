"""Tools > Tune…: the Tune tab of the work region. A search runs for minutes to hours on the app's own
engine, so it is a tab beside Chat and Batch rather than a dialog: the engine region stays in view
beside it (its heatmap and plots show the running trial, whose engine is the app's), the search goes
on while the user looks at another tab, and nothing floats over the window or gets lost behind it.

Above, the setup (:class:`~workbench.ui.tune_form.TuneForm` and the search space's
:class:`~workbench.ui.tune_space.SpaceTable`); below, the progress bar, the live plot of output tok/s
against p99 TTFT with the Pareto front, the table of trials and the verdict, with "Apply as preset…"
and "Copy vllm serve line". The pane calls the search's methods and observes its signals
(:class:`~workbench.tune.values.TuneControls`); it never posts an engine command itself."""
from __future__ import annotations

import shiboken6
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QApplication, QComboBox, QHBoxLayout, QInputDialog, QLabel, QMessageBox, QProgressBar, QScrollArea,
    QSplitter, QToolButton, QVBoxLayout, QWidget,
)
from superqt.utils import create_worker

from workbench.presets import store
from workbench.tune.problems import TuneRefused
from workbench.tune.values import Goal, SearchSpace, TrialResult, TuneProgress, TuneSpec, Verdict
from workbench.ui.preset_replace import ask_replace
from workbench.ui.tune_form import ERROR_STYLE, TuneForm
from workbench.ui.tune_plot import TunePlot
from workbench.ui.tune_space import SpaceProblem, SpaceTable
from workbench.ui.tune_table import TrialTableModel, columns_for_goal, trials_view
from workbench.ui.tune_text import ENDED, end_text, progress_text, search_summary, unbroken_units, verdict_html

PROGRESS_STEPS = 1000


class TunePane(QWidget):
    """``tune``: the search (TuneControls); ``space``: the space offered at first; ``list_sessions()``:
    ``(session id, text, summary words)`` of the stored sessions, called off the GUI thread; ``preset_saved(name)``:
    told when "Apply as preset" saved one (the Presets tab lists it)."""

    def __init__(self, tune, space: SearchSpace, list_sessions=None, preset_saved=None, gpu_only: tuple[str, ...] = ()):
        super().__init__(objectName="tunePane")
        self.tune, self.list_sessions, self.preset_saved = tune, list_sessions, preset_saved
        self.ask_name = self._ask_preset_name  # replaced by tests
        self.confirm_unknown_model = self._confirm_unknown_model  # (name, model) -> bool; replaced by tests
        self.confirm_replace = lambda names: ask_replace(self, names)  # replaced by tests
        self.spec: TuneSpec | None = None  # the search shown
        self._asked: TuneSpec | str | None = None  # a search asked for (a spec, or a name to resume), not yet shown
        self._past_shown: str | None = None  # the search that just ended, to be chosen beside Open once listed
        self.goal = Goal()
        self.running = False
        self.checking = False  # a search's settings being checked before it starts
        self.verdict: Verdict | None = None
        self.workers = set()
        self.form = TuneForm()
        self.space = SpaceTable(space, gpu_only)  # gpu_only: the parameters a GPU would add, named on a CPU
        self.plot = TunePlot()
        self.trials = TrialTableModel()
        self.table = trials_view(self.trials)
        self._build_controls()
        self._lay_out()
        self.form.sessions_wanted.connect(self.refresh_sessions)
        tune.progress_changed.connect(self._on_tune_progress_changed)
        tune.trial_finished.connect(self._on_tune_trial_finished)
        tune.finished.connect(self._on_tune_finished)
        self.offer_resumable()

    def _build_controls(self) -> None:
        self.buttons = {}
        for key, text, slot in (("start", "Start", self.start), ("stop", "Stop", self.stop),
                                ("resume", "Resume", self.resume), ("open", "Open", self.open_past),
                                ("preset", "Apply as preset…", self.apply_as_preset),
                                ("serve", "Copy vllm serve line", self.copy_serve_line)):
            # tool buttons: as wide as their words (a push button is 80 px at the least), so that the row fits a
            # window on half a laptop's screen
            button = QToolButton(text=text, objectName=f"tune{key.capitalize()}Button")
            button.clicked.connect(lambda _=False, s=slot: s())
            self.buttons[key] = button
        self.setup_button = QToolButton(text="Setup", objectName="tuneSetupButton", checkable=True, checked=True)
        self.setup_button.setToolTip("Show or hide the workload, goal and search space")
        self.setup_button.toggled.connect(self._on_setup_button_toggled)
        self.summary = QLabel(objectName="tuneSummary", wordWrap=True, visible=False)
        # the lists share their row's width, not their longest name's (a long name had widened the whole window);
        # a name made by the clock ("tune-20261207-120143") is whole in the room a narrow window leaves
        self.resumable = QComboBox(objectName="tuneResumable", minimumContentsLength=10,
                                   sizeAdjustPolicy=QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.resumable.setToolTip("Searches a closed or killed app left unfinished: Resume carries one on")
        self.past = QComboBox(objectName="tunePast", minimumContentsLength=10,
                              sizeAdjustPolicy=QComboBox.AdjustToMinimumContentsLengthWithIcon)
        self.past.setToolTip("Searches that ended: Open shows one's trials and verdict, to apply or copy its best")
        self.progress = QProgressBar(objectName="tuneProgress", maximum=PROGRESS_STEPS, textVisible=True,
                                     visible=False)  # shown with the first search
        self.phase = QLabel(objectName="tunePhase", wordWrap=True, visible=False)
        self.busy = QProgressBar(objectName="tuneBusy", maximum=0, textVisible=False, visible=False,
                                 maximumWidth=160)  # moves while a check or a read runs on its worker
        self.message = QLabel(objectName="tuneMessage", wordWrap=True,
                              textInteractionFlags=Qt.TextSelectableByMouse)
        self.verdict_label = QLabel(objectName="tuneVerdict", wordWrap=True,
                                    textInteractionFlags=Qt.TextSelectableByMouse)
        self._update_buttons()

    def _lay_out(self) -> None:
        setup = QWidget()
        setup_layout = QVBoxLayout(setup)
        setup_layout.addWidget(self.form)
        setup_layout.addWidget(QLabel("<b>Search space</b> (double-click a range to edit it)"))
        setup_layout.addWidget(self.space, 1)
        self.setup_area = QScrollArea(objectName="tuneSetup", widgetResizable=True)
        self.setup_area.setWidget(setup)
        results = self.results = QSplitter(Qt.Vertical, objectName="tuneResultsSplitter")
        results.addWidget(self.plot)
        results.addWidget(self.table)
        results.hide()  # until a search is shown: the setup has the room before
        self.splitter = QSplitter(Qt.Vertical, objectName="tuneSplitter")
        self.splitter.addWidget(self.setup_area)
        self.splitter.addWidget(results)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        row = QHBoxLayout()
        for widget in (self.buttons["start"], self.buttons["stop"], self.setup_button):
            row.addWidget(widget)
        row.addStretch(1)
        for widget in (self.buttons["preset"], self.buttons["serve"]):
            row.addWidget(widget)
        # the stored searches on a row of their own, so that the tab stays as narrow as before on a small screen
        # (each list and its button hidden while it lists nothing)
        stored = QHBoxLayout()
        for widget in (self.resumable, self.buttons["resume"], self.past, self.buttons["open"]):
            stored.addWidget(widget, 1 if isinstance(widget, QComboBox) else 0)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addLayout(stored)
        layout.addWidget(self.progress)
        phase_row = QHBoxLayout()
        phase_row.addWidget(self.phase, 1)
        phase_row.addWidget(self.busy)
        layout.addLayout(phase_row)
        layout.addWidget(self.summary)
        layout.addWidget(self.splitter, 1)
        layout.addWidget(self.verdict_label)
        layout.addWidget(self.message)

    # ------------------------------------------------------------------ actions
    def start(self) -> bool:
        """Checks the search the form and table describe on a worker thread (vLLM's view of the space, the
        workload read whole: seconds, the first time), then starts it; a refusal is shown beside its
        fields (nothing typed is lost, and the last search's results stay shown). True if the check began."""
        self.form.clear_problems()
        self.space.show_problems([])
        try:
            spec = self.form.spec(self.space.space())
        except SpaceProblem as problem:
            self.space.show_problems([str(problem)])
            return False
        self._set_checking(True)
        self._set_setup_enabled(False)
        self._set_phase("Checking the settings against vLLM and reading the workload…")
        self._update_buttons()
        self._off_thread(lambda: self.tune.check(spec), lambda problems: self._on_checked(spec, problems),
                         lambda error: self._on_checked(spec, [f"The check failed: {error}"]))
        return True

    def _on_checked(self, spec: TuneSpec, problems: list[str]) -> None:
        self._set_checking(False)
        self._set_phase("")
        if not problems:
            self._asked = spec
            try:
                self.tune.start(spec)
            except TuneRefused as refused:
                self._asked, problems = None, list(refused.messages)
        if problems:
            self._show_refusal(problems)
            self._set_setup_enabled(True)
            self._update_buttons()
            return
        self._show_running()

    def _show_refusal(self, messages: list[str]) -> None:
        named = self.space.show_problems(messages)
        self.form.place_problems([m for m in messages if m not in named])
        self._set_message("The search did not start: " + " ".join(messages), error=True)

    def _take_search(self) -> None:
        """The search asked for has begun (its first report, or its start returned): the last one's results
        make room for its own (a resumed search's trials so far)."""
        if self._asked is None:
            return
        stored = getattr(getattr(self.tune, "study", None), "spec", None)  # a resumed search's own
        self.spec = stored or (self._asked if isinstance(self._asked, TuneSpec) else None)
        self._asked = None
        self.goal = self.spec.goal if self.spec is not None else Goal()
        if self.spec is not None:  # the line that stands for the setup names the search shown
            self.summary.setText(unbroken_units(search_summary(self.spec)))
        self.plot.set_goal(self.goal)
        self.running, self.verdict = True, None
        self.trials.set_param_names([p.name for p in self.spec.space.searched()] if self.spec else [])
        self.trials.set_trials(self.tune.trials())
        for header, shown in columns_for_goal(self.goal.kind).items():  # figure columns keep their places
            self.table.setColumnHidden(self.trials.headers().index(header), not shown)
        self._show_trials(None)
        self.verdict_label.clear()
        self._set_message("")
        self.progress.setValue(0)
        self.progress.setFormat("Starting…")
        self.progress.show()
        self.results.show()

    def _set_setup_enabled(self, enabled: bool) -> None:
        self.form.set_enabled_while_running(not enabled)
        self.space.setEnabled(enabled)

    def _show_running(self) -> None:
        self._take_search()
        if not self.running:  # it ended already, within its start (its end is shown)
            return
        self._set_setup_enabled(False)
        self.setup_button.setChecked(False)  # the results take the room; the setup is a click away
        self._update_buttons()

    def _on_setup_button_toggled(self, shown: bool) -> None:
        """The setup shown, or in its place one line saying what the search shown runs."""
        self.setup_area.setVisible(shown)
        spec = self.spec
        self.summary.setVisible(not shown and spec is not None)
        if spec is not None:
            self.summary.setText(unbroken_units(search_summary(spec)))

    def stop(self) -> None:
        """Stops after the running trial's measure: what was measured stays in the table."""
        if self.running:
            self.tune.stop()
            self.buttons["stop"].setEnabled(False)
            self._set_phase("Stopping: the running trial's figures are kept…")

    def resume(self, name: str | None = None) -> bool:
        """Reads the stored search off the GUI thread (a long one takes half a second to load), then carries it on.
        True if the read began."""
        return self._read_stored(name or self.resumable.currentText(), self.tune.prepare_resume,
                                 self._on_resume_read)

    def _on_resume_read(self, name: str, ready, error: Exception | None = None) -> None:
        if error is None and getattr(ready, "model_unknown", False) and \
                not self.confirm_unknown_model(name, ready.model):
            self._update_buttons()
            self._set_message(f"The search “{name}” was not resumed; its trials are kept.")
            return
        if error is None:
            self._asked = name
            try:
                self.tune.resume(name, ready=ready)
            except (TuneRefused, KeyError, ValueError, OSError) as refused:  # a search started meanwhile
                error = refused
        if error is not None:  # its storage gone or unreadable since it was offered, another model, a refusal
            self._update_buttons()
            self._say_not_stored(name, error, "resumed", "Start a new search instead.")
            return
        self._show_running()

    def _confirm_unknown_model(self, name: str, model: str) -> bool:
        """Whether to resume a search kept without the model it ran on (an earlier version's) on ``model``: asked,
        not assumed."""
        box = QMessageBox(QMessageBox.Question, "Resume a search",
                          f"The search “{name}” was kept by an earlier version of the workbench, which did not "
                          "note the model it ran on. Its trials so far compare with new ones only on the same model "
                          f"and machine.\n\nResume it on {model}?", parent=self)
        resume = box.addButton("Resume", QMessageBox.AcceptRole)
        box.addButton(QMessageBox.Cancel)
        box.exec()
        return box.clickedButton() is resume

    def open_past(self, name: str | None = None) -> bool:
        """Reads an ended search off the GUI thread (a long one's thousand trials take tenths of a second), then
        shows it as it ended: its table, plot and verdict; Apply and Copy then act on its best. True if the read
        began."""
        return self._read_stored(name or self.past.currentText(), self.tune.read_stored, self._on_past_read)

    def _read_stored(self, name: str, read, then) -> bool:
        """Runs ``read(name)`` on a worker while the buttons wait and the busy bar moves, then ``then(name, what it
        read, None)`` or ``then(name, None, error)`` on the GUI thread. True if the read began."""
        if not name or self.running or self.checking:
            return False
        self._set_checking(True)  # the buttons wait for it, as for a check
        self._set_phase(f"Reading {name}…")
        self._update_buttons()

        def done(value, error: Exception | None = None) -> None:
            self._set_checking(False)
            self._set_phase("")
            then(name, value, error)

        self._off_thread(lambda: read(name), done, lambda error: done(None, error))
        return True

    def _on_past_read(self, name: str, stored, error: Exception | None = None) -> None:
        self._update_buttons()
        if error is None:
            self._asked = name
            try:
                self.tune.open(name, stored)
            except TuneRefused as refused:  # a search started meanwhile
                error = refused
        if error is not None:
            self._say_not_stored(name, error, "opened", "")
            return
        self.setup_button.setChecked(False)  # the results take the room; the setup is a click away
        self.past.setCurrentText(name)  # the list says which is shown
        if not self.message.text():
            self._set_message(f"{name}, as it ended: Apply as preset… and Copy vllm serve line take its best.")

    def _say_not_stored(self, name: str, error: Exception, done: str, instead: str) -> bool:
        """A stored search that could not be resumed or opened: a refusal in its own words; one gone or unreadable
        since the list was read named as such, and the lists read again. False."""
        self._asked = None
        if isinstance(error, TuneRefused):
            self._set_message(f"{name} cannot be {done}: " + " ".join(error.messages), error=True)
            return False
        reason = "it is no longer kept" if isinstance(error, KeyError) else f"{type(error).__name__}: {error}"
        self._set_message(f"{name} cannot be {done}: {reason}. {instead}".strip(), error=True)
        self.offer_resumable()
        return False

    def apply_as_preset(self) -> str:
        name = self.ask_name()
        if not name:
            return ""
        try:
            if not self.confirm_replace([name]):
                self._set_message(f"The preset was not saved: the preset “{name}” is kept as it was. Apply as "
                                  "preset again with another name.")
                return ""
            path = self.tune.apply_as_preset(name)
        except (OSError, ValueError) as error:
            self._set_message(f"The preset was not saved: {error}", error=True)
            return ""
        self._set_message(f"Saved as the preset “{name}” ({path}); the Presets tab lists it, Apply starts it.")
        if self.preset_saved is not None:
            self.preset_saved(name)
        return str(path)

    def _ask_preset_name(self) -> str:
        try:  # a name that replaces no preset
            suggested = store.free_name((self.spec.name if self.spec else "tuned")[:59] + "-best")
        except store.PresetNameError:  # the search's name is no preset name
            suggested = store.free_name("tuned-best")
        name, ok = QInputDialog.getText(self, "Apply as preset", "The preset's name:", text=suggested)
        return name.strip() if ok else ""

    def copy_serve_line(self) -> str:
        line = self.tune.serve_line()
        if line:
            QApplication.clipboard().setText(line)
            self._set_message("Copied to the clipboard: " + " ".join(line.replace("\\\n", " ").split()))
        return line

    # ------------------------------------------------------------------ what the search reports
    def _on_tune_progress_changed(self, progress: TuneProgress) -> None:
        self._take_search()
        self.progress.setValue(_fraction(progress))
        self.progress.setFormat(progress_text(progress, self.goal))
        self._set_phase(progress.phase_text)
        self.trials.set_best(progress.best.number if progress.best else None)
        self._show_trials(progress)

    def _on_tune_trial_finished(self, trial: TrialResult) -> None:
        self._take_search()
        self.trials.put(trial)
        if trial.state != "running":
            self._show_trials(None)

    def _on_tune_finished(self, verdict: Verdict | None, message: str) -> None:
        self._take_search()
        self.running, self.verdict = False, verdict
        self._set_setup_enabled(True)
        self._set_phase("")
        ending = end_text(verdict, message)
        self.progress.setValue(PROGRESS_STEPS if ending in ("Finished", ENDED) else self.progress.value())
        self.progress.setFormat(ending)
        self.verdict_label.setText(unbroken_units(verdict_html(verdict, self.goal)) if verdict is not None else "")
        self._set_message(message, error=verdict is None and bool(message) and "stopped" not in message.lower())
        self.offer_resumable(shown=self.spec.name if self.spec is not None else None)
        self._update_buttons()

    def _show_trials(self, progress: TuneProgress | None) -> None:
        pareto = progress.pareto_numbers if progress is not None else self.plot.front
        best = progress.best.number if progress is not None and progress.best else self.trials.best_number
        self.plot.show_trials(self.trials.trials, pareto, best)

    # ------------------------------------------------------------------ resumable searches, stored sessions
    def offer_resumable(self, shown: str | None = None) -> None:
        """The searches a killed app left unfinished, offered in the combo beside Resume; those that ended, in
        the one beside Open, with ``shown`` (the search that just ended) chosen there: the list says which is shown."""
        if shown is not None:
            self._past_shown = shown
        self._off_thread(lambda: (self.tune.resumable(), self.tune.past()), self._on_stored_read,
                         self._on_stored_unreadable)

    def _on_stored_unreadable(self, error: Exception) -> None:
        """The searches' storage could not be read (a damaged file: the search's refusal names it and the fix)."""
        text = " ".join(error.messages) if isinstance(error, TuneRefused) else \
            f"The stored searches could not be read: {type(error).__name__}: {error}"
        self._set_message(text, error=True)

    def _on_stored_read(self, names: tuple[list[str], list[str]]) -> None:
        shown, self._past_shown = self._past_shown, None
        for combo, found in zip((self.resumable, self.past), names):
            # kept chosen where it is still listed (the search just opened); beside Open, the one that just ended
            chosen = shown if combo is self.past and shown in found else combo.currentText()
            combo.clear()
            combo.addItems(found)
            if chosen in found:
                combo.setCurrentText(chosen)
        self._update_buttons()

    def refresh_sessions(self) -> None:
        if self.list_sessions is None:
            self.form.set_sessions([])
            return
        self._off_thread(self.list_sessions, self.form.set_sessions)

    def _off_thread(self, function, done, failed=None) -> None:
        failed = failed or (lambda error: self._set_message(str(error), error=True))

        def while_shown(callback):  # a pane deleted while the worker ran (the window closed) gets no call
            return lambda value: callback(value) if shiboken6.isValid(self) else None

        worker = create_worker(function, _start_thread=False, _connect={"errored": while_shown(failed)})
        worker.returned.connect(while_shown(done))
        worker.finished.connect(lambda: self.workers.discard(worker))
        self.workers.add(worker)
        worker.start()

    # ------------------------------------------------------------------ state shown
    def _update_buttons(self) -> None:
        has_result = not self.running and any(t.state == "complete" for t in self.trials.trials)
        self.buttons["start"].setEnabled(not self.running and not self.checking)
        self.buttons["stop"].setEnabled(self.running)
        offered = not self.running and not self.checking and self.resumable.count() > 0
        self.resumable.setVisible(offered)
        self.buttons["resume"].setVisible(offered)
        past = not self.running and not self.checking and self.past.count() > 0
        self.past.setVisible(past)
        self.buttons["open"].setVisible(past)
        self.buttons["preset"].setEnabled(has_result)
        self.buttons["serve"].setEnabled(has_result)

    def _set_checking(self, checking: bool) -> None:
        """A check or a read on a worker: the buttons wait for it (see :meth:`_update_buttons`), a busy bar moves."""
        self.checking = checking
        self.busy.setVisible(checking)

    def _set_phase(self, text: str) -> None:
        self.phase.setText(text)
        self.phase.setVisible(bool(text))

    def _set_message(self, text: str, error: bool = False) -> None:
        self.message.setText(text)
        self.message.setStyleSheet(ERROR_STYLE if error else "")


def _fraction(progress: TuneProgress) -> int:
    """How far the search is, in PROGRESS_STEPS: by trials and the verdict's reruns where the trials are
    planned (each rerun takes about a trial's time), else by time."""
    if progress.num_trials_planned:
        done = progress.num_trials_done + progress.num_reruns_done
        return int(PROGRESS_STEPS * min(1.0, done / (progress.num_trials_planned + progress.num_reruns_planned)))
    if progress.time_left_s is None:
        return 0
    total = progress.elapsed_s + progress.time_left_s
    return int(PROGRESS_STEPS * min(1.0, progress.elapsed_s / total)) if total > 0 else 0

