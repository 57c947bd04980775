"""Commands to the engine loop: small frozen values put on its queue from any thread."""
from __future__ import annotations

from dataclasses import dataclass

from workbench.engine.backend import Backend, ChatRequest
from workbench.engine.spec import EngineConfig


@dataclass(frozen=True)
class StartEngine:
    config: EngineConfig
    start_id: int = 0  # echoed in the states the loop reports for this start


@dataclass(frozen=True)
class StopEngine:
    pass


@dataclass(frozen=True)
class Submit:
    request: ChatRequest


@dataclass(frozen=True)
class SubmitAll:
    """Requests sent together (a batch's top-up, a benchmark's streams): the loop hands them all to the
    engine before its next step, as plain vLLM's ``add_request`` calls before a ``step()`` are."""

    requests: tuple[ChatRequest, ...]


@dataclass(frozen=True)
class Abort:
    request_id: str


@dataclass(frozen=True)
class Shutdown:
    pass


@dataclass(frozen=True)
class AdoptEngine:
    """Drive an engine that is already running and belongs to someone else (a benchmark shares one
    engine between its paths). The loop reports it ready under ``start_id``, as after a start, and
    never shuts it down: StopEngine, Shutdown or the next start release it instead. The one command
    that carries an object rather than a value: from here on only the loop's thread touches it."""

    backend: Backend
    start_id: int = 0


@dataclass(frozen=True)
class ReleaseEngine:
    """Stop driving the adopted engine and leave it running for its owner, with none of the loop's
    requests left in it (open ones are aborted); the loop reports STOPPED. An engine the loop started
    itself is left as it is."""


@dataclass(frozen=True)
class SubmitScheduled:
    """Requests the loop holds and hands to the engine when due: each at its offset in seconds from when the
    loop takes this command (open loop: a workload's arrival times, kept by the loop's own clock so that the
    window's event loop does not shift them), or, with ``concurrency``, the next one as soon as fewer than
    that many of them are in the engine (closed loop; ``offsets_s`` is then ignored)."""

    requests: tuple[ChatRequest, ...]
    offsets_s: tuple[float, ...] = ()
    concurrency: int | None = None
