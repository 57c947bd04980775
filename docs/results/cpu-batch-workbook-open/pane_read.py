"""How long the batch pane holds the window while it reads a file of prompts: its loader made on the GUI thread
(``open_file``), then the rows read on the pane's worker, a 10 ms timer's longest gaps beyond its interval meanwhile.
Three reads of each file, Python's collector run as the app runs it (on the GUI thread, the start's objects left
out). Files: an Excel workbook of N rows as Excel saves it (XlsxWriter) and JSON lines of as many prompts.

    pip install --target /tmp/xlsxwriter xlsxwriter   # only to write the Excel-like files
    PYTHONPATH=/tmp/xlsxwriter QT_QPA_PLATFORM=offscreen \
        python docs/results/cpu-batch-workbook-open/pane_read.py 20000 100000
"""
from __future__ import annotations

import gc
import json
import sys
import tempfile
import time
from pathlib import Path

from open_workbook import write


def main(sizes: list[int]) -> None:
    from PySide6.QtWidgets import QApplication

    from workbench.app import collect_garbage_on_gui_thread, demo_engine_config, leave_startup_objects_uncollected
    from workbench.model.app_model import AppModel
    from workbench.model.engine_commands import EngineCommands
    from workbench.ui.batch_pane import BatchPane

    QApplication.instance() or QApplication([])
    collector = collect_garbage_on_gui_thread()  # noqa: F841 (as the app: Python's collector on the GUI thread)
    model = AppModel(demo_engine_config())
    EngineCommands(model, lambda command: None)  # no engine: nothing runs
    pane = BatchPane(model)
    pane.resize(1100, 640)
    pane.show()
    pane.confirm = lambda *question: True
    leave_startup_objects_uncollected()
    folder = Path(tempfile.mkdtemp())
    for rows in sizes:
        book, lines = folder / f"{rows}.xlsx", folder / f"{rows}.jsonl"
        write(book, rows, "excel")
        lines.write_text("".join(json.dumps({"prompt": f"Frage {i}: was hält ein Block im KV-Cache?"}) + "\n"
                                 for i in range(rows)), encoding="utf-8")
        gc.collect()  # what writing the files left is the benchmark's
        for path, chosen in ((book, ("field", "Frage")), (lines, ("jsonl", None))):
            for attempt in range(1, 4):
                made, took, waits = _read(pane, path, chosen)
                print(f"{rows:>7,} rows, {path.suffix[1:]:5} read {attempt}: open_file {made * 1e3:5.1f} ms on the GUI "
                      f"thread, read in {took:5.2f} s; the window's longest waits {', '.join(f'{w:.0f}' for w in waits)}"
                      f" ms; {pane.loader.summary()}", flush=True)


def _read(pane, path: Path, chosen) -> tuple[float, float, list[float]]:
    from PySide6.QtCore import QEventLoop, QTimer

    loop, ticks = QEventLoop(), []
    timer, check = QTimer(interval=10), QTimer(interval=5)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    check.timeout.connect(lambda: pane.loading is None and pane.loader.done and loop.quit())
    start = time.perf_counter()
    ticks.append(start)
    timer.start()
    pane.open_file(str(path), *chosen)
    made = time.perf_counter() - start
    check.start()
    loop.exec()
    took = time.perf_counter() - start
    timer.stop()
    check.stop()
    waits = sorted(max(0.0, b - a - 0.010) * 1e3 for a, b in zip(ticks, ticks[1:]))
    return made, took, waits[-3:][::-1]


if __name__ == "__main__":
    main([int(n) for n in sys.argv[1:]] or [20000])
