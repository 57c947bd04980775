"""The batch pane reads a prompt file and writes an export on worker threads (superqt generator
workers), the progress bars counting; a malformed line still asks on the GUI thread and reading goes on
after the answer; an export that cannot be written says why and keeps the results. No engine."""
from __future__ import annotations

import json
import threading

from workbench.app import demo_engine_config
from workbench.batch import loader as loader_module
from workbench.model.app_model import AppModel
from workbench.model.engine_commands import EngineCommands

NUM_LINES = 3000
TIMEOUT_MS = 60_000


def pane_of(qtbot):
    from workbench.ui.batch_pane import BatchPane

    model = AppModel(demo_engine_config())
    EngineCommands(model, lambda command: None)  # no engine: nothing is run here
    pane = BatchPane(model)
    qtbot.addWidget(pane)
    return pane


def prompts_file(path, bad_line: int | None = None):
    lines = [json.dumps({"prompt": f"prompt {i}"}) for i in range(NUM_LINES)]
    if bad_line is not None:
        lines[bad_line - 1] = "{not json"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_prompt_file_is_read_off_the_gui_thread_and_a_problem_asks_on_it(qtbot, tmp_path, monkeypatch):
    readers = set()
    read = loader_module.PromptLoader.read

    def read_here(self, max_items=5000):
        readers.add(threading.get_ident())
        return read(self, max_items)

    monkeypatch.setattr(loader_module.PromptLoader, "read", read_here)
    pane = pane_of(qtbot)
    assert pane.open_file(str(prompts_file(tmp_path / "p.jsonl", bad_line=2000)), "jsonl")
    qtbot.waitUntil(lambda: pane.problem_box is not None, timeout=TIMEOUT_MS)
    assert pane.loading is None and not pane.open_button.isEnabled()
    assert "Line 2000" in pane.problem_box.text() and pane.table_model.rowCount() == 1999
    skip = next(b for b in pane.problem_box.buttons() if b.text().startswith("Skip"))
    skip.click()
    qtbot.waitUntil(lambda: pane.loading is None and pane.loader.done, timeout=TIMEOUT_MS)
    assert pane.table_model.rowCount() == NUM_LINES - 1 and pane.problems.count() == 1
    assert readers and threading.get_ident() not in readers, "the file was read on the GUI thread"
    assert pane.open_button.isEnabled() and pane.export_button.isEnabled()


def test_an_export_is_written_off_the_gui_thread_and_a_failed_one_says_why(qtbot, tmp_path):
    pane = pane_of(qtbot)
    assert pane.open_file(str(prompts_file(tmp_path / "p.jsonl")), "jsonl")
    qtbot.waitUntil(lambda: pane.loading is None and pane.loader.done, timeout=TIMEOUT_MS)
    target = tmp_path / "out.jsonl"
    assert pane.export_to(str(target), "jsonl") is not None
    assert not pane.export_button.isEnabled()  # one export at a time
    qtbot.waitUntil(lambda: pane.exporting is None, timeout=TIMEOUT_MS)
    assert len(target.read_text().splitlines()) == NUM_LINES
    assert pane.progress_label.text() == f"Exported to {target}"
    missing = tmp_path / "no such folder" / "out.csv"
    pane.export_to(str(missing), "csv")
    qtbot.waitUntil(lambda: pane.exporting is None, timeout=TIMEOUT_MS)
    assert "failed" in pane.progress_label.text() and "No such file or directory" in pane.progress_label.text()
    assert pane.table_model.rowCount() == NUM_LINES and pane.export_button.isEnabled()


def test_a_file_with_no_prompts_says_why_and_offers_nothing_to_export(qtbot, tmp_path):
    pane = pane_of(qtbot)
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert pane.open_file(str(empty), "jsonl")
    qtbot.waitUntil(lambda: pane.loading is None and pane.loader.done, timeout=TIMEOUT_MS)
    assert pane.file_label.text() == "No prompts read from empty.jsonl: the file is empty (0 bytes): there are no " \
                                     "prompts to read."
    assert not pane.export_button.isEnabled() and not pane.run_button.isEnabled()


def test_the_line_column_widens_to_the_largest_line_number(qtbot, tmp_path):
    """A file of 100,000 lines or more showed its line numbers as "100…" in the window's font."""
    from PySide6.QtWidgets import QStyle

    pane = pane_of(qtbot)
    path = tmp_path / "long.jsonl"
    path.write_text("\n" * 1_234_566 + json.dumps({"prompt": "the last line"}) + "\n")  # blank lines are skipped
    assert pane.open_file(str(path), "jsonl")
    qtbot.waitUntil(lambda: pane.loading is None and pane.loader.done, timeout=TIMEOUT_MS)
    assert pane.table_model.data(pane.table_model.index(0, 0)) == "1234567"
    margin = pane.table.style().pixelMetric(QStyle.PM_FocusFrameHMargin, None, pane.table) + 1  # the delegate's
    needed = pane.table.fontMetrics().horizontalAdvance("1234567") + 2 * margin
    assert pane.table.horizontalHeader().sectionSize(0) >= needed, "the number is shown whole, not elided"
