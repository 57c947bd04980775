"""How long the open dialog holds the window on an Excel workbook, and how long a whole sheet takes to read
(off the GUI thread, in the pane), for sheets of N rows written as Excel writes them (a <dimension> element)
and as openpyxl's write-only mode writes them (none: openpyxl then reads the whole sheet to size it).

    QT_QPA_PLATFORM=offscreen python docs/results/cpu-batch-workbook-open/open_workbook.py 20000 100000
"""
from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path


def write(path: Path, rows: int, write_only: bool) -> None:
    import openpyxl

    book = openpyxl.Workbook(write_only=write_only)
    sheet = book.create_sheet("Fragen") if write_only else book.active
    sheet.append(["Nr", "Thema", "Frage"])
    for i in range(rows):
        sheet.append([i + 1, "Speicher", f"Frage {i}: was hält ein Block im KV-Cache, und warum teilen Chats ihn?"])
    book.save(path)


def main(sizes: list[int]) -> None:
    from PySide6.QtWidgets import QApplication

    from workbench.batch.loader import PromptLoader
    from workbench.ui.batch_settings import OpenPromptDialog

    app = QApplication.instance() or QApplication([])
    folder = Path(tempfile.mkdtemp())
    OpenPromptDialog(str(_small(folder)))  # openpyxl imported once, as after a first workbook
    for rows in sizes:
        for write_only in (False, True):
            path = folder / f"{rows}-{'write-only' if write_only else 'excel'}.xlsx"
            write(path, rows, write_only)
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
            print(f"{rows:>7,} rows, {'no dimension (write-only)' if write_only else 'a dimension (as Excel)   '}: "
                  f"{path.stat().st_size / 1e6:5.1f} MB; dialog open median {statistics.median(opens) * 1e3:7.1f} ms "
                  f"(max {max(opens) * 1e3:7.1f}); the whole sheet read: {read:,} prompts in {took:5.2f} s "
                  f"({read / took:,.0f}/s); {chosen}")


def _small(folder: Path) -> Path:
    path = folder / "small.xlsx"
    write(path, 3, False)
    return path


if __name__ == "__main__":
    main([int(n) for n in sys.argv[1:]] or [20000])
