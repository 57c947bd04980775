"""Conversations as the chat pane keeps them: plain data, no Qt, nothing lost on errors."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from workbench.engine.backend import ChatRequest, Message, SamplingSettings
from workbench.engine.metrics import RequestFigures

_request_numbers = itertools.count(1)


@dataclass
class Turn:
    role: str  # "user" or "assistant"
    text: str = ""
    status: str = "done"  # "streaming", "done", "stopped", "error"
    error: str = ""
    figures: RequestFigures | None = None
    request_id: str = ""


@dataclass
class Conversation:
    conversation_id: int
    title: str
    turns: list[Turn] = field(default_factory=list)

    def history(self, system_prompt: str) -> tuple[Message, ...]:
        """The messages sent to the model: system prompt, then completed turns (errors left out)."""
        messages = [Message("system", system_prompt)] if system_prompt.strip() else []
        for turn in self.turns:
            if turn.role == "user" or (turn.status in ("done", "stopped") and turn.text):
                messages.append(Message(turn.role, turn.text))
        return tuple(messages)

    def ask(self, text: str, system_prompt: str, sampling: SamplingSettings) -> tuple[ChatRequest, Turn]:
        """Adds the user's turn and an empty streaming reply; returns the request to send."""
        self.turns.append(Turn("user", text))
        return self._request_reply(system_prompt, sampling)

    def regenerate(self, system_prompt: str, sampling: SamplingSettings) -> tuple[ChatRequest, Turn] | None:
        """Drops the last reply and asks again with the same history; None if there is no user turn."""
        while self.turns and self.turns[-1].role == "assistant":
            self.turns.pop()
        if not self.turns:
            return None
        return self._request_reply(system_prompt, sampling)

    def _request_reply(self, system_prompt: str, sampling: SamplingSettings) -> tuple[ChatRequest, Turn]:
        history = self.history(system_prompt)
        request_id = f"chat{self.conversation_id}-{next(_request_numbers)}"
        reply = Turn("assistant", status="streaming", request_id=request_id)
        self.turns.append(reply)
        return ChatRequest(request_id, history, sampling), reply

    def streaming_turn(self) -> Turn | None:
        return next((t for t in reversed(self.turns) if t.status == "streaming"), None)
