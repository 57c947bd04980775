"""The batch pane's parts around the table: how a file is opened, and the run's settings.

- :class:`OpenPromptDialog` asks the format (guessed from the file) and, for a CSV or records read by a named
  field, the prompt column or field;
- :class:`RunSettingsForm` holds the sampling, chat template and bound of one run.

Reading a file and writing an export run on superqt generator workers (``ui/batch_pane.py``).
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSignalBlocker, Signal
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFileDialog, QFormLayout, QLabel, QLineEdit, QSpinBox,
    QVBoxLayout, QWidget,
)

from workbench.batch.formats import (
    CONTAINERS, FORMATS, csv_columns, detect_container, detect_format, first_record, parse_prompts, prompt_column,
)
from workbench.batch.prompt_file import LineProblem, LineReader
from workbench.batch.records import text_fields
from workbench.batch.table_files import TableError, splits
from workbench.batch.run import DEFAULT_MAX_IN_FLIGHT, RunSettings
from workbench.engine.sampling import SamplingSettings
from workbench.ui.batch_table import elide
from workbench.ui.sampling_form import SamplingForm
from workbench.ui.sampling_panel import sampling_summary

PREVIEW_LINES = 200  # the lines a CSV's first record is looked for in (a quote left open reads no further)
BATCH_SAMPLING = SamplingSettings(temperature=0.0, max_tokens=64)  # a batch's defaults: repeatable, short


class OpenPromptDialog(QDialog):
    """How the file holds its records (shown), their format (detected, the user's to change), a datasets
    folder's split, the CSV column or the records' field that holds the prompts, and how many rows to read; the
    first record is shown as it will be asked."""

    def __init__(self, path: str, parent=None, max_rows: int | None = None):
        super().__init__(parent)
        self.path = path
        self.setWindowTitle(f"Open {Path(path).name}")
        self.container = detect_container(path)
        detected = detect_format(path)
        self.format = QComboBox(objectName="batchFormat")
        for key, label in FORMATS.items():
            self.format.addItem(label + (" (detected)" if key == detected else ""), key)
        self.format.setCurrentIndex(list(FORMATS).index(detected))
        # a DatasetDict's splits, a workbook's sheets
        self.split_choice = QComboBox(self, objectName="batchSplit", visible=False)
        try:
            self.split_choice.addItems(splits(path) if self.container in ("dataset", "xlsx") else [])
        except TableError:
            pass
        self.column = QComboBox(objectName="batchCsvColumn")
        self.column.setEditable(True)
        if self.container == "csv":
            self.column.addItems(csv_columns(path) or ["prompt"])
            self.column.setCurrentText(prompt_column(path) or self.column.currentText())
        elif self.container != "text":
            self.column.addItems(text_fields(first_record(path, self.split())) or ["question"])
        self._named_text = self.column.currentText()  # the column or field, kept while a format reads none
        self.column.currentTextChanged.connect(self._on_format_changed)
        self.rows = QSpinBox(objectName="batchMaxRows", minimum=0, maximum=1 << 30, value=max_rows or 0)
        self.rows.setSpecialValueText("all")
        self.rows.setToolTip("Read only the first N prompts (ms-swift's dataset#N); \"all\" reads the whole file.")
        self.preview = QLabel("", objectName="batchFirstRecord", wordWrap=True)
        self.preview.setMinimumWidth(420)
        self.split_choice.currentIndexChanged.connect(self._on_split_changed)
        for combo in (self.format, self.split_choice):
            combo.currentIndexChanged.connect(self._on_format_changed)
        buttons = QDialogButtonBox(QDialogButtonBox.Open | QDialogButtonBox.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form = QFormLayout(self)
        form.addRow("File", QLabel(CONTAINERS[self.container], objectName="batchContainer"))
        form.addRow("Format", self.format)
        if self.split_choice.count():
            form.addRow("Sheet" if self.container == "xlsx" else "Split", self.split_choice)
            self.split_choice.show()
        form.addRow("Prompt column or field", self.column)
        form.addRow("Rows", self.rows)
        form.addRow("First record", self.preview)
        form.addRow(buttons)
        self._on_format_changed()

    def _on_split_changed(self) -> None:
        """A workbook's sheets have columns of their own: the chosen sheet's are offered."""
        if self.container == "xlsx":
            with QSignalBlocker(self.column):
                self.column.clear()
                self.column.addItems(text_fields(first_record(self.path, self.split())) or ["question"])
            self._named_text = self.column.currentText()

    def _on_format_changed(self) -> None:
        fmt, column = self.chosen()
        named = fmt in ("csv", "field")
        self.column.setEnabled(named)
        if named != bool(self.column.currentText()):  # blank where the format reads no column or field
            if not named:
                self._named_text = self.column.currentText()
            with QSignalBlocker(self.column):
                self.column.setEditText(self._named_text if named else "")
        self.preview.setText(first_record_preview(self.path, fmt, self.split(), column))

    def chosen(self) -> tuple[str, str | None]:
        fmt = self.format.currentData()
        return fmt, (self.column.currentText() if fmt in ("csv", "field") else None)

    def split(self) -> str | None:
        return self.split_choice.currentText() or None

    def max_rows(self) -> int | None:
        return self.rows.value() or None


def first_record_preview(path: str, fmt: str, split: str | None, column: str | None = None) -> str:
    """The file's first record as the chosen format reads it: what is asked, and the reference answer."""
    try:
        source = LineReader(path, max_lines=PREVIEW_LINES) if fmt in ("csv", "text") else path
        items = parse_prompts(source, fmt, column, split=split)
        item = next(items, None)
        items.close()
    except (OSError, TableError) as exc:
        return f"Cannot be read: {exc}"
    if item is not None:
        if isinstance(item, LineProblem):
            return f"{item}"
        asked = elide(item.preview(), 160)
        turns = f" ({len(item.messages)} messages)" if item.messages and len(item.messages) > 1 else ""
        reference = f"\nReference: {elide(item.reference, 120)}" if item.reference is not None else ""
        return f"Asks: {asked}{turns}{reference}"
    return "The file holds no records."


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
