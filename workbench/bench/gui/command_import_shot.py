"""The import dialog with the article's commands pasted and their messages, offscreen, for the docs.

    python -m workbench.bench.gui.command_import_shot COMMANDS.txt OUT.png
"""
from __future__ import annotations

import os
import sys
from pathlib import Path


def main(commands: str, path: str) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from workbench.bench.gui.screenshot import save_small
    from workbench.bench.gui.screenshot import process_events_until
    from workbench.ui.command_import import CommandImportDialog

    app = QApplication.instance() or QApplication([])
    dialog = CommandImportDialog("the app's model")
    dialog.resize(1000, 860)
    dialog.paste.setPlainText(Path(commands).read_text(encoding="utf-8"))
    dialog.read()
    process_events_until(lambda: not dialog.reading, 60)
    dialog.name.setText("article")
    dialog.show()
    app.processEvents()
    size = save_small(dialog, path)
    print(f"{path}: {size:,} bytes; {dialog.status.text()}")
    dialog.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
