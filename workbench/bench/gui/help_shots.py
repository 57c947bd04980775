"""Pictures of the menus' windows, with the real engine on the demo model:

    python -m workbench.bench.gui.help_shots docs

writes ``help-about.png`` (Help > About: versions, machine, the engine as it stands and the app's files,
ready to copy into a bug report), ``sessions-window.png`` (File > Sessions… as it opens after a question:
the newest session chosen, Open and Export at hand), ``presets-engine.png`` (the Presets tab with no preset
chosen: the running engine's arguments, as the app set them and as vLLM resolved them, and what they cost) and ``engine-menu.png`` (the Engine menu with the engine
stopped: Start engine, Stop greyed). The data folder is the one ``WORKBENCH_DATA_DIR`` names.
"""
from __future__ import annotations

import sys
from pathlib import Path


def menu_of(window, title: str):
    return next(action.menu() for action in window.menuBar().actions() if action.text().replace("&", "") == title)


def main(folder: str) -> int:
    from workbench.app import finish_background_jobs
    from workbench.bench.gui.screenshot import _started_window, close_window, save_small
    from workbench.ui.file_menu import open_sessions
    from workbench.ui.help_menu import open_about

    out = Path(folder)
    window, wait = _started_window((1280, 720))
    if window is None:
        return 1
    dialog = open_about(window)
    wait(lambda: False, 0.5)
    print("help-about.png:", save_small(dialog, str(out / "help-about.png")), "bytes")
    print(dialog.text.toPlainText())
    dialog.close()
    window.chat.input.setPlainText("What is a KV cache?")
    window.chat.send()
    reply = window.chat.current.messages[-1]
    wait(lambda: reply.status not in ("waiting", "streaming"), 300)
    view = open_sessions(window)
    wait(lambda: view.reading is None and view.comparing is None, 60)  # read off the GUI thread
    wait(lambda: False, 0.5)
    print("sessions-window.png:", save_small(view, str(out / "sessions-window.png")), "bytes,",
          view.session_table.rowCount(), "sessions, chosen:", view.selected().session_id == window.storage.session_id)
    view.close()
    window.show_panel("Presets")
    wait(lambda: window.presets.defaults is not None, 120)  # vLLM's defaults, read off the GUI thread
    wait(lambda: False, 0.5)
    print("presets-engine.png:", save_small(window.engine_region, str(out / "presets-engine.png")), "bytes,",
          window.presets.values.rowCount(), "arguments")
    window.stop_engine()
    wait(lambda: window.model.engine.message == "Engine stopped.", 120)
    menu = menu_of(window, "Engine")
    menu.popup(window.mapToGlobal(window.menuBar().geometry().bottomLeft()))
    wait(lambda: False, 0.3)
    print("engine-menu.png:", save_small(menu, str(out / "engine-menu.png")), "bytes",
          [(action.text(), action.isEnabled()) for action in menu.actions() if action.text()])
    menu.close()
    close_window(window)
    finish_background_jobs(30.0)  # as the app does at its exit: vLLM's defaults may still be read for the presets
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "docs"))
