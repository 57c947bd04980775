"""The adapter from the application model to the storage thread: it listens to the model's signals
(on the GUI thread, the model's one writer) and puts immutable records on the writer's queue.

It reads the model only while a signal is delivered and copies what it needs into the record
(strings are immutable, settings and figures are frozen), so the storage thread never touches the
model. A streaming reply's text costs a record per flush (~20 a second), not a write per token.
"""
from __future__ import annotations

import time
import uuid
from typing import Callable

from workbench.batch.results import ERROR
from workbench.engine.events import EngineState
from workbench.engine.metrics import RequestFigures
from workbench.model.app_model import AppModel
from workbench.model.conversations import ChatMessage
from workbench.model.engine_status import EngineStatus
from workbench.storage.records import (
    AllConversationsDeleted, BatchRowSaved, BatchRunDeleted, BatchRunSaved, ConversationDeleted, ConversationSaved,
    DraftSaved, EngineRunPlanned, EngineRunReady, EngineRunStarted, EngineRunStopped, MessageSaved, MessagesKept,
    MessageTextSaved,
)


def message_record(conversation_id: str, position: int, message: ChatMessage, run_key: str = "") -> MessageSaved:
    return MessageSaved(conversation_id, message.message_id, position, message.role, message.text, message.status,
                        message.error, message.request_id, message.sampling, message.system_prompt, message.figures,
                        run_key if message.role == "assistant" else "", message.images)


