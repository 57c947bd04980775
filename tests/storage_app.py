"""The app in a process of its own, for the storage tests: the real window offscreen on a data folder.

``python storage_app.py MODE MODEL``, with ``WORKBENCH_DATA_DIR`` set:
- ``show``: no engine; prints the restored conversations (``RESTORED <json>``, each with its draft) and what the
  chat's input and attachments show once the draft's images are read (``INPUT <json>``), and quits cleanly;
- ``draft``: no engine; types ``DRAFT_TEXT`` into the chat's input and attaches the image ``DRAFT_IMAGE``, prints
  ``TYPED`` and waits to be killed;
- ``answer``: starts the engine, asks a short question, prints the finished conversations, quits cleanly;
- ``stream``: starts the engine (``PIDS ...``), asks for a long reply and prints what the window shows of
  it every 100 ms (``SHOWN <json>``, the text of the reply's label) until it is killed.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def conversations_json(model) -> str:
    return json.dumps([{"conversation_id": c.conversation_id, "title": c.title,
                        "messages": [asdict(m) for m in c.messages], "draft": c.draft,
                        "draft_images": [image.name for image in c.draft_images]}
                       for c in model.conversations.values()])


def when(condition, then, interval_ms: int = 100):
    from PySide6.QtCore import QTimer

    timer = QTimer()
    timer.setInterval(interval_ms)

    def check() -> None:
        if condition():
            timer.stop()
            then()
    timer.timeout.connect(check)
    timer.start()
    return timer


def ask(window, text: str, max_tokens: int, ignore_eos: bool) -> None:
    window.chat.sampling.max_tokens.setValue(max_tokens)
    window.chat.sampling.ignore_eos.setChecked(ignore_eos)
    window.chat.input.setPlainText(text)
    window.chat.send()


def main() -> int:
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from workbench.app import build_window, demo_engine_config

    mode, model_path = sys.argv[1], sys.argv[2]
    app = QApplication(sys.argv[:1])
    window, _ = build_window(demo_engine_config(model_path), start_engine=mode not in ("show", "draft"))
    window.show()
    model, keep = window.model, []
    if mode == "show":
        print("RESTORED", conversations_json(model), flush=True)

        def shown() -> None:
            chat = window.chat
            print("INPUT", json.dumps({"text": chat.input.toPlainText(), "problem": chat.attachments.problem.text(),
                                       "images": [image.ref.name for image in chat.attachments.images()]}),
                  flush=True)
            window.close()
        keep.append(when(lambda: not window.chat.attachments.reading, shown))
    elif mode == "draft":
        window.chat.input.setPlainText(os.environ["DRAFT_TEXT"])
        window.chat.attachments.add_sources([os.environ["DRAFT_IMAGE"]])
        keep.append(when(lambda: not window.chat.attachments.reading, lambda: print("TYPED", flush=True)))
    elif mode == "answer":
        def answered() -> None:
            print("ANSWERED", conversations_json(model), flush=True)
            window.close()
        keep.append(when(lambda: model.engine.ready, lambda: (
            ask(window, "What is a paged KV cache?", 24, False),
            keep.append(when(lambda: window.chat.current.streaming_message() is None, answered)))))
    else:
        keep.append(when(lambda: model.engine.ready, lambda: start_streaming(window, keep)))
    app.exec()
    return 0


def start_streaming(window, keep: list) -> None:
    from PySide6.QtCore import QTimer

    print("PIDS", *window.model.engine.info.engine_pids, flush=True)
    ask(window, "Tell me everything about the block pool.", 1800, True)
    conversation = window.chat.current
    reply = conversation.messages[-1]
    view = window.chat.transcripts[conversation.conversation_id].view_of(reply.message_id)
    timer = QTimer()
    timer.timeout.connect(lambda: print("SHOWN", json.dumps({"message_id": reply.message_id,
                                                             "text": view.body.text()}), flush=True))
    timer.start(100)
    keep.append(timer)


if __name__ == "__main__":
    sys.exit(main())
