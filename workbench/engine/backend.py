"""The interface the panes talk to, whatever runs the model: the local engine, or a vLLM server.

Everything that crosses it is an immutable value: requests in, stream events and KV snapshots out.
"""
from __future__ import annotations

import abc
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol

from workbench.engine.images import ImageInput
from workbench.engine.kv_snapshot import KVSnapshot
from workbench.engine.metrics import RequestFigures
from workbench.engine.sampling import SamplingSettings
from workbench.engine.start_phases import StartProgress
from workbench.engine.stats import StepStats


class PromptTooLongError(ValueError):
    """The rendered prompt does not fit max_model_len; the message says by how much and what to do."""


class ImagesRefusedError(ValueError):
    """A request's images cannot go to this engine (a text-only model, more than its limit, a picture that
    cannot be decoded); the message names the cause and the fix. The request fails; its text is kept."""


class EngineGoneError(RuntimeError):
    """A request could not be queued because the engine has died: the loop reports the engine's death
    (how it ended), not a refusal of this one request."""


@dataclass(frozen=True)
class Message:
    role: str  # "system", "user" or "assistant"
    content: str
    # Images of the turn, with their bytes; rendered before the text, as vLLM places a string-content
    # template's image placeholders. Empty for a text-only turn.
    images: tuple[ImageInput, ...] = ()


@dataclass(frozen=True)
class ChatRequest:
    """One request to the engine. The prompt is, by precedence: ``prompt_token_ids`` (benchmarks),
    ``prompt`` (raw text, tokenized as is: a completion), or ``messages`` rendered through
    ``chat_template`` (None: the model's own)."""

    request_id: str
    messages: tuple[Message, ...]
    sampling: SamplingSettings = SamplingSettings()
    prompt_token_ids: tuple[int, ...] | None = None  # benchmarks send token ids directly
    prompt: str | None = None
    chat_template: str | None = None
    priority: int = 0  # vLLM's: lower runs first, where the engine schedules by priority (chat 0, batch 1)
    record_gaps: bool = False  # its final event carries every gap between its tokens (Tune's trials)


@dataclass(frozen=True)
class StreamEvent:
    request_id: str
    text: str  # new text since the previous event (DELTA streaming)
    finished: bool = False
    finish_reason: str | None = None  # "stop", "length", "aborted", ...
    figures: RequestFigures | None = None  # set on the final event
    # With ``ChatRequest.record_gaps``, on the final event: the time between each token and the one before
    # it, in seconds, on the engine loop's clock (the tokens a step brings share its gap, as
    # ``metrics.timings_from_arrivals`` counts them); the first token's arrival is TTFT, not a gap.
    gaps_s: tuple[float, ...] = ()


@dataclass(frozen=True)
class WorkerMemory:
    """One engine host's memory as vLLM itself reports it (``vllm_plugin.memory_figures``)."""

    pid: int
    device: str  # "cuda:0", "cpu"
    device_index: int | None
    weights_bytes: int
    weights_source: str  # "model_memory_usage" (measured by vLLM while loading) or "parameters"
    kv_cache_bytes: int


@dataclass(frozen=True)
class VisionInfo:
    """What a vision-language engine takes: set on ``EngineInfo.vision``; None there for a text-only model."""

    architecture: str  # vLLM's name for the model's class, "Idefics3ForConditionalGeneration"
    max_images_per_prompt: int  # vLLM's limit_mm_per_prompt for images
    max_pixels: int | None = None  # beyond it the model's processor shrinks an image (None: not known)
    processor_note: str = ""  # how the processor sizes images, in a line: "longest edge 112 px, 20 tokens an image"


@dataclass(frozen=True)
class EngineInfo:
    """What the window shows about a running engine."""

    model: str
    vllm_version: str
    device: str  # "cpu" or "cuda"
    max_model_len: int
    chat_template: str | None
    engine_pids: tuple[int, ...]
    workers: tuple[WorkerMemory, ...] = ()  # empty where the backend cannot tell
    num_kv_blocks: int | None = None  # vLLM's count of the pool (None: not known)
    # The engine arguments as vLLM resolved them (engine-argument name -> plain value), beside the
    # configuration asked for: budgets, block size and chunked prefill that vLLM chose. Read only.
    resolved: dict = field(default_factory=dict)
    vision: VisionInfo | None = None  # None: a text-only model (images are refused, naming the fix)


