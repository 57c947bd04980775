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
            for _ in range(5):
                start = time.perf_counter()
                dialog = OpenPromptDialog(str(path))
                opens.append(time.perf_counter() - start)
                chosen = dialog.chosen()
                dialog.deleteLater()
                app.processEvents()
            start = time.perf_counter()
            loader = PromptLoader(path, *chosen)
            read = loader.read_all().num_rows
            took = time.perf_counter() - start
            print(f"{rows:>7,} rows, {LABELS[how]}: "
                  f"{path.stat().st_size / 1e6:5.1f} MB; dialog open median {statistics.median(opens) * 1e3:7.1f} ms "
                  f"(max {max(opens) * 1e3:7.1f}); the whole sheet read: {read:,} prompts in {took:5.2f} s "
                  f"({read / took:,.0f}/s); {chosen}")


LABELS = {"excel": "shared strings (as Excel)    ", "openpyxl": "inline text (openpyxl)       ",
          "write-only": "no dimension (write-only)    "}


def _small(folder: Path) -> Path:
    path = folder / "small.xlsx"
    write(path, 3, "openpyxl")
    return path


if __name__ == "__main__":
    main([int(n) for n in sys.argv[1:]] or [20000])
