"""The one owner of the window's engine commands: starts, stops, chat questions, batch rows and their
aborts. No Qt.

Panes ask this owner, and the model's batch runs send through it; it posts to the engine loop's
queue. A question asked while the engine cannot take it (a start asked for and not yet ready, a start
that failed, an engine stopped or dead) is not posted: its reply waits, saying what it waits for
(:func:`waiting_note`), and goes to the engine as soon as the engine the model last asked for is ready.
"""
from __future__ import annotations

from typing import Callable

from workbench.engine.backend import ChatRequest, SamplingSettings
from workbench.engine.commands import Abort, StartEngine, StopEngine, Submit, SubmitAll, SubmitScheduled
from workbench.engine.events import EngineState
from workbench.engine.images import ImageInput
from workbench.engine.spec import EngineConfig
from workbench.model.app_model import AppModel
from workbench.model.engine_status import EngineStatus


class EngineCommands:
    def __init__(self, model: AppModel, post: Callable[[object], None]):
        self.model = model
        self.post = post
        self._waiting: dict[str, ChatRequest] = {}  # request id -> request, in the order asked
        self._stopped: int | None = None  # the start a stop was asked for last: stopping, though it may say ready
        model.engine_changed.connect(self._on_model_engine_changed)
        model.send_batch_runs_to(self)

    def accepting(self) -> bool:
        """True when the engine the model asked for last is ready and nothing holds it (a search's trials
        restart it and measure it): a question goes to it at once."""
        status = self.model.engine
        return (status.ready and status.start_id >= self.model.latest_start_id and not self.model.engine_hold
                and status.start_id != self._stopped)

    def hold(self, reason: str) -> None:
        """Chat questions and regenerates wait while ``reason`` stands, saying it (:func:`waiting_note`)."""
        self.model.hold_engine(reason)

    def release(self) -> None:
        """The hold ends: questions that waited go to the engine once it is ready (now, if it is)."""
        self.model.hold_engine("")
        self._on_model_engine_changed(self.model.engine)

    # -------------------------------------------------------------- the engine
    def start(self, config: EngineConfig | None = None) -> int:
        """Starts the engine on ``config`` (default: the model's); returns the start's id
        (see EngineStatus.settled). Questions waiting go to this start once it is ready."""
        if config is not None:
            self.model.set_config(config)
        return self.start_on(self.model.config)

    def start_on(self, spec) -> int:
        """Starts what ``spec`` names (an ``EngineConfig``, or a server's ``ServerSpec``: attach, or serve
        and attach) in place of the engine running now; returns the start's id."""
        start_id = self.model.next_start_id()
        self.post(StartEngine(spec, start_id))
        self.model.waiting_changed.emit()  # waiting questions now wait for this start
        return start_id

    def stop(self) -> None:
        self._stopped = self.model.latest_start_id
        self.post(StopEngine())

    # -------------------------------------------------------------- chat
    def ask(self, conversation_id: str, text: str, sampling: SamplingSettings,
            system_prompt: str | None = None, images: tuple[ImageInput, ...] = (),
            replacing: str = "") -> ChatRequest | None:
        """The user's question, with its ``images``: sent now, or kept until the engine can take it (the
        images with it). None while the conversation's last reply is still open, or when the reply failed
        before it could be sent (see ``AppModel.ask``; ``replacing``: the last question, edited)."""
        accepting = self.accepting()
        request = self.model.ask(conversation_id, text, sampling, system_prompt, waiting=not accepting,
                                 images=images, replacing=replacing)
        return self._send_or_keep(request, accepting)

    def regenerate(self, conversation_id: str, sampling: SamplingSettings,
                   system_prompt: str | None = None) -> ChatRequest | None:
        accepting = self.accepting()
        request = self.model.regenerate(conversation_id, sampling, system_prompt, waiting=not accepting)
        return self._send_or_keep(request, accepting)

    # -------------------------------------------------------------- batch rows
    def submit(self, request: ChatRequest) -> None:
        """A batch row's request, sent as it is (a run sends only while it runs)."""
        self.post(Submit(request))

    def submit_scheduled(self, requests: tuple[ChatRequest, ...], offsets_s: tuple[float, ...] = (),
                         concurrency: int | None = None) -> None:
        """A workload's requests, which the engine loop hands to the engine at their arrival offsets (seconds
        from now on the loop's clock), or ``concurrency`` at a time (a search's trial)."""
        self.post(SubmitScheduled(tuple(requests), tuple(offsets_s), concurrency))

    def abort(self, request_id: str) -> None:
        """Stops a reply or a batch row: one in the engine is aborted there, one still waiting is taken
        back."""
        if self._waiting.pop(request_id, None) is not None:
            self.model.cancel_waiting(request_id)
        else:
            self.post(Abort(request_id))

    def _send_or_keep(self, request: ChatRequest | None, accepting: bool) -> ChatRequest | None:
        if request is not None:
            if accepting:
                self.post(SubmitAll((request,)))
            else:
                self._waiting[request.request_id] = request
        return request

    def _on_model_engine_changed(self, status: EngineStatus) -> None:
        if not self._waiting or not self.accepting():
            return
        still_asked = set(self.model.waiting_chat_requests())  # a deleted conversation's are gone
        requests = tuple(r for r in self._waiting.values() if r.request_id in still_asked)
        self._waiting.clear()
        if requests:
            self.post(SubmitAll(requests))
            self.model.replies_sent(tuple(r.request_id for r in requests))


def waiting_note(status: EngineStatus, start_asked: bool, hold: str = "") -> str:
    """What a question that waits for the engine says. ``start_asked``: a start was asked for that
    the engine has not reported on yet (Apply, Restart engine); ``hold``: what holds the engine."""
    if hold:
        return f"waiting: {hold}"
    if status.state is EngineState.STARTING or start_asked:
        progress = status.progress if status.state is EngineState.STARTING else None
        if progress is None:
            return "waiting for the engine to start"
        label = progress.label[:1].lower() + progress.label[1:]
        return f"waiting for the engine: {label}, {round(progress.fraction * 100)} %"
    if status.ready:
        return "waiting for the engine"
    why = {EngineState.FAILED: "the engine did not start", EngineState.DIED: "the engine stopped unexpectedly"}
    reason = why.get(status.state, "the engine is stopped")
    return (f"not sent yet: {reason}. It is sent once the engine is running again "
            "(Restart engine); Stop takes it back")
