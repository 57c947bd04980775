"""Prompt files for the batch tests: a few prompts in each input format, and malformed lines."""
from __future__ import annotations

import json
from pathlib import Path

QUESTIONS = ("What is a KV cache?", "What is prefix caching?", "Why do two chats share blocks?")


def openai_line(custom_id: str, question: str, url: str = "/v1/chat/completions", **body) -> str:
    if url == "/v1/chat/completions":
        body = {"model": "demo", "messages": [{"role": "user", "content": question}], **body}
    else:
        body = {"model": "demo", "prompt": question, **body}
    return json.dumps({"custom_id": custom_id, "method": "POST", "url": url, "body": body})


def write_each_format(folder: Path) -> dict[str, tuple[Path, str | None]]:
    """One small file per input format: name -> (path, CSV column)."""
    jsonl = folder / "prompts.jsonl"
    jsonl.write_text("\n".join([json.dumps({"prompt": QUESTIONS[0]}),
                                json.dumps({"messages": [{"role": "system", "content": "Be brief."},
                                                         {"role": "user", "content": QUESTIONS[1]}]}),
                                json.dumps({"prompt": QUESTIONS[2], "custom_id": "third"})]) + "\n")
    openai = folder / "openai-batch.jsonl"
    openai.write_text("\n".join([openai_line("req-1", QUESTIONS[0]),
                                 openai_line("req-2", QUESTIONS[1], max_tokens=5),
                                 openai_line("req-3", QUESTIONS[2], url="/v1/completions")]) + "\n")
    table = folder / "prompts.csv"
    table.write_text('id,question\n1,"What is a KV cache?"\n2,"What is prefix caching,\nand why?"\n3,Hello!\n')
    text = folder / "prompts.txt"
    text.write_text("\n".join(QUESTIONS) + "\n")
    return {"jsonl": (jsonl, None), "openai": (openai, None), "csv": (table, "question"), "text": (text, None)}


def open_dialog(qtbot, path, **kwargs):
    """The open dialog on ``path``, once its first look at the file is shown."""
    from workbench.ui.open_prompt_dialog import OpenPromptDialog

    dialog = OpenPromptDialog(str(path), **kwargs)
    qtbot.addWidget(dialog)
    looked(qtbot, dialog)
    return dialog


def looked(qtbot, dialog) -> None:
    """Waits until the dialog shows what it last asked of the file (its looks run on a thread of their own)."""
    qtbot.waitUntil(lambda: not dialog.looking(), timeout=60_000)
