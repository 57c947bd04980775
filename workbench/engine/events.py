"""What the engine loop reports, as immutable values: the messages that the application model applies.

They cross from the loop's thread to the GUI thread unchanged; none holds a vLLM object.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from workbench.engine.backend import EngineInfo, StreamEvent
from workbench.engine.start_phases import StartProgress


class EngineState(str, enum.Enum):
    STOPPED = "stopped"
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"  # a start that did not succeed
    DIED = "died"  # a running engine that went away


@dataclass(frozen=True)
class StateChanged:
    state: EngineState
    message: str
    start_id: int  # the StartEngine command this state belongs to (0: none yet)
    retry: tuple = ()  # a failed start: engine arguments that fix it (start_failure.Change), or ()


@dataclass(frozen=True)
class StartProgressed:
    progress: StartProgress


@dataclass(frozen=True)
class EngineReady:
    info: EngineInfo


@dataclass(frozen=True)
class EngineLogOpened:
    path: str  # the engine's own log of its latest start


@dataclass(frozen=True)
class TextFlushed:
    chunks: Mapping[str, str]  # request id -> text new since the last flush

    @staticmethod
    def of(chunks: dict[str, str]) -> "TextFlushed":
        return TextFlushed(MappingProxyType(chunks))


@dataclass(frozen=True)
class RequestsTaken:
    """The engine holds these requests now (the backend took them): what the window put off drawing
    so as to leave the CPU to the sending (a new question's view) can be drawn."""

    request_ids: tuple[str, ...]


@dataclass(frozen=True)
class RequestFinished:
    event: StreamEvent


@dataclass(frozen=True)
class RequestFailed:
    request_id: str
    message: str
