"""Offscreen screenshots of the batch pane reading a file and failing an export, for the docs.

    python -m workbench.bench.gui.batch_screenshots DOCS_FOLDER

writes ``batch-malformed-line-ask.png`` (a 2,000-line prompt file read off the GUI thread stops at its
malformed line 1201 and asks), ``batch-export-failed.png`` (after "Skip", the 1,999 prompts shown and an
export into a folder that does not exist: the message says why and the results stay) and
``batch-excel-csv.png`` (a CSV as Excel saves it where the decimal mark is a comma: UTF-16, semicolons, a row
whose prompt holds an unquoted semicolon named and skipped) and ``batch-open-field.png`` (GSM8K's records opened:
the format detected as a prompt field, its text fields offered, the first record previewed with its answer as
the reference) and ``batch-open-excel-sep.png`` (a CSV whose first line ``sep=;`` names its delimiter, as
Excel reads it: the columns of its second line offered) and ``batch-open-workbook.png`` (an Excel workbook: its
sheets offered, the column with the questions chosen), ``batch-workbook-rows.png`` (its sheet read: the prompts
numbered by Excel's rows, the number typed where a question goes named) and ``batch-open-jq.png`` (records printed
one after another over many lines, as ``jq .`` prints them) and ``batch-open-looking.png`` (the dialog on a workbook
of 100,000 rows as it first shows, the file still being looked at). No engine.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from workbench.bench.gui.screenshot import process_events_until, save_small

NUM_LINES, BAD_LINE = 2000, 1201
TIMEOUT_S = 60.0


def main(argv: list[str]) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from workbench.app import demo_engine_config
    from workbench.model.app_model import AppModel
    from workbench.model.engine_commands import EngineCommands
    from workbench.ui.batch_pane import BatchPane

    docs = Path(argv[0] if argv else "docs")
    QApplication.instance() or QApplication([])
    folder = Path(tempfile.mkdtemp())
    lines = [json.dumps({"prompt": f"Question {i}: what does a paged KV cache keep?"}) for i in range(NUM_LINES)]
    lines[BAD_LINE - 1] = "{not json"
    (folder / "prompts.jsonl").write_text("\n".join(lines) + "\n")
    model = AppModel(demo_engine_config())
    EngineCommands(model, lambda command: None)  # no engine: nothing runs
    pane = BatchPane(model)
    pane.resize(1100, 640)
    pane.show()
    pane.open_file(str(folder / "prompts.jsonl"), "jsonl")
    process_events_until(lambda: pane.problem_box is not None, TIMEOUT_S)
    save_small(pane.problem_box, str(docs / "batch-malformed-line-ask.png"))
    next(b for b in pane.problem_box.buttons() if b.text().startswith("Skip")).click()
    process_events_until(lambda: pane.loading is None and pane.loader.done, TIMEOUT_S)
    pane.export_to(str(folder / "gone" / "results.csv"), "csv")
    process_events_until(lambda: pane.exporting is None, TIMEOUT_S)
    save_small(pane, str(docs / "batch-export-failed.png"))
    print(pane.progress_label.text())
    excel_csv(pane, folder, docs)
    open_field(folder, docs)
    open_excel_sep(folder, docs)
    book = open_workbook(folder, docs)
    workbook_rows(pane, book, docs)
    open_jq(folder, docs)
    open_large_workbook(folder, docs)
    return 0


def open_field(folder: Path, docs: Path) -> None:
    """The open dialog on GSM8K's test split as published (question, answer)."""
    path = folder / "gsm8k-test.jsonl"
    path.write_text(json.dumps({
        "question": "Janet's ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes muffins "
                    "for her friends every day with four. She sells the remainder at the farmers' market daily for "
                    "$2 per fresh duck egg. How much in dollars does she make every day at the farmers' market?",
        "answer": "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\nShe makes 9 * 2 = $<<9*2=18>>18 every "
                  "day at the farmer's market.\n#### 18"}) + "\n")
    _dialog_picture(path, docs / "batch-open-field.png")


def open_excel_sep(folder: Path, docs: Path) -> None:
    """The open dialog on a CSV that names its delimiter in a first line ``sep=;``."""
    path = folder / "fragen-sep.csv"
    path.write_text("\r\n".join(["sep=;", "Nr;" + EXCEL_ROWS[0], *(f"{i};{row}" for i, row in enumerate(EXCEL_ROWS[1:3], 1))])
                    + "\r\n", encoding="utf-8-sig")
    _dialog_picture(path, docs / "batch-open-excel-sep.png")


