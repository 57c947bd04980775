"""The interface the panes talk to, whatever runs the model: the local engine now, a server later.

Everything that crosses it is an immutable value: requests in, stream events and KV snapshots out.
"""
from __future__ import annotations

import abc
import time
from dataclasses import dataclass
from typing import Callable

from workbench.engine.kv_snapshot import KVSnapshot
from workbench.engine.metrics import RequestFigures
from workbench.engine.sampling import SamplingSettings
from workbench.engine.start_phases import StartProgress


class PromptTooLongError(ValueError):
    """The rendered prompt does not fit max_model_len; the message says by how much and what to do."""


@dataclass(frozen=True)
class Message:
    role: str  # "system", "user" or "assistant"
    content: str


@dataclass(frozen=True)
class ChatRequest:
    request_id: str
    messages: tuple[Message, ...]
    sampling: SamplingSettings = SamplingSettings()
    prompt_token_ids: tuple[int, ...] | None = None  # benchmarks send token ids directly


@dataclass(frozen=True)
class StreamEvent:
    request_id: str
    text: str  # new text since the previous event (DELTA streaming)
    finished: bool = False
    finish_reason: str | None = None  # "stop", "length", "aborted", ...
    figures: RequestFigures | None = None  # set on the final event


@dataclass(frozen=True)
class EngineInfo:
    """What the window shows about a running engine."""

    model: str
    vllm_version: str
    device: str  # "cpu" or "cuda"
    max_model_len: int
    chat_template: str | None
    engine_pids: tuple[int, ...]


class Backend(abc.ABC):
    """What runs the model. Methods are called from one thread only: the one that steps it."""

    @abc.abstractmethod
    def start(self, report: Callable[[StartProgress], None]) -> None:
        """Starts the engine, reporting its phases; raises EngineStartError with a clear message."""

    @abc.abstractmethod
    def shutdown(self) -> None:
        """Stops the engine and returns its memory; safe to call twice or after a crash."""

    @abc.abstractmethod
    def submit(self, request: ChatRequest) -> None:
        """Queues a request; raises PromptTooLongError when the prompt does not fit."""

    @abc.abstractmethod
    def abort(self, request_id: str) -> StreamEvent | None:
        """Stops a request; returns its final event (vLLM sends none for aborts)."""

    @abc.abstractmethod
    def has_work(self) -> bool:
        """True while requests are running or waiting."""

    @abc.abstractmethod
    def step(self) -> tuple[dict[str, str], list[StreamEvent]]:
        """Runs one engine step: the new text of each request that produced some (DELTA), and a
        final event (with figures) for each request that ended."""

    @abc.abstractmethod
    def request_kv_snapshot(self, check_with_scan: bool = False) -> None:
        """Asks for the block pool's state without waiting (one request in flight at a time);
        with ``check_with_scan``, the snapshot is also compared against a full scan."""

    @abc.abstractmethod
    def poll_kv_snapshot(self) -> KVSnapshot | None:
        """The snapshot asked for, once it has arrived; None until then."""

    def kv_snapshot(self, check_with_scan: bool = False, timeout_s: float = 60.0) -> KVSnapshot:
        """Blocking convenience: ask and wait."""
        self.request_kv_snapshot(check_with_scan)
        deadline = time.monotonic() + timeout_s
        while (snapshot := self.poll_kv_snapshot()) is None:
            if time.monotonic() > deadline:
                raise TimeoutError("the engine did not answer the KV snapshot request")
            time.sleep(0.0005)
        return snapshot

    @abc.abstractmethod
    def info(self) -> EngineInfo:
        """Facts about the running engine."""

    @property
    @abc.abstractmethod
    def running(self) -> bool:
        """True while an engine is up."""
