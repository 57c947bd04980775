"""What the storage thread is told to write: immutable records, made on the GUI thread from the
model, written on the storage thread. Each says what changed, never how to write it.
"""
from __future__ import annotations

from dataclasses import dataclass

from workbench.batch.formats import BatchPrompt
from workbench.batch.run import RunSettings
from workbench.engine.backend import EngineInfo
from workbench.engine.images import ImageRef
from workbench.engine.metrics import RequestFigures
from workbench.engine.sampling import SamplingSettings
from workbench.engine.spec import EngineConfig


@dataclass(frozen=True)
class ConversationSaved:
    conversation_id: str
    title: str
    position: int
    sampling: SamplingSettings | None = None  # the conversation's own settings
    system_prompt: str = ""  # its own system prompt
    number: int = 0  # "Chat 7": never given again
    title_source: str = "number"  # "number", "question" or "user"


@dataclass(frozen=True)
class DraftSaved:
    """What was typed and attached in a conversation and not sent (nothing: ``""`` and no images)."""

    conversation_id: str
    text: str
    images: tuple[ImageRef, ...] = ()


@dataclass(frozen=True)
class MessageSaved:
    """A message whole: a new one, or one whose status, error or figures changed."""

    conversation_id: str
    message_id: str
    position: int
    role: str
    text: str
    status: str
    error: str
    request_id: str
    sampling: SamplingSettings | None
    system_prompt: str
    figures: RequestFigures | None
    run_key: str = ""  # the engine run open when it was written ("": keep the stored one)
    images: tuple[ImageRef, ...] = ()  # a user message's images, in order (written once: they never change)


@dataclass(frozen=True)
class MessageTextSaved:
    """The text of a streaming reply so far (the whole of it: a lost record loses nothing later)."""

    message_id: str
    text: str


@dataclass(frozen=True)
class MessagesKept:
    """The messages a conversation holds now: any other stored for it is gone (Regenerate)."""

    conversation_id: str
    message_ids: tuple[str, ...]


@dataclass(frozen=True)
class ConversationDeleted:
    conversation_id: str


@dataclass(frozen=True)
class AllConversationsDeleted:
    pass


@dataclass(frozen=True)
class BatchRunSaved:
    run_id: str
    source: tuple[str, str]  # the prompt file's path and format
    settings: RunSettings
    prompts: tuple[BatchPrompt, ...]


@dataclass(frozen=True)
class BatchRowSaved:
    run_id: str
    row: int
    status: int
    finish_reason: str
    text: str
    error: str
    figures: RequestFigures | None
    run_key: str = ""  # the engine run that ran it
    finished_s: float | None = None


@dataclass(frozen=True)
class BatchRunDeleted:
    run_id: str


@dataclass(frozen=True)
class EngineRunStarted:
    run_key: str
    start_id: int
    config: EngineConfig
    started_s: float
    session_id: str | None = None


@dataclass(frozen=True)
class EngineRunReady:
    run_key: str
    info: EngineInfo
    ready_s: float


@dataclass(frozen=True)
class EngineRunPlanned:
    """The capacity planner's KV blocks for the run (the preset panel's estimate, once vLLM's count is in)."""

    run_key: str
    planned_kv_blocks: int


@dataclass(frozen=True)
class EngineRunStopped:
    run_key: str
    stopped_s: float
    message: str


@dataclass(frozen=True)
class SessionStarted:
    """One run of the app began; ``facts``: versions, GPUs and host (JSON-ready values)."""

    session_id: str
    started_s: float
    facts: dict


@dataclass(frozen=True)
class SessionEnded:
    session_id: str
    ended_s: float


@dataclass(frozen=True)
class SeriesPointsSaved:
    """Points of the plots' series of one engine run: ``points`` rows of ``columns`` ("t" first, time.time())."""

    run_key: str
    columns: tuple[str, ...]
    points: bytes  # float64, row-major
    num_points: int
    first_s: float


@dataclass(frozen=True)
class Flush:
    """Commit now and set ``done`` (a ``threading.Event``) once it is on disk."""

    done: object
