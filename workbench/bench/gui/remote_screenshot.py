"""The screenshot of an attached session for the docs: the window serving the demo preset through
Server > Serve (vLLM's own API server, started and attached), a chat reply streamed through it, the
plots from its /metrics and the server panel with the endpoint and each engine's figures.

    python -m workbench.bench.gui.remote_screenshot docs/remote-session.png
"""
from __future__ import annotations

import os
import sys


def main(path: str) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from workbench.app import build_window, demo_engine_config
    from workbench.bench.gui.screenshot import process_events_until, save_small
    from workbench.bench.remote_bench import requests
    from workbench.engine.commands import Submit
    from workbench.ui.server_dialogs import serve_options

    QApplication.instance() or QApplication([])
    window, _ = build_window(demo_engine_config(), start_engine=False, keep=False)
    window.resize(1600, 940)
    window.show()

    wait = process_events_until

    model = window.model
    from workbench.remote.serve import free_port

    start_id = window.server.serve(serve_options(model.config, free_port()))
    if not wait(lambda: model.engine.settled(start_id), 600) or not model.engine.ready:
        print("the server did not start:", model.engine.message)
        window.close()
        return 1
    window.engine_region.show_engine()  # the server's prefix cache in the heatmap's place
    for request in requests(32, 48, 1200, 1024, "load"):
        window.engine.host.post(Submit(request))
    wait(lambda: False, 12.0)
    chat = window.chat
    chat.sampling.max_tokens.setValue(200)
    chat.input.setPlainText("What does the workbench show when it is attached to a server?")
    chat.send()
    reply = chat.current.messages[-1]
    wait(lambda: reply.status != "streaming", 120)
    wait(lambda: False, 2.0)
    size = save_small(window, path)
    print(f"saved {path} ({size:,} bytes); reply {reply.status}: {len(reply.text)} characters")
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
