"""How long the open dialog holds the window on an Excel workbook, and how long a whole sheet takes to read
(off the GUI thread, in the pane), for sheets of N rows written three ways: as Excel saves them (XlsxWriter:
a <dimension> element and the text in a shared-strings table, which openpyxl reads whole when it opens the
workbook), by openpyxl (a dimension, the text inline in the cells) and by openpyxl's write-only mode (no
dimension: openpyxl then reads the whole sheet to size it).

    pip install --target /tmp/xlsxwriter xlsxwriter   # only to write the Excel-like files
    PYTHONPATH=/tmp/xlsxwriter QT_QPA_PLATFORM=offscreen \
        python docs/results/cpu-batch-workbook-open/open_workbook.py 20000 100000
"""
from __future__ import annotations

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
    from workbench.ui.batch_settings import OpenPromptDialog

    app = QApplication.instance() or QApplication([])
    folder = Path(tempfile.mkdtemp())
    OpenPromptDialog(str(_small(folder)))  # openpyxl imported once, as after a first workbook
    for rows in sizes:
        for how in ("excel", "openpyxl", "write-only"):
            path = folder / f"{rows}-{how}.xlsx"
            write(path, rows, how)
            opens = []
            for _ in range(5):  # the first opens the file just written; the next find it held (the same file)
                start = time.perf_counter()
                dialog = OpenPromptDialog(str(path))
                opens.append(time.perf_counter() - start)
                chosen = dialog.chosen()
                dialog.deleteLater()
                app.processEvents()
            took, read = _read_on_a_worker(PromptLoader, path, chosen)
            print(f"{rows:>7,} rows, {LABELS[how]}: {path.stat().st_size / 1e6:5.1f} MB; dialog opened "
                  f"{opens[0] * 1e3:7.1f} ms, again {statistics.median(opens[1:]) * 1e3:6.1f} ms (median of 4); "
                  f"the whole sheet read on a worker: {read:,} prompts in {took:5.2f} s ({read / took:,.0f}/s); "
                  f"{chosen}")


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
