"""System prompt, sampling settings and the model's chat template, beside the chat."""
from __future__ import annotations

from PySide6.QtWidgets import QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from workbench.engine.sampling import SamplingSettings
from workbench.ui.sampling_form import SamplingForm


class SamplingPanel(QWidget):
    def __init__(self, default_system_prompt: str = ""):
        super().__init__()
        self.system = QPlainTextEdit(default_system_prompt, objectName="systemPrompt")
        self.form = SamplingForm()
        form = self.form
        self.temperature, self.top_p, self.top_k = form.temperature, form.top_p, form.top_k
        self.max_tokens, self.seed, self.ignore_eos = form.max_tokens, form.seed, form.ignore_eos
        self.template = QPlainTextEdit(objectName="chatTemplate")
        self.template.setReadOnly(True)
        self.template.setPlaceholderText("The model's chat template appears here once the engine is up.")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("System prompt (this conversation)"))
        layout.addWidget(self.system, 2)
        layout.addWidget(form)
        layout.addWidget(QLabel("Chat template (from the model)"))
        layout.addWidget(self.template, 1)

    def system_prompt(self) -> str:
        return self.system.toPlainText()

    def settings(self) -> SamplingSettings:
        return self.form.settings()

    def show_chat_template(self, text: str) -> None:
        """``text``: the model's ``chat_template_text`` of the engine that is ready."""
        self.template.setPlainText(text)
