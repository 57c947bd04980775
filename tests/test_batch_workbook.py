"""Prompts in an Excel workbook: read a row at a time by the column chosen, each named by Excel's row number."""
from __future__ import annotations

import datetime

import openpyxl
import pytest

from batch_files import looked, open_dialog
from workbench.batch.formats import detect_container, detect_format, prompt_column_of
from workbench.batch.loader import PromptLoader
from workbench.batch.table_files import TableError


def _workbook(path):
    """As a user keeps prompts in Excel: a title row left empty, a number and a date beside the question, a
    blank row, a number typed where a question goes, and a second sheet of another shape."""
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Fragen"
    sheet.append([])
    sheet.append(["Nr", "Thema", "Frage", None, "Datum"])
    sheet.append([1, "Speicher", "Was ist ein Block im KV-Cache?", None, datetime.date(2026, 12, 7)])
    sheet.append([])
    sheet.append([2, "Präfix", "Warum teilen zwei Chats Blöcke?", "x"])
    sheet.append([3, "Planung", 42])
    answers = book.create_sheet("Antworten")
    answers.append(["question", "answer"])
    answers.append(["How many clips?", "#### 48"])
    book.save(path)
    return path


def _long_workbook(path, rows: int):
    """One column of prompts, more rows than a pipe holds as JSON lines (its reading process waits to write)."""
    book = openpyxl.Workbook()
    book.active.append(["prompt"])
    for number in range(rows):
        book.active.append([f"Frage {number}"])
    book.save(path)
    return path


def test_a_sheet_s_rows_are_read_by_the_column_with_the_prompts_numbered_as_excel_numbers_them(tmp_path):
    path = _workbook(tmp_path / "fragen.xlsx")
    assert (detect_container(path), detect_format(path)) == ("xlsx", "field")
    assert prompt_column_of(path, "field") == "Frage"
    loader = PromptLoader(path, "field", "Frage")
    results = loader.read_all()
    assert [(p.line_no, p.preview()) for p in results.prompts] == [(3, "Was ist ein Block im KV-Cache?"),
                                                                   (5, "Warum teilen zwei Chats Blöcke?")]
    assert [str(p) for p in loader.problems] == ['row 6: "Frage" must be a string, got 42']
    other = PromptLoader(path, "field", "question", split="Antworten")
    assert [(p.line_no, p.preview(), p.reference) for p in other.read_all().prompts] == [
        (2, "How many clips?", "#### 48")]


def test_the_open_dialog_offers_the_sheets_and_each_sheet_s_columns(qtbot, tmp_path):
    path = _workbook(tmp_path / "fragen.xlsx")
    dialog = open_dialog(qtbot, str(path))
    assert dialog.layout().labelForField(dialog.split_choice).text() == "Sheet"
    assert [dialog.split_choice.itemText(i) for i in range(dialog.split_choice.count())] == ["Fragen", "Antworten"]
    assert dialog.chosen() == ("field", "Frage") and dialog.preview.text() == "Asks: Was ist ein Block im KV-Cache?"
    dialog.split_choice.setCurrentText("Antworten")
    looked(qtbot, dialog)
    assert dialog.chosen() == ("field", "question") and dialog.split() == "Antworten"
    assert dialog.preview.text() == "Asks: How many clips?\nReference: #### 48"


def test_a_workbook_named_otherwise_is_still_read_as_one(tmp_path):
    path = _workbook(tmp_path / "fragen.xlsx").rename(tmp_path / "fragen.dat")
    assert detect_container(path) == "xlsx"
    assert len(PromptLoader(path, "field", "Frage").read_all().prompts) == 2


@pytest.mark.parametrize("content, words", [
    (b"PK\x03\x04" + bytes(60), "cannot be read as an Excel workbook"),  # damaged
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(60), "if it has a password, save a copy without one"),  # encrypted
])
def test_a_workbook_that_cannot_be_read_says_why_and_what_to_do(tmp_path, content, words):
    path = tmp_path / "fragen.xlsx"
    path.write_bytes(content)
    loader = PromptLoader(path, "field", "Frage")
    assert loader.read_all().num_rows == 0
    assert len(loader.problems) == 1 and loader.problems[0].fatal and words in loader.problems[0].reason


def test_an_old_xls_workbook_is_named_with_the_fix(tmp_path):
    path = tmp_path / "fragen.xls"
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600))
    loader = PromptLoader(path, detect_format(path))
    loader.read_all()
    assert [str(p) for p in loader.problems] == [
        "line 1: this is an Excel 97-2003 workbook (.xls) or another older Office file, not text: save it from Excel "
        "as .xlsx or as CSV UTF-8 and open that"]


