"""The engine as the window knows it: state, message, start progress, facts, log. No Qt."""
from __future__ import annotations

from dataclasses import dataclass

from workbench.engine.backend import EngineInfo
from workbench.engine.events import EngineState
from workbench.engine.start_phases import StartProgress


@dataclass(frozen=True)
class EngineStatus:
    state: EngineState = EngineState.STOPPED
    message: str = "Engine not started."
    start_id: int = 0  # the latest start command that the loop has reported on
    progress: StartProgress | None = None  # while starting
    info: EngineInfo | None = None  # while ready
    log_path: str = ""  # the engine's own log of its latest start
    retry: tuple = ()  # after a failed start: the engine arguments that fix it, as (name, value) pairs

    @property
    def ready(self) -> bool:
        return self.state is EngineState.READY

    def settled(self, start_id: int) -> bool:
        """True once the start ``start_id`` has ended, ready or not."""
        return self.start_id >= start_id and self.state is not EngineState.STARTING


SERVER_TEMPLATE = ("The server renders chat prompts with its own chat template (the model's, or the one "
                   "it was started with, --chat-template).")
NO_TEMPLATE = "This model has no chat template: prompts are sent as a plain 'User: … Assistant:' transcript."


def chat_template_text(info: EngineInfo) -> str:
    """What the chat pane shows as the template of the engine that is ready: the model's own, the
    note that a server renders with its own, or that the model has none."""
    if info.device == "server":
        return SERVER_TEMPLATE
    return info.chat_template or NO_TEMPLATE


def chat_template_name(info: EngineInfo | None) -> str:
    """A few words for the chat summary line: whose template the prompts are rendered with."""
    if info is None:
        return "template not read yet"
    if info.device == "server":
        return "server's template"
    if not info.chat_template:
        return "no template"
    return f"{model_short_name(info.model)} template"


def model_short_name(model: str) -> str:
    """A model's path or Hub id, its last part: ``/models/demo`` -> ``demo``, ``Qwen/Qwen3-0.6B`` -> ``Qwen3-0.6B``."""
    return model.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1] or model
