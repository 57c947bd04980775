"""The sampling settings as a form: temperature, top_p, top_k, max_tokens, seed, run to max_tokens.

The chat's sampling panel and the batch pane's run settings both show one.
"""
from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QDoubleSpinBox, QFormLayout, QSpinBox, QWidget

from workbench.engine.sampling import DEFAULT_SAMPLING, SamplingSettings


class SamplingForm(QWidget):
    edited = Signal()  # any field changed, by the user or by ``set_settings``

    def __init__(self, defaults: SamplingSettings = DEFAULT_SAMPLING, prefix: str = ""):
        super().__init__()
        d = defaults
        self.temperature = self._double(prefix + "temperature", 0.0, 2.0, d.temperature, 0.05)
        self.top_p = self._double(prefix + "topP", 0.01, 1.0, d.top_p, 0.01)
        self.top_k = QSpinBox(objectName=prefix + "topK", minimum=0, maximum=1000, value=d.top_k)
        self.top_k.setSpecialValueText("off")
        self.max_tokens = QSpinBox(objectName=prefix + "maxTokens", minimum=1, maximum=32768, value=d.max_tokens)
        self.seed = QSpinBox(objectName=prefix + "seed", minimum=-1, maximum=2**31 - 1,
                             value=-1 if d.seed is None else d.seed)
        self.seed.setSpecialValueText("random")
        self.ignore_eos = QCheckBox("Run to max_tokens (ignore end of turn)", objectName=prefix + "ignoreEos")
        self.ignore_eos.setChecked(d.ignore_eos)
        self.form = QFormLayout(self)
        self.form.setContentsMargins(0, 0, 0, 0)
        self.form.addRow("Temperature", self.temperature)
        self.form.addRow("top_p", self.top_p)
        self.form.addRow("top_k", self.top_k)
        self.form.addRow("max_tokens", self.max_tokens)
        self.form.addRow("Seed", self.seed)
        self.form.addRow(self.ignore_eos)
        for box in (self.temperature, self.top_p, self.top_k, self.max_tokens, self.seed):
            box.valueChanged.connect(self.edited)
        self.ignore_eos.toggled.connect(self.edited)

    @staticmethod
    def _double(name: str, low: float, high: float, value: float, step: float) -> QDoubleSpinBox:
        box = QDoubleSpinBox(objectName=name, minimum=low, maximum=high, value=value, singleStep=step)
        box.setDecimals(2)
        return box

    def set_settings(self, s: SamplingSettings) -> None:
        self.temperature.setValue(s.temperature)
        self.top_p.setValue(s.top_p)
        self.top_k.setValue(s.top_k)
        self.max_tokens.setValue(s.max_tokens)
        self.seed.setValue(-1 if s.seed is None else s.seed)
        self.ignore_eos.setChecked(s.ignore_eos)

    def settings(self) -> SamplingSettings:
        return SamplingSettings(
            temperature=self.temperature.value(),
            top_p=self.top_p.value(),
            top_k=self.top_k.value(),
            max_tokens=self.max_tokens.value(),
            seed=None if self.seed.value() < 0 else self.seed.value(),
            ignore_eos=self.ignore_eos.isChecked(),
        )
