"""The application model: engine state, the configuration in use, conversations and requests.

One writer, the GUI thread. The engine loop's reports arrive as messages and :meth:`AppModel.apply`
applies them; widgets observe the signals below and read the model, never each other.
"""
from __future__ import annotations

import itertools
from dataclasses import replace
from functools import singledispatchmethod
from pathlib import Path

from psygnal import Signal

from workbench.batch.results import BatchResults
from workbench.batch.run import BatchRun, RunEngine, RunSettings
from workbench.engine import image_store
from workbench.engine.backend import ChatRequest, SamplingSettings
from workbench.engine.events import (
    EngineLogOpened, EngineReady, EngineState, RequestFailed, RequestFinished, RequestsTaken, StartProgressed,
    StateChanged, TextFlushed,
)
from workbench.engine.images import ImageInput, ImageProblem, ImageRef
from workbench.engine.requests import Owner, RequestRegistry
from workbench.engine.spec import EngineConfig
from workbench.hub.download import Downloads
from workbench.model.conversations import OPEN_STATUSES, ChatMessage, Conversation, keep_images
from workbench.model.engine_status import EngineStatus
from workbench.model.server_status import ServerStatus
from workbench.remote.events import ServerMetricsRead, ServerStateChanged


NOT_SENT = "not sent: taken back before the engine could take it (the question is kept: Regenerate sends it)"


def _status(waiting: bool) -> str:
    return "waiting" if waiting else "streaming"


