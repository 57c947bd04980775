"""``bench storage-size``: the database's size after N messages kept through the app's own storage.

The messages are made as the app makes them: conversations of the application model, each question
answered by a reply streamed in flushes (as the engine loop sends text, ~20 a second) and finished
with its figures and settings; the storage thread writes them as it does in the app. Printed and
written to ``OUT/storage-size.json``: the file's size (after the WAL is checkpointed), bytes per
message, the time to write and to read everything back.
"""
from __future__ import annotations

import json
import random
import tempfile
import time
from pathlib import Path

from workbench.engine.backend import StreamEvent
from workbench.engine.events import RequestFinished, TextFlushed
from workbench.engine.metrics import RequestFigures
from workbench.engine.sampling import SamplingSettings
from workbench.engine.spec import EngineConfig
from workbench.model.app_model import AppModel
from workbench.storage.store import Storage

MESSAGES_PER_CONVERSATION = 10
FLUSHES_PER_REPLY = 8
WORDS = ("block", "cache", "prefix", "token", "engine", "paged", "attention", "request", "batch", "stream",
         "memory", "layer", "model", "prompt", "reply", "window", "heatmap", "pool", "hash", "evict")


def fill(model: AppModel, num_messages: int, reply_words: int, rng: random.Random) -> None:
    """Questions and streamed replies, ``MESSAGES_PER_CONVERSATION`` messages a conversation."""
    conversation = None
    for index in range(num_messages // 2):
        if index % (MESSAGES_PER_CONVERSATION // 2) == 0:
            conversation = model.new_conversation()
        question = " ".join(rng.choice(WORDS) for _ in range(12)) + "?"
        request = model.ask(conversation.conversation_id, question, SamplingSettings(seed=index))
        words = [rng.choice(WORDS) for _ in range(reply_words)]
        step = max(1, len(words) // FLUSHES_PER_REPLY)
        for start in range(0, len(words), step):
            model.apply(TextFlushed({request.request_id: " ".join(words[start:start + step]) + " "}))
        figures = RequestFigures(140, 96, reply_words, 0.02, 250.0, queue_s=0.001, e2e_s=0.5)
        model.apply(RequestFinished(StreamEvent(request.request_id, "", True, "stop", figures)))


def measure(num_messages: int, reply_words: int, out: Path) -> int:
    folder = Path(tempfile.mkdtemp(prefix="workbench-storage-size-"))
    path = folder / "workbench.db"
    storage, model = Storage.open(path), AppModel(EngineConfig("demo"), "You are the demo assistant.")
    storage.start(model)
    started = time.perf_counter()
    fill(model, num_messages, reply_words, random.Random(0))
    assert storage.flush(600), storage.problem
    write_s = time.perf_counter() - started
    storage.close()  # the last connection: the WAL is checkpointed into the file
    files = {p.name: p.stat().st_size for p in folder.iterdir() if p.name.startswith("workbench.db")}
    started = time.perf_counter()
    storage, restored = Storage.open(path), AppModel(EngineConfig("demo"))
    storage.restore_into(restored)
    read_s = time.perf_counter() - started
    num_restored = sum(len(c.messages) for c in restored.conversations.values())
    storage.close()
    size = sum(files.values())
    result = {"messages": num_messages, "restored_messages": num_restored, "reply_words": reply_words,
              "text_bytes": sum(len(m.text.encode()) for c in model.conversations.values() for m in c.messages),
              "files": files, "bytes": size, "bytes_per_message": size / max(1, num_messages),
              "write_s": write_s, "restore_s": read_s, "path": str(path)}
    out.mkdir(parents=True, exist_ok=True)
    (out / "storage-size.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0 if num_restored == num_messages else 1
