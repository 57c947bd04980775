"""Offscreen screenshots of the chat's first minute, for the docs.

    python -m workbench.bench.gui.chat_screenshots DOCS_FOLDER

writes ``early-question-waiting.png`` (a question sent the moment the window opened, waiting for the
engine's start and saying which phase it is in) and ``chat-follows-reply.png`` (a long reply streaming,
the transcript following its end) and ``chat-long-word.png`` (a question holding a word far wider than the
transcript, wrapped inside it) and ``chat-edit-question.png`` (the last question being edited: its text back in
the input, what was being typed put aside). ``WORKBENCH_DATA_DIR`` pointing at an empty folder shows the demo
model's build as what the question waits for.

    python -m workbench.bench.gui.chat_screenshots --edit DOCS_FOLDER   ``chat-edit-question.png`` alone
    python -m workbench.bench.gui.chat_screenshots --draft DOCS_FOLDER  ``chat-draft-restored.png``: a question typed
                                                                        and an image attached, the window closed, and
                                                                        both back in the next window's input (set
                                                                        ``WORKBENCH_DATA_DIR`` to an empty folder)
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from workbench.bench.gui.screenshot import process_events_until, save_small


def main(argv: list[str]) -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from workbench.app import build_window, demo_engine_config

    edit_only = argv[:1] == ["--edit"]
    if argv[:1] == ["--draft"]:
        QApplication.instance() or QApplication([])
        return 0 if draft_picture(Path(argv[1] if len(argv) > 1 else "docs")) else 1
    argv = argv[1:] if edit_only else argv
    folder = Path(argv[0] if argv else "docs")
    QApplication.instance() or QApplication([])
    window, _ = build_window(demo_engine_config(), keep=False)
    window.resize(1280, 720)
    window.show()
    if edit_only:
        done = edit_picture(window, folder)
        window.close()
        return 0 if done else 1
    chat = window.chat
    chat.input.setPlainText("What does the KV cache hold?")
    chat.send()  # the earliest moment: the engine's start was only just asked for
    reply = chat.current.messages[-1]
    phases = []

    def in_phase() -> bool:  # a phase past the first, so the picture says what is going on
        progress = window.model.engine.progress
        if progress is not None and progress.phase not in phases:
            phases.append(progress.phase)
        return len(phases) >= 2 or reply.status != "waiting"

    process_events_until(in_phase, 600)
    process_events_until(lambda: False, 0.3)
    print("waiting:", chat.transcripts[chat.current.conversation_id].view_of(reply.message_id).stats.text())
    save_small(window, str(folder / "early-question-waiting.png"))
    if not process_events_until(lambda: reply.status == "done", 600):
        print("the question was not answered:", reply.status, reply.error, window.model.engine.message)
        window.close()
        return 1
    chat.sampling.ignore_eos.setChecked(True)
    chat.sampling.max_tokens.setValue(1500)
    chat.input.setPlainText("Tell me a long story about blocks and pages.")
    chat.send()
    long_reply = chat.current.messages[-1]
    process_events_until(lambda: len(long_reply.text) > 4000 or long_reply.status == "done", 300)
    process_events_until(lambda: False, 0.3)
    bar = chat.transcripts[chat.current.conversation_id].verticalScrollBar()
    print(f"following: scroll {bar.value()} of {bar.maximum()}, reply {len(long_reply.text)} characters")
    save_small(window, str(folder / "chat-follows-reply.png"))
    chat.stop()
    process_events_until(lambda: long_reply.status != "streaming", 60)
    if not long_word_picture(window, folder) or not edit_picture(window, folder):
        window.close()
        return 1
    window.close()
    return 0


TOKEN = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ3b3Jrc3RhdGlvbi11c2VyIiwic2NvcGUiOiJjaGF0IGJhdGNoIn0."
         "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")  # a JSON web token: no place a line may break


def long_word_picture(window, folder: Path) -> bool:
    """``chat-long-word.png``: a question holding a word far wider than the transcript (a pasted token), and
    the reply under it: the word wraps inside the transcript, which has no horizontal scroll bar."""
    chat = window.chat
    chat.sampling.ignore_eos.setChecked(False)
    chat.sampling.max_tokens.setValue(256)
    chat.new_conversation()
    chat.input.setPlainText(f"Why does the server answer 401 to the key {TOKEN} when I send it?")
    chat.send()
    reply = chat.current.messages[-1]
    if not process_events_until(lambda: reply.status == "done", 300):
        print("the question was not answered:", reply.status, reply.error)
        return False
    process_events_until(lambda: False, 0.3)
    transcript = chat.transcripts[chat.current.conversation_id]
    print(f"long word: horizontal scroll range {transcript.horizontalScrollBar().maximum()}, transcript "
          f"{transcript.widget().width()} px in a view of {transcript.viewport().width()} px")
    save_small(window, str(folder / "chat-long-word.png"))
    return True


def edit_picture(window, folder: Path) -> bool:
    """``chat-edit-question.png``: a question answered, half a next one typed, then the question's Edit clicked
    and its text mended in the input; then the edit is sent and answered in its place."""
    chat = window.chat
    chat.sampling.ignore_eos.setChecked(False)
    chat.sampling.max_tokens.setValue(96)
    chat.new_conversation()
    chat.input.setPlainText("Waht does prefix cachign save?")
    chat.send()
    conversation = chat.current
    first = conversation.messages[-1]
    if not process_events_until(lambda: first.status == "done", 600):
        print("the question was not answered:", first.status, first.error, window.model.engine.message)
        return False
    chat.input.setPlainText("And what does")
    transcript = chat.transcripts[conversation.conversation_id]
    question = conversation.messages[0]
    process_events_until(lambda: question.message_id in transcript.views, 10)
    transcript.views[question.message_id].edit_button.click()
    chat.input.setPlainText("What does prefix caching save?")
    process_events_until(lambda: False, 0.3)
    print(f"editing: input {chat.input.toPlainText()!r}, bar shown {chat.edit_bar.isVisible()}, "
          f"Regenerate {'on' if chat.regenerate_button.isEnabled() else 'off'}")
    save_small(window, str(folder / "chat-edit-question.png"))
    chat.send()
    reply = conversation.messages[-1]
    if not process_events_until(lambda: reply.status == "done", 300):
        print("the edit was not answered:", reply.status, reply.error)
        return False
    print(f"after: {[m.text[:40] for m in conversation.messages]}, input {chat.input.toPlainText()!r}")
    return True


def draft_picture(folder: Path) -> bool:
    """``chat-draft-restored.png``: a question typed and an image attached in one window, never sent; the window
    closed; the next window on the same data folder shows both in its input."""
    import tempfile

    from workbench.app import build_window, demo_engine_config
    from workbench.bench.gui.image_shots import draw
    from workbench.bench.gui.screenshot import close_window

    picture = draw(Path(tempfile.mkdtemp()) / "harbour.png", (320, 240), (120, 170, 230), (30, 80, 150),
                   (250, 220, 80))
    first, _ = build_window(demo_engine_config(), start_engine=False)
    first.resize(1280, 720)
    first.show()
    first.chat.input.setPlainText("Compare this harbour's light with the one I sent yesterday, and say which\n")
    first.chat.attachments.add_sources([str(picture)])
    process_events_until(lambda: first.chat.attachments.images(), 30)
    close_window(first)
    second, _ = build_window(demo_engine_config(), start_engine=False)
    second.resize(1280, 720)
    second.show()
    chat = second.chat
    process_events_until(lambda: chat.attachments.images() or chat.attachments.problem.text(), 30)
    process_events_until(lambda: False, 0.3)
    print(f"restored: input {chat.input.toPlainText()!r}, images {[i.ref.name for i in chat.attachments.images()]}")
    save_small(second, str(folder / "chat-draft-restored.png"))
    close_window(second)
    return bool(chat.attachments.images())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
