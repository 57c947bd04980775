"""Commands to the engine loop: small frozen values put on its queue from any thread."""
from __future__ import annotations

from dataclasses import dataclass

from workbench.engine.backend import ChatRequest
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
class Abort:
    request_id: str


@dataclass(frozen=True)
class Shutdown:
    pass