def test_a_tune_workload_from_a_workbook_reads_the_column_the_dialog_would_choose(tmp_path):
    from workbench.tune.values import WorkloadSpec
    from workbench.tune.workload import from_file

    book = openpyxl.Workbook()
    book.active.append(["Nr", "Frage"])
    book.active.append([1, "Was ist ein Block?"])
    book.active.append([2, "Warum?"])
    book.save(tmp_path / "w.xlsx")
    workload = from_file(WorkloadSpec(kind="file", path=str(tmp_path / "w.xlsx")), None)
    assert [item.prompt for item in workload.items] == ["Was ist ein Block?", "Warum?"]


def test_the_batch_pane_shows_a_sheet_s_prompts_by_excel_s_row_numbers(qtbot, tmp_path):
    from PySide6.QtCore import Qt

    from workbench.app import demo_engine_config
    from workbench.model.app_model import AppModel
    from workbench.model.engine_commands import EngineCommands
    from workbench.ui.batch_pane import BatchPane

    model = AppModel(demo_engine_config())
    EngineCommands(model, lambda command: None)  # no engine: nothing runs
    pane = BatchPane(model)
    qtbot.addWidget(pane)
    pane.open_file(str(_workbook(tmp_path / "fragen.xlsx")), "field", "Frage", split="Fragen")
    qtbot.waitUntil(lambda: pane.problem_box is not None, timeout=30_000)
    next(b for b in pane.problem_box.buttons() if b.text().startswith("Skip")).click()
    qtbot.waitUntil(lambda: pane.loading is None and pane.loader.done, timeout=30_000)
    table = pane.table.model()
    assert table.headerData(0, Qt.Horizontal) == "Row"
    assert [table.data(table.index(r, 0)) for r in range(2)] == ["3", "5"]
    assert pane.loader.summary().startswith("2 prompts read from fragen.xlsx (its sheet Fragen)")


def test_the_open_dialog_reads_a_workbook_once_and_again_once_it_is_saved(qtbot, tmp_path, monkeypatch):
    """Opening a workbook reads all its text (Excel's shared strings): the dialog's looks opened it seven times,
    1.07 s of a held window at 20,000 rows. The first rows of all its sheets are read in one process now, and
    kept while the file is unchanged."""
    import os

    from workbench.batch import workbook

    reads, real = [], workbook._apart
    monkeypatch.setattr(workbook, "_apart", lambda *argv: reads.append(argv[0]) or real(*argv))
    path = _workbook(tmp_path / "fragen.xlsx")
    dialog = open_dialog(qtbot, str(path))
    dialog.split_choice.setCurrentText("Antworten")
    looked(qtbot, dialog)
    dialog.column.setCurrentText("answer")
    looked(qtbot, dialog)
    assert dialog.preview.text() == "Asks: #### 48" and reads == ["heads"]
    before = path.stat().st_mtime_ns
    _workbook(path)  # saved again: its questions may have changed
    os.utime(path, ns=(before + 10**9, before + 10**9))  # a second later, where the file system counts whole seconds
    open_dialog(qtbot, path)
    assert reads == ["heads", "heads"]


def test_the_open_dialog_shows_at_once_and_reads_the_workbook_off_the_gui_thread(qtbot, tmp_path, monkeypatch):
    """The dialog's first look held the window 0.69 s on a workbook of 100,000 rows: it shows before the file is
    read now, a busy bar under the first record and Open off until the file's formats and columns are known."""
    import threading

    from workbench.batch import workbook
    from workbench.ui.open_prompt_dialog import OpenPromptDialog

    opened, release, real = [], threading.Event(), workbook._apart

    def held_open(*argv):
        opened.append(threading.current_thread().name)
        assert release.wait(60), "the test never let the workbook open"
        return real(*argv)

    monkeypatch.setattr(workbook, "_apart", held_open)
    path = _workbook(tmp_path / "langsam.xlsx")
    dialog = OpenPromptDialog(str(path))
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.looking() and dialog.preview.text() == "Looking at langsam.xlsx…"
    assert dialog.busy.isVisible() and not dialog.open_button.isEnabled() and not dialog.format.isEnabled()
    release.set()
    looked(qtbot, dialog)
    assert opened == ["file-looks"], "the workbook is read off the GUI thread, once"
    assert not dialog.busy.isVisible() and dialog.open_button.isEnabled()
    assert dialog.chosen() == ("field", "Frage") and dialog.split() == "Fragen"


def test_a_look_past_a_sheet_s_first_rows_reads_on(tmp_path):
    from workbench.batch.workbook import HEAD_ROWS, sheet_head

    path = _long_workbook(tmp_path / "lang.xlsx", HEAD_ROWS + 5)
    rows = list(sheet_head(path))
    assert [number for number, _, _ in rows] == list(range(2, HEAD_ROWS + 7))
    assert rows[-1][1] == {"prompt": f"Frage {HEAD_ROWS + 4}"}


