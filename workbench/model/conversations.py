"""Conversations and their messages, with stable ids (UUIDs) ready to be stored. Plain data, no Qt.

Nothing a user typed is lost: a failed reply keeps its error beside the user's message. A user message's
images are references (:class:`~workbench.engine.images.ImageRef`); their bytes are read from the data
folder's image store only when a request is built.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from workbench.engine import image_store
from workbench.engine.backend import ChatRequest, Message, SamplingSettings
from workbench.engine.images import ImageInput, ImageProblem, ImageRef
from workbench.engine.metrics import RequestFigures


OPEN_STATUSES = ("waiting", "streaming")  # a reply not yet ended


def new_id() -> str:
    return uuid.uuid4().hex


@dataclass
class ChatMessage:
    """One turn of a conversation: the user's text, or a reply as it streams."""

    role: str  # "user" or "assistant"
    text: str = ""
    status: str = "done"  # "waiting" (for the engine), "streaming", "done", "stopped", "error"
    error: str = ""
    figures: RequestFigures | None = None
    request_id: str = ""
    message_id: str = field(default_factory=new_id)
    sampling: SamplingSettings | None = None  # a reply's: what it was asked with
    system_prompt: str = ""  # a reply's: the system prompt it was asked with
    images: tuple[ImageRef, ...] = ()  # a user message's images, in the order attached (sent before its text)


ImageLoader = Callable[[ImageRef], ImageInput]  # an image's bytes by its reference (the data folder's store)
Asked = tuple["ChatRequest | None", ChatMessage]  # the request to send (None: the reply failed at once), the reply


TITLE_LENGTH = 48  # a title taken from the first question: its first line, at most this long


def keep_images(images: tuple[ImageInput, ...], folder: Path | None = None) -> tuple[ImageRef, ...]:
    """Copies each image into the store (``folder``; None: the data folder's), named by its content hash;
    their references, in order. :class:`ImageProblem` naming the image and the fix when one cannot be kept."""
    for image in images:
        try:
            image_store.keep(image, folder)
        except OSError as error:
            where = image_store.path_of(image.ref, folder).parent
            raise ImageProblem(f"{image.ref.name} could not be kept in {where} ({error.strerror or error}). "
                               "Free some space there (or make it writable) and send again.") from None
    return tuple(image.ref for image in images)


def title_from_question(text: str) -> str:
    """A conversation's title from its first question: the first line, cut at a word near the end."""
    line = " ".join(text.strip().splitlines()[0].split()) if text.strip() else ""
    if len(line) <= TITLE_LENGTH:
        return line
    cut = line[:TITLE_LENGTH - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut[TITLE_LENGTH // 2:] else cut) + "…"


@dataclass
class Conversation:
    title: str
    messages: list[ChatMessage] = field(default_factory=list)
    conversation_id: str = field(default_factory=new_id)
    sampling: SamplingSettings = SamplingSettings()  # its own settings: seeded by the preset, then the user's
    system_prompt: str = ""  # its own system prompt: seeded by the app's default, then the user's
    number: int = 0  # "Chat 7": given once, never given again (deleting a chat does not free it)
    title_source: str = "number"  # "number" (Chat 7), "question" (its first question) or "user" (renamed)
    draft: str = ""  # what was typed and not sent, kept with it (a restart, a crash)
    draft_images: tuple[ImageRef, ...] = ()  # the images attached and not sent, in the image store

    def retitle_from(self, question: str) -> bool:
        """A numbered conversation takes its first question as its title; True if the title changed."""
        title = title_from_question(question)
        if self.title_source != "number" or not title:
            return False
        self.title, self.title_source = title, "question"
        return True

    def history(self, system_prompt: str, load: ImageLoader = image_store.load) -> tuple[Message, ...]:
        """The messages sent to the model: system prompt, then completed turns (errors left out), each
        user turn with its images' bytes from ``load`` (which raises :class:`ImageProblem` for one gone)."""
        sent = [Message("system", system_prompt)] if system_prompt.strip() else []
        for message in self.messages:
            if message.role == "user":
                sent.append(Message("user", message.text, tuple(load(ref) for ref in message.images)))
            elif message.status in ("done", "stopped") and message.text:
                sent.append(Message(message.role, message.text))
        return tuple(sent)

    def ask(self, text: str, system_prompt: str, sampling: SamplingSettings, status: str = "streaming",
            images: tuple[ImageRef, ...] = (), load: ImageLoader = image_store.load, replacing: str = "") -> Asked:
        """Adds the user's message (with ``images``, already in the store) and an empty reply (``status``:
        "streaming", or "waiting" for an engine that cannot take it yet); returns the request to send
        (None when an image of the history could not be read: the reply is failed, naming it).
        ``replacing``: the id of the last question, which goes with its reply before the new one is asked
        (its edit); a question that is no longer the last stays, and the new one follows."""
        if replacing and replacing == self.last_question_id():
            first = next(i for i, m in enumerate(self.messages) if m.message_id == replacing)
            del self.messages[first:]
            if first == 0 and self.title_source == "question":  # the title came from the question edited
                self.title_source = "number"
        self.messages.append(ChatMessage("user", text, images=tuple(images)))
        return self._request_reply(system_prompt, sampling, status, load)

    def last_question_id(self) -> str:
        """The id of the last user message ("" before the first)."""
        return next((m.message_id for m in reversed(self.messages) if m.role == "user"), "")

    def regenerate(self, system_prompt: str, sampling: SamplingSettings, status: str = "streaming",
                   load: ImageLoader = image_store.load) -> Asked | None:
        """Drops the last reply and asks again with the same history (its images too); None if there is
        no user message."""
        while self.messages and self.messages[-1].role == "assistant":
            self.messages.pop()
        if not self.messages:
            return None
        return self._request_reply(system_prompt, sampling, status, load)

    def _request_reply(self, system_prompt: str, sampling: SamplingSettings, status: str,
                       load: ImageLoader) -> Asked:
        self.sampling = sampling
        reply = ChatMessage("assistant", status=status, request_id=f"chat-{new_id()[:12]}", sampling=sampling,
                            system_prompt=system_prompt)
        try:
            history = self.history(system_prompt, load)
        except ImageProblem as problem:  # an image gone from the data folder: this reply fails, naming it
            reply.status, reply.error = "error", f"not sent: {problem}"
            self.messages.append(reply)
            return None, reply
        self.messages.append(reply)
        return ChatRequest(reply.request_id, history, sampling), reply

    def streaming_message(self) -> ChatMessage | None:
        """The reply still open: streaming from the engine, or waiting for it."""
        return next((m for m in reversed(self.messages) if m.status in OPEN_STATUSES), None)

    def message(self, message_id: str) -> ChatMessage | None:
        """Looked up from the end: the message asked for is nearly always the latest reply."""
        return next((m for m in reversed(self.messages) if m.message_id == message_id), None)