class AppModel:
    engine_changed = Signal(object)  # EngineStatus
    config_changed = Signal(object)  # EngineConfig
    conversation_added = Signal(str)  # conversation id
    conversation_changed = Signal(str)  # conversation id: its title, its system prompt or its sampling
    conversation_selected = Signal(str)  # conversation id: the one the user looks at ("" : none)
    draft_changed = Signal(str)  # conversation id: what was typed in it and not sent
    message_changed = Signal(str, str, bool)  # conversation id, message id, text only
    messages_changed = Signal(str)  # conversation id: messages added or removed
    requests_taken = Signal(tuple)  # conversation ids whose replies the engine now holds
    conversation_removed = Signal(str)  # conversation id (deleted; "" for all of them)
    batch_run_added = Signal(str)  # run id
    batch_run_removed = Signal(str)  # run id
    server_changed = Signal(object)  # ServerStatus
    waiting_changed = Signal()  # what questions waiting for the engine wait for (a start was asked for)
    capacity_planned = Signal(int)  # start id: the planner's estimate of that run's KV blocks is in

    def __init__(self, config: EngineConfig, system_prompt: str = ""):
        self.config = config
        self.system_prompt = system_prompt
        self.engine = EngineStatus()
        self.conversations: dict[str, Conversation] = {}
        self.selected_conversation_id = ""  # the conversation shown: the heatmap follows its requests
        self.requests = RequestRegistry()
        self._start_ids = itertools.count(1)
        self.latest_start_id = 0  # the last start asked for; EngineStatus.start_id is the last reported
        self._replies: dict[str, tuple[str, str]] = {}  # request id -> (conversation id, message id)
        self.batch_runs: dict[str, BatchRun] = {}  # run id -> run, in the order started
        self.run_engine: RunEngine | None = None  # where batch runs send: the one owner of engine commands
        self._batch_numbers = itertools.count(1)  # run ids never repeat, even after a run is let go
        self._chat_numbers = itertools.count(1)  # nor do conversations' numbers, even after a delete
        self.new_chat_sampling = SamplingSettings()  # seeds each new conversation (the applied preset's)
        self.preset_name = ""  # the preset the configuration came from ("" : none)
        self.server = ServerStatus()  # the server attached to, if any
        self.downloads = Downloads()  # models being fetched from the Hub (Model > Get a model…)
        self.planned_kv_blocks: dict[int, int] = {}  # start id -> the capacity planner's estimate
        self.images_dir: Path | None = None  # where attached images are kept (None: the data folder's store)
        self.request_sinks: dict[str, object] = {}  # owner kind -> what hears of its requests (a search: "tune")
        self.engine_hold = ""  # why chat questions wait although the engine runs (a search uses it); "": none

    # ------------------------------------------------------------------ configuration

    def note_capacity_plan(self, start_id: int, num_blocks: int) -> None:
        """The capacity planner's estimate for the engine run ``start_id`` (kept beside vLLM's count)."""
        if self.planned_kv_blocks.get(start_id) != num_blocks:
            self.planned_kv_blocks[start_id] = num_blocks
            self.capacity_planned.emit(start_id)
    def set_config(self, config: EngineConfig) -> None:
        self.config = config
        self.config_changed.emit(config)

    def apply_preset(self, name: str, config: EngineConfig, sampling: SamplingSettings) -> None:
        """A preset's configuration becomes the model's; its sampling seeds conversations started from now
        on, while each existing conversation keeps its own."""
        self.preset_name = name
        self.new_chat_sampling = sampling
        self.set_config(config)

    def open_chat_requests(self) -> list[str]:
        """Chat replies the engine holds (streaming), by request id; not those still waiting for it."""
        return [request_id for request_id in self._replies if self._reply_status(request_id) == "streaming"]

    def waiting_chat_requests(self) -> list[str]:
        """Chat questions asked while the engine could not take them, by request id, in the order asked."""
        return [request_id for request_id in self._replies if self._reply_status(request_id) == "waiting"]

    def _reply_status(self, request_id: str) -> str:
        conversation_id, message_id = self._replies[request_id]
        reply = self.conversations[conversation_id].message(message_id)
        return reply.status if reply is not None else ""

    def num_in_flight(self) -> int:
        """Requests in the engine now: chat replies streaming and batch rows sent."""
        return (len(self.open_chat_requests())
                + sum(run.progress().num_in_flight for run in self.batch_runs.values()))

    def hold_engine(self, reason: str) -> None:
        """Chat questions wait while ``reason`` holds the engine ("" lets them go; see EngineCommands)."""
        if reason != self.engine_hold:
            self.engine_hold = reason
            self.waiting_changed.emit()

    def next_start_id(self) -> int:
        """A number for the next StartEngine command; the loop reports its states under it."""
        self.latest_start_id = next(self._start_ids)
        return self.latest_start_id

    # ------------------------------------------------------------------ conversations
    def new_conversation(self) -> Conversation:
        number = next(self._chat_numbers)
        conversation = Conversation(f"Chat {number}", sampling=self.new_chat_sampling,
                                    system_prompt=self.system_prompt, number=number)
        self.conversations[conversation.conversation_id] = conversation
        self.conversation_added.emit(conversation.conversation_id)
        return conversation

    def rename_conversation(self, conversation_id: str, title: str) -> bool:
        """The user's own title (blank is refused: the old title stays); True if it changed."""
        conversation = self.conversations[conversation_id]
        title = " ".join(title.split())
        if not title or title == conversation.title:
            return False
        conversation.title, conversation.title_source = title, "user"
        self.conversation_changed.emit(conversation_id)
        return True

    def set_system_prompt(self, conversation_id: str, system_prompt: str) -> None:
        """A conversation's own system prompt, used by its next question (and kept with it)."""
        conversation = self.conversations.get(conversation_id)
        if conversation is not None and conversation.system_prompt != system_prompt:
            conversation.system_prompt = system_prompt
            self.conversation_changed.emit(conversation_id)

    def keep_draft(self, conversation_id: str, text: str, images: tuple[ImageInput, ...] = ()) -> None:
        """What was typed and attached in a conversation and not sent, kept with it (and stored) so that a
        restart or a crash loses none of it. Images that cannot be kept in the store stay out of the kept draft
        (the pane still holds them)."""
        conversation = self.conversations.get(conversation_id)
        if conversation is None:
            return
        try:
            refs = keep_images(images, self.images_dir)
        except ImageProblem:
            refs = ()
        if (conversation.draft, conversation.draft_images) != (text, refs):
            conversation.draft, conversation.draft_images = text, refs
            self.draft_changed.emit(conversation_id)

    def set_sampling(self, conversation_id: str, sampling: SamplingSettings) -> None:
        """A conversation's own sampling settings, used by its next question (and kept with it), edited
        before it is sent: nothing set is lost by looking at another conversation."""
        conversation = self.conversations.get(conversation_id)
        if conversation is not None and conversation.sampling != sampling:
            conversation.sampling = sampling
            self.conversation_changed.emit(conversation_id)

    def select_conversation(self, conversation_id: str) -> None:
        """The conversation the user looks at now (an unknown id is ignored)."""
        if conversation_id in self.conversations and conversation_id != self.selected_conversation_id:
            self.selected_conversation_id = conversation_id
            self.conversation_selected.emit(conversation_id)

    def _unselect(self, conversation_ids) -> None:
        """Nothing is selected once the selected conversation is gone (said before it goes)."""
        if self.selected_conversation_id in conversation_ids:
            self.selected_conversation_id = ""
            self.conversation_selected.emit("")

    def request_ids_of(self, conversation_id: str) -> tuple[str, ...]:
        """The request ids of a conversation's assistant replies, newest last (none for an unknown id)."""
        conversation = self.conversations.get(conversation_id)
        if conversation is None:
            return ()
        return tuple(m.request_id for m in conversation.messages if m.role == "assistant" and m.request_id)

    def delete_conversation(self, conversation_id: str) -> None:
        """Removes a conversation; a reply still streaming in it is forgotten (the caller aborts it)."""
        if conversation_id not in self.conversations:
            return
        self._unselect((conversation_id,))
        self.conversations.pop(conversation_id)
        for request_id in [r for r, (c, _) in self._replies.items() if c == conversation_id]:
            del self._replies[request_id]
        self.conversation_removed.emit(conversation_id)

    def clear_conversations(self) -> None:
        """Removes every conversation (one signal, with the id "")."""
        self._unselect(tuple(self.conversations))
        self.conversations.clear()
        self._replies.clear()
        self.conversation_removed.emit("")

    def restore(self, conversations: list[Conversation], batch_runs: list[BatchRun],
                highest_chat_number: int = 0) -> None:
        """What was stored, put back before any observer is connected (no signals); batch run numbers
        go on after the highest restored, conversation numbers after the highest ever given."""
        for conversation in conversations:
            self.conversations[conversation.conversation_id] = conversation
        numbers = [c.number for c in conversations] + [highest_chat_number]
        self._chat_numbers = itertools.count(max(numbers) + 1)
        for run in batch_runs:
            run.engine = self.run_engine
            self.batch_runs[run.run_id] = run
        highest = max((run.run_no for run in batch_runs), default=0)
        self._batch_numbers = itertools.count(highest + 1)

    def ask(self, conversation_id: str, text: str, sampling: SamplingSettings,
            system_prompt: str | None = None, waiting: bool = False,
            images: tuple[ImageInput, ...] = (), replacing: str = "") -> ChatRequest | None:
        """Adds the user's message, with ``images`` (checked by ``read_image``) kept in the image store,
        and a streaming reply (``waiting``: a reply that waits for the engine until :meth:`replies_sent`);
        None while a reply is still open, or when the reply failed at once (an earlier turn's image gone
        from the store: the reply says which). Raises :class:`ImageProblem` when an image cannot be kept
        (nothing is added then). ``replacing``: the last question's id, edited: it and its reply are replaced
        (see ``Conversation.ask``)."""
        conversation = self.conversations[conversation_id]
        if conversation.streaming_message() is not None:
            return None
        refs = keep_images(images, self.images_dir)
        self._keep_system_prompt(conversation, system_prompt)
        request, reply = conversation.ask(text, conversation.system_prompt, sampling, _status(waiting), refs,
                                          self._load_image, replacing)
        if len(conversation.messages) == 2 and conversation.retitle_from(text):  # its first question
            self.conversation_changed.emit(conversation_id)
        return self._register(conversation, request, reply)

    def regenerate(self, conversation_id: str, sampling: SamplingSettings,
                   system_prompt: str | None = None, waiting: bool = False) -> ChatRequest | None:
        """Asks the last question again, its images and the history's with it."""
        conversation = self.conversations[conversation_id]
        if conversation.streaming_message() is not None:
            return None
        self._keep_system_prompt(conversation, system_prompt)
        asked = conversation.regenerate(conversation.system_prompt, sampling, _status(waiting), self._load_image)
        return self._register(conversation, *asked) if asked is not None else None

    def _load_image(self, ref: ImageRef) -> ImageInput:
        return image_store.load(ref, self.images_dir)

    def replies_sent(self, request_ids: tuple[str, ...]) -> None:
        """Waiting replies whose questions have now gone to the engine: they stream from here on."""
        for request_id in request_ids:
            found = self._replies.get(request_id)
            reply = self.conversations[found[0]].message(found[1]) if found else None
            if reply is not None and reply.status == "waiting":
                reply.status = "streaming"
                self.message_changed.emit(found[0], found[1], False)

    def cancel_waiting(self, request_id: str) -> None:
        """A question that never reached the engine, taken back by the user: its text stays."""
        if request_id in self._replies and self._reply_status(request_id) == "waiting":
            self._end_reply(request_id, "stopped", error=NOT_SENT, waiting_too=True)

    def _keep_system_prompt(self, conversation: Conversation, system_prompt: str | None) -> None:
        """A question's system prompt (None: the conversation's own) becomes the conversation's."""
        if system_prompt is not None:
            self.set_system_prompt(conversation.conversation_id, system_prompt)

    def _register(self, conversation: Conversation, request: ChatRequest | None,
                  reply: ChatMessage) -> ChatRequest | None:
        if request is None:  # failed before it could be sent: shown, never registered
            self.messages_changed.emit(conversation.conversation_id)
            return None
        image_names = tuple(image.ref.name for message in request.messages for image in message.images)
        owner = Owner("chat", conversation.conversation_id, reply.message_id, conversation.title, image_names)
        self.requests.add(request.request_id, owner)
        self._replies[request.request_id] = (conversation.conversation_id, reply.message_id)
        self.messages_changed.emit(conversation.conversation_id)
        return request

    def owner_label(self, request_id: str) -> str:
        """Who a request belongs to; a batch row keeps its name after its record has left the registry."""
        if self.requests.get(request_id) is None:
            run = self.batch_runs.get(request_id.rpartition("-")[0])
            row = run.request_id_row(request_id) if run is not None else None
            if row is not None:
                return run.row_label(row)
        return self.requests.label(request_id)

    # ------------------------------------------------------------------ batch runs
    def send_batch_runs_to(self, engine: RunEngine) -> None:
        """Where every batch run, restored or new, sends its requests (``EngineCommands`` does this)."""
        self.run_engine = engine
        for run in self.batch_runs.values():
            run.engine = engine

    def new_batch_run(self, results: BatchResults, settings: RunSettings,
                      source: tuple[str, str] = ("", "")) -> BatchRun:
        """A run of ``results`` through the engine the model sends batch runs to; its requests are
        owners in the request registry, and the loop's messages about them reach it here.
        ``source``: the prompt file's path and format."""
        run = BatchRun(next(self._batch_numbers), results, settings, self.run_engine, self.requests,
                       source=source)
        self.batch_runs[run.run_id] = run
        self.batch_run_added.emit(run.run_id)
        return run

    def forget_batch_run(self, run_id: str) -> None:
        """Lets go of a run that has ended (its results go with it); a run still going is kept."""
        run = self.batch_runs.get(run_id)
        if run is not None and run.state in ("ready", "finished", "cancelled") and not run.progress().num_in_flight:
            del self.batch_runs[run_id]
            self.batch_run_removed.emit(run_id)

    def add_request_sink(self, kind: str, sink) -> None:
        """The engine's messages about requests whose owner is of ``kind`` go to ``sink``, as a batch run
        hears of its rows: ``text_arrived(request_id, text)``, ``request_finished(StreamEvent)``,
        ``request_failed(request_id, message)``."""
        self.request_sinks[kind] = sink

    def _owner_of(self, request_id: str):
        """The batch run, or the sink, that hears of ``request_id``; None for a chat reply or a stranger's."""
        record = self.requests.get(request_id)
        if record is None:
            return None
        if record.owner.kind == "batch":
            return self.batch_runs.get(record.owner.owner_id)
        return self.request_sinks.get(record.owner.kind)

    # ------------------------------------------------------------------ messages from the engine loop
    @singledispatchmethod
    def apply(self, event) -> None:
        raise TypeError(f"the application model has no handler for {type(event).__name__}")

    @apply.register
    def _(self, event: StateChanged) -> None:
        ready = event.state is EngineState.READY
        if not ready:
            for run in self.batch_runs.values():
                run.engine_lost(event.message)
            for request_id in self.open_chat_requests():  # the engine that held them is gone
                self._end_reply(request_id, "stopped", error="the engine stopped before this reply finished")
        self._set_engine(state=event.state, message=event.message, start_id=event.start_id,
                         progress=None, info=self.engine.info if ready else None, retry=event.retry)
        if not ready and self.server.state:  # whatever runs next, that server is no longer attached
            self._set_server(state="", metrics=None, message=event.message)

    @apply.register
    def _(self, event: ServerStateChanged) -> None:
        self._set_server(state=event.state, base_url=event.base_url, message=event.message,
                         attempt=event.attempt, retry_in_s=event.retry_in_s, served=event.served,
                         log_path=event.log_path, kv_events_endpoints=event.kv_events_endpoints,
                         metrics_problem=event.metrics_problem)

    @apply.register
    def _(self, event: ServerMetricsRead) -> None:
        self._set_server(metrics=event.metrics)

    def _set_server(self, **changes) -> None:
        self.server = replace(self.server, **changes)
        self.server_changed.emit(self.server)

    @apply.register
    def _(self, event: StartProgressed) -> None:
        self._set_engine(progress=event.progress)

    @apply.register
    def _(self, event: EngineReady) -> None:
        self._set_engine(info=event.info)

    @apply.register
    def _(self, event: EngineLogOpened) -> None:
        self._set_engine(log_path=event.path)

    @apply.register
    def _(self, event: TextFlushed) -> None:
        for request_id, text in event.chunks.items():
            found = self._replies.get(request_id)
            if found is None:
                run = self._owner_of(request_id)
                if run is not None:
                    run.text_arrived(request_id, text)
                continue  # otherwise a request of no conversation (a benchmark)
            reply = self.conversations[found[0]].message(found[1])
            if reply is not None and reply.status == "streaming":
                reply.text += text
                self.message_changed.emit(found[0], found[1], True)

    @apply.register
    def _(self, event: RequestsTaken) -> None:
        conversations = {found[0] for request_id in event.request_ids if (found := self._replies.get(request_id))}
        if conversations:
            self.requests_taken.emit(tuple(sorted(conversations)))

    @apply.register
    def _(self, event: RequestFinished) -> None:
        stream = event.event
        run = self._owner_of(stream.request_id)
        if run is not None:
            run.request_finished(stream)
            return
        status = "stopped" if stream.finish_reason == "aborted" else "done"
        self._end_reply(stream.request_id, status, figures=stream.figures)

    @apply.register
    def _(self, event: RequestFailed) -> None:
        run = self._owner_of(event.request_id)
        if run is not None:
            run.request_failed(event.request_id, event.message)
            return
        self._end_reply(event.request_id, "error", error=event.message)

    def _end_reply(self, request_id: str, status: str, figures=None, error: str = "",
                   waiting_too: bool = False) -> None:
        """Ends a streaming reply. One still waiting for the engine is left waiting by whatever the
        engine says (it never had the request), unless ``waiting_too``."""
        found = self._replies.get(request_id)
        reply = self.conversations[found[0]].message(found[1]) if found else None
        if reply is not None and reply.status == "waiting" and not waiting_too:
            return
        self.requests.finish(request_id, status, figures)
        self._replies.pop(request_id, None)
        if reply is None or reply.status not in OPEN_STATUSES:
            return
        reply.status, reply.figures, reply.error = status, figures, error
        self.message_changed.emit(found[0], found[1], False)

    def _set_engine(self, **changes) -> None:
        self.engine = replace(self.engine, **changes)
        self.engine_changed.emit(self.engine)
