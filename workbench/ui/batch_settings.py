"""The batch pane's run settings (:class:`RunSettingsForm`): the sampling, chat template and bound of one run.

How a file is opened is asked in ``ui/open_prompt_dialog.py``; reading it and writing an export run on superqt
generator workers (``ui/batch_pane.py``).
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QFileDialog, QFormLayout, QLabel, QLineEdit, QSpinBox, QVBoxLayout, QWidget,
)

from workbench.batch.run import DEFAULT_MAX_IN_FLIGHT, RunSettings
from workbench.engine.sampling import SamplingSettings
from workbench.ui.sampling_form import SamplingForm
from workbench.ui.sampling_panel import sampling_summary

BATCH_SAMPLING = SamplingSettings(temperature=0.0, max_tokens=64)  # a batch's defaults: repeatable, short


class RunSettingsForm(QWidget):
    """Sampling, the chat template for ``messages`` (the model's, or a template file), the system
    prompt and template use of plain prompts, and how many requests the batch keeps in the engine."""

    edited = Signal()  # any setting changed

    def __init__(self):
        super().__init__()
        self.sampling = SamplingForm(BATCH_SAMPLING, prefix="batch")
        self.template_choice = QComboBox(objectName="batchTemplate")
        self.template_choice.addItems(["The model's", "A template file…"])
        self.template_choice.activated.connect(self._on_template_chosen)
        self.template_text: str | None = None
        self.template_label = QLabel("", objectName="batchTemplateFile")
        self.system = QLineEdit(objectName="batchSystemPrompt", placeholderText="(none)")
        self.as_chat = QCheckBox("Plain prompts as chat", objectName="batchPromptsAsChat", checked=True)
        self.as_chat.setToolTip("On: a plain prompt goes as one user message through the chat template (after "
                                "the system prompt). Off: it is sent as raw text, a completion.")
        self.max_in_flight = QSpinBox(objectName="batchMaxInFlight", minimum=1, maximum=4096,
                                      value=DEFAULT_MAX_IN_FLIGHT)
        self.max_in_flight.setToolTip("At most this many of the batch's requests are in the engine at once; "
                                      "keep it below the engine's max_num_seqs so the chat always finds room.")
        form = QFormLayout()
        form.addRow("Chat template", self.template_choice)
        form.addRow("", self.template_label)
        form.addRow("System prompt", self.system)
        form.addRow(self.as_chat)
        form.addRow("In the engine", self.max_in_flight)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.sampling)
        layout.addLayout(form)
        layout.addStretch(1)
        self.setMaximumWidth(300)
        self.sampling.edited.connect(self.edited)
        self.system.textChanged.connect(self.edited)
        self.as_chat.toggled.connect(self.edited)
        self.max_in_flight.valueChanged.connect(self.edited)

    def summary(self) -> str:
        """One line: what the next run is asked with (the sampling's line, then the batch's own settings)."""
        settings = self.settings()
        template = f"template {Path(self.template_label.text()).name}" if self.template_text else "the model's template"
        parts = [sampling_summary(settings.sampling, template)]
        if settings.system_prompt:
            parts.append("system prompt")
        if not settings.prompts_as_chat:
            parts.append("plain prompts raw")
        parts.append(f"{settings.max_in_flight} in the engine")
        return " · ".join(parts)

    def _on_template_chosen(self, index: int) -> None:
        path = QFileDialog.getOpenFileName(self, "Chat template (Jinja)", "", "Templates (*.jinja *.j2 *.txt);;"
                                           "All files (*)")[0] if index == 1 else ""
        self.use_template_file(path or None)

    def use_template_file(self, path: str | None) -> None:
        """A Jinja chat template read from ``path``; None: the model's own."""
        self.template_text = Path(path).read_text(encoding="utf-8") if path else None
        self.template_choice.setCurrentIndex(1 if path else 0)
        self.template_label.setText(Path(path).name if path else "")
        self.edited.emit()

    def settings(self) -> RunSettings:
        return RunSettings(sampling=self.sampling.settings(), chat_template=self.template_text,
                           system_prompt=self.system.text(), prompts_as_chat=self.as_chat.isChecked(),
                           max_in_flight=self.max_in_flight.value())