class ModelRecorder:
    """Records what changes in ``model`` through ``put`` (the writer's queue) until :meth:`detach`."""

    def __init__(self, model: AppModel, put: Callable[[object], None], session_id: str | None = None):
        """``session_id``: the run of the app that the engine runs recorded from now on belong to."""
        self.model, self.put, self.session_id = model, put, session_id
        self._saved = {cid: {m.message_id for m in c.messages} for cid, c in model.conversations.items()}
        self._sampling = {cid: c.sampling for cid, c in model.conversations.items()}
        self._engine_run: tuple[str, int] | None = None  # (run key, start id) of the engine run open now
        self._run_before: tuple[str, int] | None = None  # the engine run that ended last
        self._ready_recorded = False
        self._watched: dict[str, object] = {}  # run id -> its results, whose rows are watched
        self._connections = [
            (model.conversation_added, self._on_model_conversation_added),
            (model.conversation_changed, self._on_model_conversation_changed),
            (model.draft_changed, self._on_model_draft_changed),
            (model.messages_changed, self._on_model_messages_changed),
            (model.message_changed, self._on_model_message_changed),
            (model.conversation_removed, self._on_model_conversation_removed),
            (model.batch_run_added, self._on_model_batch_run_added),
            (model.batch_run_removed, self._on_model_batch_run_removed),
            (model.engine_changed, self._on_model_engine_changed),
            (model.capacity_planned, self._on_model_capacity_planned),
        ]
        for signal, slot in self._connections:
            signal.connect(slot)
        for run_id in model.batch_runs:
            self._watch_rows(run_id)

    def record_all_conversations(self) -> None:
        """Saves every conversation of the model whole (a new database takes over from a damaged one)."""
        for conversation_id in self.model.conversations:
            self._on_model_conversation_added(conversation_id)

    def detach(self) -> None:
        for signal, slot in self._connections:
            signal.disconnect(slot)
        for run_id in list(self._watched):
            self._unwatch_rows(run_id)

    # ------------------------------------------------------------------ conversations
    def _on_model_conversation_added(self, conversation_id: str) -> None:
        self._saved.pop(conversation_id, None)
        self._on_model_messages_changed(conversation_id)
        conversation = self.model.conversations.get(conversation_id)
        if conversation is not None and (conversation.draft or conversation.draft_images):
            self._on_model_draft_changed(conversation_id)  # a new database taking over keeps the drafts too

    def _on_model_draft_changed(self, conversation_id: str) -> None:
        conversation = self.model.conversations.get(conversation_id)
        if conversation is None:
            return
        if conversation_id not in self._saved:  # its row first
            self._on_model_messages_changed(conversation_id)
        self.put(DraftSaved(conversation_id, conversation.draft, conversation.draft_images))

    def _on_model_messages_changed(self, conversation_id: str) -> None:
        conversation = self.model.conversations.get(conversation_id)
        if conversation is None:
            return
        if conversation_id not in self._saved or self._sampling.get(conversation_id) != conversation.sampling:
            # new to the database (the conversation before its messages), or its own settings changed (an ask)
            self._save_conversation(conversation)
        saved = self._saved.setdefault(conversation_id, set())
        ids = tuple(m.message_id for m in conversation.messages)
        if saved - set(ids):
            self.put(MessagesKept(conversation_id, ids))
        for position, message in enumerate(conversation.messages):
            if message.message_id not in saved:
                # a reply asked now streams from the engine run open now; a stored one keeps its own
                run_key = self.run_key if message.status == "streaming" else ""
                self.put(message_record(conversation_id, position, message, run_key))
        self._saved[conversation_id] = set(ids)

    def _on_model_conversation_changed(self, conversation_id: str) -> None:
        conversation = self.model.conversations.get(conversation_id)
        if conversation is not None and conversation_id in self._saved:  # a new one is saved whole, with it
            self._save_conversation(conversation)

    def _save_conversation(self, conversation) -> None:
        position = list(self.model.conversations).index(conversation.conversation_id)
        self.put(ConversationSaved(conversation.conversation_id, conversation.title, position, conversation.sampling,
                                   conversation.system_prompt, conversation.number, conversation.title_source))
        self._sampling[conversation.conversation_id] = conversation.sampling

    def _on_model_message_changed(self, conversation_id: str, message_id: str, text_only: bool) -> None:
        conversation = self.model.conversations.get(conversation_id)
        message = conversation.message(message_id) if conversation is not None else None
        if message is None:
            return
        if text_only:
            self.put(MessageTextSaved(message_id, message.text))
        else:
            self.put(message_record(conversation_id, conversation.messages.index(message), message, self.run_key))

    def _on_model_conversation_removed(self, conversation_id: str) -> None:
        if conversation_id:
            self._saved.pop(conversation_id, None)
            self.put(ConversationDeleted(conversation_id))
        else:
            self._saved.clear()
            self.put(AllConversationsDeleted())
            # A chat made while this signal is delivered (the last one gone: a fresh one) may have been
            # recorded before this receiver ran, whichever connected first: stored again after the delete.
            self.record_all_conversations()

    # ------------------------------------------------------------------ batch runs
    def _on_model_batch_run_added(self, run_id: str) -> None:
        run = self.model.batch_runs[run_id]
        self.put(BatchRunSaved(run_id, run.source, run.settings, tuple(run.results.prompts)))
        self._watch_rows(run_id)

    def _on_model_batch_run_removed(self, run_id: str) -> None:
        self._unwatch_rows(run_id)
        self.put(BatchRunDeleted(run_id))

    def _watch_rows(self, run_id: str) -> None:
        results = self.model.batch_runs[run_id].results

        def on_row_finished(row: int) -> None:
            figures = row_figures(results, row)
            ran = figures is not None or results.status(row) == ERROR  # a row cancelled before it ran: no engine run
            self.put(BatchRowSaved(run_id, row, results.status(row), results.finish_reason(row), results.texts[row],
                                   results.errors.get(row, ""), figures, self.run_key if ran else "", time.time()))

        results.row_finished.connect(on_row_finished)
        self._watched[run_id] = (results, on_row_finished)

    def _unwatch_rows(self, run_id: str) -> None:
        watched = self._watched.pop(run_id, None)
        if watched is not None:
            watched[0].row_finished.disconnect(watched[1])

    # ------------------------------------------------------------------ engine runs
    @property
    def run_key(self) -> str:
        """The engine run open now ("" between runs)."""
        return self._engine_run[0] if self._engine_run is not None else ""

    def run_key_of(self, start_id: int) -> str:
        """The engine run that start ``start_id`` opened: the one open now or the one before it ("" for
        any other). An engine's statistics name their start, and the last of them come as it stops."""
        return next((run[0] for run in (self._engine_run, self._run_before) if run and run[1] == start_id), "")

    def _on_model_engine_changed(self, status: EngineStatus) -> None:
        now = time.time()
        run = self._engine_run
        if run is not None and (status.start_id != run[1] or status.state not in (EngineState.STARTING,
                                                                                   EngineState.READY)):
            self.put(EngineRunStopped(run[0], now, status.message.splitlines()[0] if status.message else ""))
            self._run_before, self._engine_run, run = run, None, None
        if run is None and status.state in (EngineState.STARTING, EngineState.READY):
            run = self._engine_run = (uuid.uuid4().hex, status.start_id)
            self.put(EngineRunStarted(run[0], status.start_id, self.model.config, now, self.session_id))
            self._ready_recorded = False
        if run is not None and status.ready and status.info is not None and not self._ready_recorded:
            self._ready_recorded = True
            self.put(EngineRunReady(run[0], status.info, now))

    def _on_model_capacity_planned(self, start_id: int) -> None:
        run = self._engine_run
        if run is not None and run[1] == start_id:
            self.put(EngineRunPlanned(run[0], self.model.planned_kv_blocks[start_id]))


def row_figures(results, row: int):
    """A finished row's figures as the results hold them (None where the engine gave none)."""
    counts = [results.value(name, row) for name in ("prompt_tokens", "cached_prompt_tokens", "output_tokens")]
    if counts[2] is None:
        return None
    itl_s = results.value("itl_s", row)
    return RequestFigures(counts[0] or 0, counts[1], counts[2], results.value("ttft_s", row),
                          1.0 / itl_s if itl_s else None, queue_s=results.value("queue_s", row),
                          e2e_s=results.value("e2e_s", row), num_image_tokens=results.value("image_tokens", row) or 0)
