"""What a search runs: the workload (a generated one, a batch file, or a stored session's traffic
replayed), the goal (output tok/s; goodput under TTFT and TPOT limits; the lowest p99 TTFT at a
rate), the sampler, the time budget and the repeats of the verdict. :meth:`TuneForm.spec` reads it as a
:class:`TuneSpec`; a problem is shown under the field it is about, and what the user typed stays."""
from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDoubleSpinBox, QFileDialog, QFormLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit,
    QPushButton, QSpinBox, QStackedWidget, QVBoxLayout, QWidget,
)

from workbench.tune.values import Goal, SearchSpace, TuneSpec, WorkloadSpec

ERROR_STYLE = "color: #9b1c1c;"
WORKLOADS = (("generated", "Generated"), ("file", "Batch file"), ("session", "Stored session, replayed"))
GOALS = (("throughput", "Highest output tok/s"), ("goodput", "Highest goodput, under TTFT and TPOT limits"),
         ("ttft", "Lowest p99 TTFT at a rate"))
SAMPLERS = (("tpe", "TPE (one goal)"), ("nsga2", "NSGA-II (Pareto front: tok/s and p99 TTFT)"))
SESSION_LABEL_ROLE = Qt.UserRole + 1  # a session's words in the search's summary
FIELDS = ("workload", "goal", "budget", "general")  # where a problem can be shown
BUDGET_WORDS = ("budget", "engine start", "minutes")


def _spin(low: int, high: int, value: int, suffix: str = "", name: str = "") -> QSpinBox:
    return QSpinBox(minimum=low, maximum=high, value=value, suffix=suffix, objectName=name)


def _real(low: float, high: float, value: float, decimals: int, suffix: str = "", name: str = "") -> QDoubleSpinBox:
    return QDoubleSpinBox(minimum=low, maximum=high, value=value, decimals=decimals, suffix=suffix, objectName=name)


def _problem_label(name: str) -> QLabel:
    return QLabel(objectName=name, wordWrap=True, styleSheet=ERROR_STYLE, visible=False)


def _form(parent: QWidget) -> QFormLayout:
    """A form whose rows put their field below the label where the pane is narrow."""
    form = QFormLayout(parent)
    form.setRowWrapPolicy(QFormLayout.WrapLongRows)
    return form


def _combo(name: str, items) -> QComboBox:
    combo = QComboBox(objectName=name)
    for key, text in items:
        combo.addItem(text, key)
    return combo


