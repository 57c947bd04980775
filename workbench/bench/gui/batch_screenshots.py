"""Offscreen screenshots of the batch pane reading a file and failing an export, for the docs.

    python -m workbench.bench.gui.batch_screenshots DOCS_FOLDER

writes ``batch-malformed-line-ask.png`` (a 2,000-line prompt file read off the GUI thread stops at its
malformed line 1201 and asks) and ``batch-export-failed.png`` (after "Skip", the 1,999 prompts shown and an
export into a folder that does not exist: the message says why and the results stay). No engine.
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
