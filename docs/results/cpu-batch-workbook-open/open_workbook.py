"""How long the open dialog holds the window on an Excel workbook (it shows at once and looks at the workbook on a
thread of its own: the window's longest wait meanwhile, and when the dialog shows the file's sheets and columns),
and how long a whole sheet takes to read (off the GUI thread, as the pane reads it), for sheets of N rows written
three ways: as Excel saves them (XlsxWriter: a <dimension> element and the text in a shared-strings table, which
openpyxl reads whole when it opens the workbook), by openpyxl (a dimension, the text inline in the cells) and by
openpyxl's write-only mode (no dimension: openpyxl then reads the whole sheet to size it).

    pip install --target /tmp/xlsxwriter xlsxwriter   # only to write the Excel-like files
    PYTHONPATH=/tmp/xlsxwriter QT_QPA_PLATFORM=offscreen \
        python docs/results/cpu-batch-workbook-open/open_workbook.py 20000 100000
"""
from __future__ import annotations

import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path


def write(path: Path, rows: int, how: str) -> None:
    if how == "excel":
        import xlsxwriter

        book = xlsxwriter.Workbook(str(path))
        sheet = book.add_worksheet("Fragen")
        sheet.write_row(0, 0, ["Nr", "Thema", "Frage"])
        for i in range(rows):
            sheet.write_row(i + 1, 0, [i + 1, "Speicher", _question(i)])
        book.close()
        return
    import openpyxl

    write_only = how == "write-only"
    book = openpyxl.Workbook(write_only=write_only)
    sheet = book.create_sheet("Fragen") if write_only else book.active
    sheet.append(["Nr", "Thema", "Frage"])
    for i in range(rows):
        sheet.append([i + 1, "Speicher", _question(i)])
    book.save(path)


def _question(i: int) -> str:
    return f"Frage {i}: was hält ein Block im KV-Cache, und warum teilen Chats ihn?"


def main(sizes: list[int]) -> None:
    from PySide6.QtWidgets import QApplication

    from workbench.batch.loader import PromptLoader

    from workbench.app import collect_garbage_on_gui_thread, leave_startup_objects_uncollected

    app = QApplication.instance() or QApplication([])
    collector = collect_garbage_on_gui_thread()  # noqa: F841 (as the app: Python's collector on the GUI thread)
    folder = Path(tempfile.mkdtemp())
    _open(_small(folder))  # a first look, as after a first workbook (the files it reads warm in the cache)
    leave_startup_objects_uncollected()  # as the app does once its window shows
    for rows in sizes:
        for how in ("excel", "openpyxl", "write-only"):
            path = folder / f"{rows}-{how}.xlsx"
            write(path, rows, how)
            gc.collect()  # the objects writing the file left (openpyxl's cells: 600,000 at 100,000 rows) are the
            # benchmark's, not the dialog's: collected before, else the collector's timer takes them on mid-look
            opens = [_open(path) for _ in range(5)]  # the first opens the file just written; the next find it held
            chosen = opens[0][3]
            app.processEvents()
            took, read = _read_on_a_worker(PromptLoader, path, chosen)
            held, stall, ready = (max(o[i] for o in opens) for i in range(3))
            print(f"{rows:>7,} rows, {LABELS[how]}: {path.stat().st_size / 1e6:5.1f} MB; dialog shown after "
                  f"{held * 1e3:5.1f} ms, the window's longest wait {stall * 1e3:5.1f} ms, the file's columns shown "
                  f"after {opens[0][2] * 1e3:7.1f} ms (again {statistics.median(o[2] for o in opens[1:]) * 1e3:6.1f} "
                  f"ms, median of 4; the most of 5 for the first two); the whole sheet read on a worker: {read:,} "
                  f"prompts in {took:5.2f} s ({read / took:,.0f}/s); {chosen}")


def _open(path: Path) -> tuple[float, float, float, tuple]:
    """The open dialog on ``path`` as the window's event loop runs it: how long its making held the GUI thread, the
    longest the loop then waited beyond a 10 ms timer's interval while the file was looked at (on a thread of the
    dialog's), how long until the look was shown; and the format and column it offers."""
    from PySide6.QtCore import QEventLoop, QTimer

    from workbench.ui.open_prompt_dialog import OpenPromptDialog

    loop, ticks = QEventLoop(), []
    timer = QTimer(interval=10)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    start = time.perf_counter()
    dialog = OpenPromptDialog(str(path))
    held = time.perf_counter() - start
    dialog.looked.connect(loop.quit)
    ticks.append(time.perf_counter())
    timer.start()
    if dialog.looking():
        loop.exec()
    ready = time.perf_counter() - start
    timer.stop()
    ticks.append(time.perf_counter())
    stall = max(b - a for a, b in zip(ticks, ticks[1:])) - 0.010
    chosen = dialog.chosen()
    dialog.deleteLater()
    return held, max(0.0, stall), ready, chosen


def _read_on_a_worker(loader_class, path: Path, chosen) -> tuple[float, int]:
    """As the pane reads it: on a thread of its own (which opens the workbook for itself)."""
    import threading

    found = {}

    def read() -> None:
        start = time.perf_counter()
        found["rows"] = loader_class(path, *chosen).read_all().num_rows
        found["took"] = time.perf_counter() - start

    worker = threading.Thread(target=read)
    worker.start()
    worker.join()
    return found["took"], found["rows"]


LABELS = {"excel": "shared strings (as Excel)    ", "openpyxl": "inline text (openpyxl)       ",
          "write-only": "no dimension (write-only)    "}


def _small(folder: Path) -> Path:
    path = folder / "small.xlsx"
    write(path, 3, "openpyxl")
    return path


if __name__ == "__main__":
    main([int(n) for n in sys.argv[1:]] or [20000])