def open_workbook(folder: Path, docs: Path) -> Path:
    """The open dialog on an Excel workbook of two sheets, its questions beside numbers and topics."""
    import openpyxl

    book = openpyxl.Workbook()
    book.active.title = "Fragen"
    book.active.append(["Nr", "Thema", "Frage"])
    for number, row in enumerate(EXCEL_ROWS[1:], 1):
        book.active.append([number, *reversed(row.rsplit(";", 1))])
    book.active.append([len(EXCEL_ROWS), "Zahlen", 42])  # a number typed where a question goes
    book.create_sheet("Antworten").append(["Nr", "Antwort"])
    path = folder / "fragen.xlsx"
    book.save(path)
    _dialog_picture(path, docs / "batch-open-workbook.png")
    return path


def workbook_rows(pane, path: Path, docs: Path) -> None:
    """The workbook's first sheet read in the pane, by its Frage column."""
    pane.open_file(str(path), "field", "Frage", split="Fragen")
    _read_skipping_problems(pane)
    save_small(pane, str(docs / "batch-workbook-rows.png"))
    print(pane.loader.summary())


def open_jq(folder: Path, docs: Path) -> None:
    """The open dialog on records as jq prints them, each over many lines."""
    path = folder / "questions.json"
    path.write_text("".join(json.dumps({"prompt": row.split(";")[0], "max_tokens": 64}, indent=2, ensure_ascii=False)
                            + "\n" for row in EXCEL_ROWS[1:]), encoding="utf-8")
    _dialog_picture(path, docs / "batch-open-jq.png")


def open_large_workbook(folder: Path, docs: Path) -> None:
    """The open dialog on a workbook of 100,000 rows saved without its size (openpyxl's write-only mode), taken
    a tenth of a second after it shows: the file is still being looked at."""
    import openpyxl

    from workbench.ui.open_prompt_dialog import OpenPromptDialog

    book = openpyxl.Workbook(write_only=True)
    sheet = book.create_sheet("Fragen")
    sheet.append(["Nr", "Thema", "Frage"])
    for number in range(1, 100_001):
        sheet.append([number, "Speicher", f"Frage {number}: was hält ein Block im KV-Cache?"])
    path = folder / "fragen-100000.xlsx"
    book.save(path)
    dialog = OpenPromptDialog(str(path))
    dialog.show()
    process_events_until(lambda: False, 0.1)
    looking = dialog.looking()
    save_small(dialog, str(docs / "batch-open-looking.png"))
    process_events_until(lambda: not dialog.looking(), TIMEOUT_S)
    print("taken while looking:", looking, "| then", dialog.chosen(), dialog.preview.text()[:60])
    dialog.close()


def _dialog_picture(path: Path, picture: Path) -> None:
    """The open dialog on ``path``, as it first shows, saved as ``picture``."""
    from workbench.ui.open_prompt_dialog import OpenPromptDialog

    dialog = OpenPromptDialog(str(path))
    dialog.show()
    process_events_until(lambda: not dialog.looking(), TIMEOUT_S)
    save_small(dialog, str(picture))
    print(dialog.chosen(), dialog.split(), "|", dialog.preview.text()[:80])


def _read_skipping_problems(pane) -> None:
    """Waits for the pane's file to be read, answering "Skip" where it asks about a problem."""
    process_events_until(lambda: pane.problem_box is not None or (pane.loading is None and pane.loader.done),
                         TIMEOUT_S)
    if pane.problem_box is not None:
        next(b for b in pane.problem_box.buttons() if b.text().startswith("Skip")).click()
        process_events_until(lambda: pane.loading is None and pane.loader.done, TIMEOUT_S)


EXCEL_ROWS = ("Frage;Thema", "Was ist ein Block im KV-Cache?;Speicher", "Warum teilen zwei Chats Blöcke?;Präfix",
              "Wie groß ist ein Block; in Tokens?;Speicher", "Was heißt „preempted“?;Planung",
              "Qu'est-ce que le « prefix caching » ?;Cache")


def excel_csv(pane, folder: Path, docs: Path) -> None:
    """A CSV as Excel writes "Unicode text"/"CSV" in a German or French locale, read with its Frage column."""
    path = folder / "fragen.csv"
    path.write_bytes("\r\n".join(EXCEL_ROWS).encode("utf-16") + "\r\n".encode("utf-16-le"))
    pane.open_file(str(path), "csv", "Frage")
    _read_skipping_problems(pane)
    save_small(pane, str(docs / "batch-excel-csv.png"))
    print(pane.progress_label.text(), "|", [pane.problems.item(i).text() for i in range(pane.problems.count())])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
