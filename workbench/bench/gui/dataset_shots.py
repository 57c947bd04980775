"""Offscreen pictures of an alpaca dataset in the batch pane, for the docs, with the real engine (the demo
model):

    python -m workbench.bench.gui.dataset_shots docs

writes ``batch-alpaca-open.png`` (the open dialog: a JSON array of records, the format detected as alpaca,
the first record as it will be asked, with its reference answer) and ``batch-alpaca.png`` (the window's
Batch tab after the 20 records ran: each output beside the record's own answer, a row's detail).
The sample is LLaMA-Factory's ``data/alpaca_en_demo.json`` cut to 20 records (tests/data/datasets).
"""
from __future__ import annotations

import sys
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[3] / "tests" / "data" / "datasets" / "alpaca_en_demo-first20.json"
TIMEOUT_S = 600.0


def main(folder: str) -> int:
    from workbench.app import demo_engine_config
    from workbench.bench.gui.gui_stall import started_window
    from workbench.bench.gui.screenshot import process_events_until, save_small
    from workbench.ui.open_prompt_dialog import OpenPromptDialog

    docs = Path(folder)
    window, _ = started_window(demo_engine_config(), keep=False)
    window.resize(1500, 900)
    dialog = OpenPromptDialog(str(SAMPLE), window)
    dialog.show()
    process_events_until(lambda: not dialog.looking(), TIMEOUT_S)
    process_events_until(lambda: False, 0.3)
    save_small(dialog, str(docs / "batch-alpaca-open.png"))
    print("saved batch-alpaca-open.png |", dialog.preview.text().splitlines()[0])
    dialog.close()
    window.batch.settings.sampling.max_tokens.setValue(48)
    shoot_run(window, str(SAMPLE), dialog.chosen(), 5, docs / "batch-alpaca.png", scroll_right=True)
    window.close()
    return 0


def shoot_run(window, path: str, chosen: tuple[str, str | None], row: int, out: Path,
              scroll_right: bool = False, detail_px: int | None = None) -> None:
    """Opens ``path`` in the window's batch pane (``chosen``: format and column; malformed lines skipped),
    runs it to the end, selects ``row`` and saves the window, the batch pane wide, to ``out``;
    ``detail_px``: the row's detail that tall, so that it is read whole."""
    from PySide6.QtWidgets import QSplitter

    from workbench.bench.gui.screenshot import process_events_until, save_small

    pane = window.batch
    window.panes.setCurrentWidget(pane)
    assert pane.open_file(path, *chosen)

    def read() -> bool:
        return pane.loading is None and (pane.loader.done or pane.problem_box is not None)

    process_events_until(read, TIMEOUT_S)
    while pane.problem_box is not None:  # skip malformed lines: each stays listed above the table
        next(b for b in pane.problem_box.buttons() if b.text().startswith("Skip")).click()
        process_events_until(read, TIMEOUT_S)
    run = pane.start_run()
    process_events_until(lambda: run.state == "finished", TIMEOUT_S)
    window.resize(1800, 1000)
    window.regions.setSizes([1300, 500])  # the batch pane wide: the outputs beside the references
    if detail_px is not None:
        rows = pane.findChild(QSplitter, "batchRowsSplitter")
        rows.setSizes([sum(rows.sizes()) - detail_px, detail_px])
    pane.table.selectRow(row)
    process_events_until(lambda: False, 0.5)
    if scroll_right:
        pane.table.horizontalScrollBar().setValue(pane.table.horizontalScrollBar().maximum())
        process_events_until(lambda: False, 0.3)
    save_small(window, str(out))
    print(f"saved {out.name} |", pane.file_label.text(), "|", pane.progress_label.text())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs"))
