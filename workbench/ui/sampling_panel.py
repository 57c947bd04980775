"""System prompt, sampling settings and the model's chat template, beside the chat."""
from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox, QDoubleSpinBox, QFormLayout, QLabel, QPlainTextEdit, QSpinBox, QVBoxLayout, QWidget,
)

from workbench.engine.sampling import DEFAULT_SAMPLING, SamplingSettings


class SamplingPanel(QWidget):
    def __init__(self, default_system_prompt: str = ""):
        super().__init__()
        self.system = QPlainTextEdit(default_system_prompt, objectName="systemPrompt")
        d = DEFAULT_SAMPLING
        self.temperature = self._double("temperature", 0.0, 2.0, d.temperature, 0.05)
        self.top_p = self._double("topP", 0.01, 1.0, d.top_p, 0.01)
        self.top_k = QSpinBox(objectName="topK", minimum=0, maximum=1000, value=d.top_k)
        self.top_k.setSpecialValueText("off")
        self.max_tokens = QSpinBox(objectName="maxTokens", minimum=1, maximum=32768, value=d.max_tokens)
        self.seed = QSpinBox(objectName="seed", minimum=-1, maximum=2**31 - 1, value=-1 if d.seed is None else d.seed)
        self.seed.setSpecialValueText("random")
        self.ignore_eos = QCheckBox("Run to max_tokens (ignore end of turn)", objectName="ignoreEos")
        self.ignore_eos.setChecked(d.ignore_eos)
        self.template = QPlainTextEdit(objectName="chatTemplate")
        self.template.setReadOnly(True)
        self.template.setPlaceholderText("The model's chat template appears here once the engine is up.")
        form = QFormLayout()
        form.addRow("Temperature", self.temperature)
        form.addRow("top_p", self.top_p)
        form.addRow("top_k", self.top_k)
        form.addRow("max_tokens", self.max_tokens)
        form.addRow("Seed", self.seed)
        form.addRow(self.ignore_eos)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("System prompt"))
        layout.addWidget(self.system, 2)
        layout.addLayout(form)
        layout.addWidget(QLabel("Chat template (from the model)"))
        layout.addWidget(self.template, 1)

    @staticmethod
    def _double(name: str, low: float, high: float, value: float, step: float) -> QDoubleSpinBox:
        box = QDoubleSpinBox(objectName=name, minimum=low, maximum=high, value=value, singleStep=step)
        box.setDecimals(2)
        return box

    def system_prompt(self) -> str:
        return self.system.toPlainText()

    def settings(self) -> SamplingSettings:
        return SamplingSettings(
            temperature=self.temperature.value(),
            top_p=self.top_p.value(),
            top_k=self.top_k.value(),
            max_tokens=self.max_tokens.value(),
            seed=None if self.seed.value() < 0 else self.seed.value(),
            ignore_eos=self.ignore_eos.isChecked(),
        )

    def show_chat_template(self, template: str | None) -> None:
        self.template.setPlainText(template or "This model has no chat template: prompts are sent as a plain "
                                               "'User: … Assistant:' transcript.")
