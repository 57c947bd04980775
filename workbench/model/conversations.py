"""Conversations and their messages, with stable ids (UUIDs) ready to be stored. Plain data, no Qt.

Nothing a user typed is lost: a failed reply keeps its error beside the user's message.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from workbench.engine.backend import ChatRequest, Message, SamplingSettings
from workbench.engine.metrics import RequestFigures


def new_id() -> str:
    return uuid.uuid4().hex


@dataclass
class ChatMessage:
    """One turn of a conversation: the user's text, or a reply as it streams."""

    role: str  # "user" or "assistant"
    text: str = ""
    status: str = "done"  # "streaming", "done", "stopped", "error"
    error: str = ""
    figures: RequestFigures | None = None
    request_id: str = ""
    message_id: str = field(default_factory=new_id)
    sampling: SamplingSettings | None = None  # a reply's: what it was asked with
    system_prompt: str = ""  # a reply's: the system prompt it was asked with


@dataclass
class Conversation:
    title: str
    messages: list[ChatMessage] = field(default_factory=list)
    conversation_id: str = field(default_factory=new_id)
    sampling: SamplingSettings = SamplingSettings()  # its own settings: seeded by the preset, then the user's

    def history(self, system_prompt: str) -> tuple[Message, ...]:
        """The messages sent to the model: system prompt, then completed turns (errors left out)."""
        sent = [Message("system", system_prompt)] if system_prompt.strip() else []
        for message in self.messages:
            if message.role == "user" or (message.status in ("done", "stopped") and message.text):
                sent.append(Message(message.role, message.text))
        return tuple(sent)

    def ask(self, text: str, system_prompt: str, sampling: SamplingSettings) -> tuple[ChatRequest, ChatMessage]:
        """Adds the user's message and an empty streaming reply; returns the request to send."""
        self.messages.append(ChatMessage("user", text))
        return self._request_reply(system_prompt, sampling)

    def regenerate(self, system_prompt: str,
                   sampling: SamplingSettings) -> tuple[ChatRequest, ChatMessage] | None:
        """Drops the last reply and asks again with the same history; None if there is no user message."""
        while self.messages and self.messages[-1].role == "assistant":
            self.messages.pop()
        if not self.messages:
            return None
        return self._request_reply(system_prompt, sampling)

    def _request_reply(self, system_prompt: str, sampling: SamplingSettings) -> tuple[ChatRequest, ChatMessage]:
        self.sampling = sampling
        history = self.history(system_prompt)
        reply = ChatMessage("assistant", status="streaming", request_id=f"chat-{new_id()[:12]}", sampling=sampling,
                            system_prompt=system_prompt)
        self.messages.append(reply)
        return ChatRequest(reply.request_id, history, sampling), reply

    def streaming_message(self) -> ChatMessage | None:
        return next((m for m in reversed(self.messages) if m.status == "streaming"), None)

    def message(self, message_id: str) -> ChatMessage | None:
        """Looked up from the end: the message asked for is nearly always the latest reply."""
        return next((m for m in reversed(self.messages) if m.message_id == message_id), None)