class TuneForm(QWidget):
    """``sessions_wanted`` asks for the stored sessions' list (the pane reads it off the GUI thread
    and hands it to :meth:`set_sessions`)."""

    sessions_wanted = Signal()

    def __init__(self):
        super().__init__(objectName="tuneForm")
        self.problems = {key: _problem_label(f"tune{key.capitalize()}Problem") for key in FIELDS}
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._workload_box())
        layout.addWidget(self._goal_box())
        layout.addWidget(self._search_box())
        layout.addWidget(self.problems["general"])

    # ------------------------------------------------------------------ building
    def _workload_box(self) -> QGroupBox:
        box = QGroupBox("Workload")
        self.workload_kind = _combo("tuneWorkloadKind", WORKLOADS)
        self.workload_pages = QStackedWidget()
        self.workload_kind.currentIndexChanged.connect(self._on_workload_kind_changed)
        self.workload_pages.addWidget(self._generated_page())
        self.workload_pages.addWidget(self._file_page())
        self.workload_pages.addWidget(self._session_page())
        self.closed_loop = QCheckBox("Closed loop: keep this many in flight", objectName="tuneClosedLoop")
        self.concurrency = _spin(1, 4096, 16, name="tuneConcurrency")
        self.concurrency.setEnabled(False)
        self.closed_loop.toggled.connect(self.concurrency.setEnabled)
        loop_row = QHBoxLayout()
        loop_row.addWidget(self.closed_loop)
        loop_row.addWidget(self.concurrency)
        loop_row.addStretch(1)
        form = QVBoxLayout(box)
        form.addWidget(self.workload_kind)
        form.addWidget(self.workload_pages)
        form.addLayout(loop_row)
        form.addWidget(self.problems["workload"])
        return box

    def _generated_page(self) -> QWidget:
        page = QWidget()
        self.gen = {
            "num_requests": _spin(1, 100_000, 64, name="tuneNumRequests"),
            "rate_per_s": _real(0, 10_000, 0, 2, " /s", "tuneRate"),
            "prompt_tokens_mean": _spin(1, 1_000_000, 256, name="tunePromptMean"),
            "prompt_tokens_spread": _spin(0, 1_000_000, 64, name="tunePromptSpread"),
            "output_tokens_mean": _spin(1, 1_000_000, 64, name="tuneOutputMean"),
            "output_tokens_spread": _spin(0, 1_000_000, 16, name="tuneOutputSpread"),
            "shared_prefix_share": _spin(0, 100, 0, " %", "tuneSharedShare"),
            "shared_prefix_tokens": _spin(0, 1_000_000, 0, name="tuneSharedTokens"),
        }
        self.gen["rate_per_s"].setSpecialValueText("all at once")
        form = _form(page)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow("Requests", self.gen["num_requests"])
        form.addRow("Arrivals (Poisson)", self.gen["rate_per_s"])
        for label, key in (("Prompt tokens", "prompt_tokens"), ("Output tokens", "output_tokens")):
            form.addRow(label, self._pair(self.gen[f"{key}_mean"], "±", self.gen[f"{key}_spread"]))
        form.addRow("Shared prefix", self._pair(self.gen["shared_prefix_share"], "of requests start with",
                                                self.gen["shared_prefix_tokens"], "tokens"))
        return page

    @staticmethod
    def _pair(first: QWidget, between: str, second: QWidget, after: str = "") -> QWidget:
        row = QWidget()
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        for part in (first, QLabel(between), second, QLabel(after) if after else None):
            if part is not None:
                layout.addWidget(part)
        layout.addStretch(1)
        return row

    def _file_page(self) -> QWidget:
        page = QWidget()
        self.file_path = QLineEdit(objectName="tuneFilePath", placeholderText="A batch file (.jsonl, .txt, .csv, …)")
        browse = QPushButton("Browse…", objectName="tuneBrowse")
        browse.clicked.connect(self._on_browse_clicked)
        self.file_rate = _real(0, 10_000, 0, 2, " /s", "tuneFileRate")
        self.file_rate.setSpecialValueText("all at once")
        form = _form(page)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow("File", self._pair(self.file_path, "", browse))
        form.addRow("Arrivals (Poisson)", self.file_rate)
        return page

    def _session_page(self) -> QWidget:
        page = QWidget()
        self.session = QComboBox(objectName="tuneSession", minimumContentsLength=16,
                                 sizeAdjustPolicy=QComboBox.AdjustToMinimumContentsLengthWithIcon)
        refresh = QPushButton("Refresh", objectName="tuneSessionsRefresh")
        refresh.clicked.connect(self.sessions_wanted.emit)
        row = QWidget()
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.session, 1)  # as wide as the row: the list says when, on which model, how many
        layout.addWidget(refresh)
        form = _form(page)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow("Session", row)
        form.addRow("", QLabel("Its requests are sent again at their arrival times, with their prompt and "
                               "output lengths.", wordWrap=True))
        return page

    def _goal_box(self) -> QGroupBox:
        box = QGroupBox("Goal")
        self.goal_kind = _combo("tuneGoalKind", GOALS)
        self.ttft_limit = _real(0.001, 3600, 2.0, 3, " s", "tuneTtftLimit")
        self.itl_limit = _real(0.1, 100_000, 50.0, 1, " ms", "tuneItlLimit")
        self.goal_rate = _real(0, 10_000, 0, 2, " /s", "tuneGoalRate")
        self.goal_rate.setSpecialValueText("the workload's own")
        self.goal_kind.currentIndexChanged.connect(self._on_goal_kind_changed)
        form = _form(box)
        form.addRow(self.goal_kind)
        self.ttft_limit.setToolTip("Goodput counts the output tokens of the requests whose time to first token is "
                                   "within this (vllm bench serve --goodput ttft:…)")
        self.itl_limit.setToolTip("… and whose time per output token (TPOT: the mean gap between its tokens after "
                                  "the first) is within this (vllm bench serve --goodput tpot:…)")
        form.addRow("TTFT at most", self.ttft_limit)
        form.addRow("TPOT at most", self.itl_limit)
        form.addRow("At a rate of", self.goal_rate)
        form.addRow(self.problems["goal"])
        self._on_goal_kind_changed()
        return box

    def _search_box(self) -> QGroupBox:
        box = QGroupBox("Search")
        self.sampler = _combo("tuneSampler", SAMPLERS)
        self.budget = _real(0.5, 7 * 24 * 60, 30.0, 1, " min", "tuneBudget")
        self.max_trials = _spin(0, 10_000, 0, name="tuneMaxTrials")
        self.max_trials.setSpecialValueText("as many as the budget holds")
        self.repeats = _spin(1, 20, 3, " each", "tuneRepeats")
        self.overrun = _real(0.0, 24 * 60, 0.0, 1, " min", "tuneTrialOverrun")
        self.overrun.setSpecialValueText("automatic")
        self.overrun.setToolTip("A trial whose requests still run this long after the workload's last arrival is "
                                "ended as failed and the search goes on. Automatic: 3× the longest trial so far, "
                                "at least 2 minutes")
        self.name = QLineEdit(time.strftime("tune-%Y%m%d-%H%M"), objectName="tuneName")
        form = _form(box)
        form.addRow("Sampler", self.sampler)
        form.addRow("Time budget", self.budget)
        form.addRow(self.problems["budget"])
        form.addRow("Trials at most", self.max_trials)
        form.addRow("Verdict: best and defaults rerun", self.repeats)
        form.addRow("End a trial past its last arrival by", self.overrun)
        form.addRow("Name", self.name)
        return box

    # ------------------------------------------------------------------ reacting
    def _on_workload_kind_changed(self, index: int) -> None:
        self.workload_pages.setCurrentIndex(index)
        if WORKLOADS[index][0] == "session" and self.session.count() == 0:
            self.sessions_wanted.emit()

    def _on_goal_kind_changed(self, *_args) -> None:
        kind = self.goal_kind.currentData()
        for widget in (self.ttft_limit, self.itl_limit):
            widget.setEnabled(kind == "goodput")
        self.goal_rate.setEnabled(kind == "ttft")

    def _on_browse_clicked(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "A batch file for the search's workload")
        if path:
            self.file_path.setText(path)

    def set_sessions(self, sessions: list[tuple[str, str, str]]) -> None:
        """``(session id, what the list says, what the search's summary calls its requests)``, newest first; the
        chosen one stays chosen."""
        chosen = self.session.currentData()
        self.session.clear()
        for session_id, text, label in sessions:
            self.session.addItem(text, session_id)
            self.session.setItemData(self.session.count() - 1, label, SESSION_LABEL_ROLE)
            self.session.setItemData(self.session.count() - 1, text, Qt.ToolTipRole)
        index = self.session.findData(chosen)
        self.session.setCurrentIndex(max(index, 0))
        if not sessions:
            self.show_problem("workload", "No stored session has requests yet: run a chat or a batch first, "
                                          "or choose a generated workload.")

    # ------------------------------------------------------------------ reading
    def workload(self) -> WorkloadSpec:
        kind = self.workload_kind.currentData()
        concurrency = self.concurrency.value() if self.closed_loop.isChecked() else None
        if kind == "file":
            return WorkloadSpec("file", path=self.file_path.text().strip(),
                                rate_per_s=self.file_rate.value() or None, closed_loop_concurrency=concurrency)
        if kind == "session":
            return WorkloadSpec("session", session_id=self.session.currentData() or "",
                                session_label=self.session.currentData(SESSION_LABEL_ROLE) or "",
                                closed_loop_concurrency=concurrency)
        values = {key: widget.value() for key, widget in self.gen.items()}
        values["rate_per_s"] = values["rate_per_s"] or None
        values["shared_prefix_share"] = values["shared_prefix_share"] / 100
        return WorkloadSpec("generated", closed_loop_concurrency=concurrency, **values)

    def goal(self) -> Goal:
        kind = self.goal_kind.currentData()
        if kind == "goodput":
            return Goal("goodput", ttft_p99_limit_s=self.ttft_limit.value(), itl_p99_limit_ms=self.itl_limit.value())
        if kind == "ttft":
            return Goal("ttft", rate_per_s=self.goal_rate.value() or None)
        return Goal("throughput")

    def spec(self, space: SearchSpace) -> TuneSpec:
        return TuneSpec(self.workload(), self.goal(), space, time_budget_s=self.budget.value() * 60,
                        sampler=self.sampler.currentData(), repeats=self.repeats.value(),
                        name=self.name.text().strip() or time.strftime("tune-%Y%m%d-%H%M%S"),
                        max_trials=self.max_trials.value() or None,
                        trial_overrun_s=self.overrun.value() * 60 or None)

    # ------------------------------------------------------------------ problems
    def show_problem(self, field: str, message: str) -> None:
        label = self.problems[field]
        label.setText(message)
        label.setVisible(bool(message))

    def clear_problems(self) -> None:
        for field in FIELDS:
            self.show_problem(field, "")

    def place_problems(self, messages: list[str]) -> None:
        """Each message under the field it is about (the budget, the workload, the goal), the rest below all."""
        workload = self.workload()
        placed: dict[str, list[str]] = {field: [] for field in FIELDS}
        for message in messages:
            lower = message.lower()
            if any(word in lower for word in BUDGET_WORDS):
                placed["budget"].append(message)
            elif (workload.path and Path(workload.path).name in message) or "workload" in lower \
                    or "session" in lower or lower.startswith(("line ", "row ")):
                placed["workload"].append(message)
            elif "goal" in lower or "limit" in lower:
                placed["goal"].append(message)
            else:
                placed["general"].append(message)
        for field, own in placed.items():
            self.show_problem(field, "\n".join(own))

    def set_enabled_while_running(self, running: bool) -> None:
        for box in self.findChildren(QGroupBox):
            box.setEnabled(not running)