def test_a_format_chosen_while_another_sheet_is_read_keeps_that_sheet_s_columns(qtbot, tmp_path, monkeypatch):
    """Only the last look asked for is shown: a format chosen before the other sheet's columns came would have
    left the first sheet's columns offered for the second."""
    import threading

    from workbench.batch import file_look

    path = _workbook(tmp_path / "fragen.xlsx")
    dialog = open_dialog(qtbot, path)
    release, real = threading.Event(), file_look.fields_of
    monkeypatch.setattr(file_look, "fields_of", lambda *args: release.wait(60) and real(*args))
    dialog.split_choice.setCurrentText("Antworten")
    assert not dialog.column.isEnabled(), "the column waits for the sheet's own"
    dialog.format.setCurrentIndex(dialog.format.findData("jsonl"))
    release.set()
    looked(qtbot, dialog)
    assert [dialog.column.itemText(i) for i in range(dialog.column.count())] == ["question", "answer"]
    assert dialog.chosen() == ("jsonl", None) and not dialog.column.isEnabled()
    dialog.format.setCurrentIndex(dialog.format.findData("field"))
    looked(qtbot, dialog)
    assert dialog.chosen() == ("field", "question") and dialog.preview.text().startswith("Asks: How many clips?")


def test_a_file_the_dialog_cannot_look_at_says_why_and_cannot_be_opened(qtbot, tmp_path, monkeypatch):
    from workbench.ui import open_prompt_dialog

    def unreadable(path):
        raise ValueError(f"{path} ends in the middle of a record")

    monkeypatch.setattr(open_prompt_dialog, "look_at", unreadable)
    dialog = open_dialog(qtbot, tmp_path / "kaputt.jsonl")
    assert dialog.preview.text() == f"Cannot be read: {tmp_path / 'kaputt.jsonl'} ends in the middle of a record"
    assert not dialog.open_button.isEnabled() and dialog.busy.isHidden()


def test_the_pane_s_loader_names_the_sheets_and_reads_the_rows_without_opening_the_workbook(tmp_path, monkeypatch):
    """The pane makes its loader on the GUI thread: asking the sheets opened the workbook there, its whole text
    read (0.77 s at 100,000 rows). They come from the workbook's xl/workbook.xml now; and the rows are read in a
    process of their own (openpyxl's parse on the pane's worker held the window up to 550 ms at a time)."""
    from workbench.batch import workbook

    path = _workbook(tmp_path / "fragen.xlsx")
    reordered = openpyxl.load_workbook(path)
    reordered.move_sheet("Antworten", offset=-1)
    reordered.save(tmp_path / "antworten-zuerst.xlsx")
    loads, real = [], openpyxl.load_workbook
    monkeypatch.setattr(openpyxl, "load_workbook", lambda *args, **kwargs: loads.append(1) or real(*args, **kwargs))
    assert workbook.sheet_names(path) == ["Fragen", "Antworten"]
    assert workbook.sheet_names(tmp_path / "antworten-zuerst.xlsx") == ["Antworten", "Fragen"], "in the file's order"
    loader = PromptLoader(path, "field", "question", split="Antworten")
    assert not loads, "the sheets are named without opening the workbook"
    assert [p.preview() for p in loader.read_all().prompts] == ["How many clips?"]
    assert not loads, "the sheet is read in a process of its own"


def test_a_sheet_read_in_part_leaves_no_reading_process_behind(tmp_path):
    import psutil

    _long_workbook(tmp_path / "lang.xlsx", 5000)
    loader = PromptLoader(tmp_path / "lang.xlsx", "field", "prompt", max_rows=3)
    assert [p.preview() for p in loader.read_all().prompts] == ["Frage 0", "Frage 1", "Frage 2"] and loader.limited
    assert not [p for p in psutil.Process().children() if "workbench.batch.workbook" in " ".join(p.cmdline())]


def test_a_file_named_as_a_workbook_that_is_none_still_says_why_it_cannot_be_read(tmp_path):
    path = tmp_path / "fragen.xlsx"
    path.write_bytes(b"PK\x03\x04 not a whole zip archive")
    loader = PromptLoader(path, "field", "Frage")
    assert loader.read_all().num_rows == 0
    assert "cannot be read as an Excel workbook" in str(loader.stopped_at or loader.problems[0])


def test_a_reading_process_that_dies_is_a_problem_that_names_the_sheet_s_file(tmp_path):
    import psutil

    from workbench.batch.workbook import sheet_rows

    _long_workbook(tmp_path / "lang.xlsx", 20000)
    rows = sheet_rows(tmp_path / "lang.xlsx")
    assert next(rows)[:2] == (2, {"prompt": "Frage 0"})
    reader, = [p for p in psutil.Process().children() if "workbench.batch.workbook" in " ".join(p.cmdline())]
    reader.kill()
    with pytest.raises(TableError, match=r"lang.xlsx could not be read to its end \(its reading process ended with -9\)"):
        for _ in rows:
            pass