@dataclass(frozen=True)
class Capabilities:
    """What a backend can show, declared up front so panes offer only what it has."""

    kv_blocks: str  # "physical": the block pool itself, live; "prefix-events": vLLM's KV events; "none"
    memory: str  # "nvml" (GPU memory per process), "host", "remote" (a server's own figures), "none"
    stats: frozenset[str]  # per-request figures it gives: "ttft", "decode_rate", "cached_tokens", "queue_time"
    # Live series for the plots, pushed as StepStats: "stat-logger" (vLLM's own, each step, in the
    # client), "prometheus" (a server's /metrics, polled), or "none".
    live_stats: str = "none"


class BackendEvents(Protocol):
    """Where a backend pushes what happens, on the thread that drives it (the engine loop)."""

    def texts_arrived(self, texts: dict[str, str]) -> None:
        """New text per request since the last push (one dict for many requests)."""

    def request_finished(self, event: StreamEvent) -> None:
        """A request ended (stop, length, aborted), with its figures."""

    def request_failed(self, request_id: str, message: str) -> None:
        """A request could not run; the message says why and what to do."""

    def stats_recorded(self, step: StepStats) -> None:
        """The engine's own statistics of one step (where ``capabilities.live_stats`` is not "none")."""


class KVProbe(Protocol):
    """The block pool, read without blocking the thread that drives the engine."""

    def request_snapshot(self, check_with_scan: bool = False) -> None:
        """Asks for the pool's state (one request in flight at a time); with ``check_with_scan``,
        the snapshot is also compared against a full scan."""

    def poll_snapshot(self) -> KVSnapshot | None:
        """The snapshot asked for, once it has arrived; None until then."""


def wait_for_snapshot(probe: KVProbe, check_with_scan: bool = False, timeout_s: float = 60.0) -> KVSnapshot:
    """Blocking convenience for tests and benchmarks: ask and wait."""
    probe.request_snapshot(check_with_scan)
    deadline = time.monotonic() + timeout_s
    while (snapshot := probe.poll_snapshot()) is None:
        if time.monotonic() > deadline:
            raise TimeoutError("the engine did not answer the KV snapshot request")
        time.sleep(0.0005)
    return snapshot


class Backend(abc.ABC):
    """What runs the model: a local engine (``EngineSession``) or a server (``RemoteBackend``). Its
    methods are called from one thread only, the one that drives it; what happens is pushed to the
    :class:`BackendEvents` given to :meth:`connect`. Nothing here assumes where vLLM's client runs."""

    capabilities: Capabilities

    def connect(self, events: BackendEvents) -> None:
        """Where to push text, finished and failed requests from now on."""
        self.events = events

    @abc.abstractmethod
    def start(self, report: Callable[[StartProgress], None]) -> None:
        """Starts the engine, reporting its phases; raises EngineStartError with a clear message."""

    @abc.abstractmethod
    def shutdown(self) -> None:
        """Stops the engine and returns its memory; safe to call twice or after a crash."""

    @abc.abstractmethod
    def submit(self, request: ChatRequest) -> None:
        """Queues a request; raises PromptTooLongError when the prompt does not fit, EngineGoneError
        when the engine has died."""

    @abc.abstractmethod
    def abort(self, request_id: str) -> None:
        """Stops a request and pushes its final event (finish reason "aborted")."""

    @abc.abstractmethod
    def has_work(self) -> bool:
        """True while requests are running or waiting."""

    @abc.abstractmethod
    def advance(self) -> None:
        """Does the next piece of work (a local engine's step, a server's stream reads) and pushes
        what came of it; raises when the engine has gone."""

    def kv_probe(self) -> KVProbe | None:
        """The block pool's reader, where ``capabilities.kv_blocks`` is "physical"."""
        return None

    @abc.abstractmethod
    def info(self) -> EngineInfo:
        """Facts about the running engine."""

    def describe_end(self) -> str:
        """How the engine ended, in words, after it went away."""
        return "it is gone"

    @property
    @abc.abstractmethod
    def running(self) -> bool:
        """True while an engine is up."""
