"""Why a search cannot start: each message names the cause and the fix."""
from __future__ import annotations


class TuneRefused(ValueError):
    """A search that cannot run as asked; ``messages`` name each cause and its fix. Nothing the user
    set is changed."""

    def __init__(self, messages: list[str] | tuple[str, ...]):
        self.messages = tuple(messages)
        super().__init__("\n".join(self.messages))
