"""System prompt, sampling settings and the model's chat template of one conversation: the chat's
settings drawer, and the one-line summary of them shown above the transcript."""
from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFormLayout, QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from workbench.engine.backend import EngineInfo
from workbench.engine.sampling import DEFAULT_SAMPLING, SamplingSettings
from workbench.model.engine_status import chat_template_name, chat_template_text
from workbench.ui.sampling_form import SamplingForm


def sampling_summary(settings: SamplingSettings, template_name: str, system_prompt: str = "",
                     default_system_prompt: str = "") -> str:
    """One line that says what a conversation is asked with: temperature, top_p, max_tokens and the
    template always; top_k, seed, running to max_tokens and the system prompt where they are not the
    defaults."""
    parts = [f"temperature {settings.temperature:g}", f"top_p {settings.top_p:g}"]
    if settings.top_k != DEFAULT_SAMPLING.top_k:
        parts.append(f"top_k {settings.top_k}")
    if settings.seed is not None:
        parts.append(f"seed {settings.seed}")
    parts.append(f"{settings.max_tokens} tokens")
    if settings.ignore_eos:
        parts.append("to max_tokens")
    if system_prompt != default_system_prompt:
        parts.append("system prompt" if system_prompt.strip() else "no system prompt")
    parts.append(template_name)
    return " · ".join(parts)


class SamplingPanel(QWidget):
    """Narrow enough for a drawer beside the transcript: labels above their fields."""

    edited = Signal()  # the system prompt or a sampling field changed

    def __init__(self, default_system_prompt: str = ""):
        super().__init__()
        self.default_system_prompt = default_system_prompt
        self.template_name = chat_template_name(None)
        self.system = QPlainTextEdit(default_system_prompt, objectName="systemPrompt")
        self.form = SamplingForm()
        form = self.form
        form.form.setRowWrapPolicy(QFormLayout.WrapAllRows)
        self.temperature, self.top_p, self.top_k = form.temperature, form.top_p, form.top_k
        self.max_tokens, self.seed, self.ignore_eos = form.max_tokens, form.seed, form.ignore_eos
        self.ignore_eos.setText("Run to max_tokens")  # the form's longer words would widen the drawer
        self.ignore_eos.setToolTip("Ignore the end of turn: every reply runs to max_tokens.")
        self.template = QPlainTextEdit(objectName="chatTemplate")
        self.template.setReadOnly(True)
        self.template.setPlaceholderText("The model's chat template appears here once the engine is up.")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("System prompt"))
        layout.addWidget(self.system, 1)
        layout.addWidget(form)
        layout.addWidget(QLabel("Chat template (from the model)", wordWrap=True))
        layout.addWidget(self.template, 1)
        self.system.textChanged.connect(self.edited)
        form.edited.connect(self.edited)

    def system_prompt(self) -> str:
        return self.system.toPlainText()

    def settings(self) -> SamplingSettings:
        return self.form.settings()

    def summary(self) -> str:
        """The one line that says what is set here (``sampling_summary``)."""
        return sampling_summary(self.settings(), self.template_name, self.system_prompt(), self.default_system_prompt)

    def show_chat_template(self, info: EngineInfo | None) -> None:
        """The template of the engine that is ready (``info``: its facts), and its name for the summary."""
        self.template_name = chat_template_name(info)
        self.template.setPlainText(chat_template_text(info) if info is not None else "")
        self.edited.emit()
