"""The request registry: every request sent to the engine, its owner and its figures. No Qt.

An owner is a conversation's message now, and a batch row once the batch pane exists; the heatmap
names a block's owners through it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Mapping

from workbench.engine.metrics import RequestFigures


@dataclass(frozen=True)
class Owner:
    kind: str  # "chat" (later "batch")
    owner_id: str  # the conversation id (later the batch run id)
    item_id: str  # the message id (later the row id)
    label: str  # what the heatmap's tooltip says: "Chat 2"


@dataclass(frozen=True)
class RequestRecord:
    request_id: str
    owner: Owner
    status: str = "running"  # "running", "done", "stopped", "error"
    figures: RequestFigures | None = None


class RequestRegistry:
    def __init__(self):
        self._records: dict[str, RequestRecord] = {}

    def add(self, request_id: str, owner: Owner) -> None:
        self._records[request_id] = RequestRecord(request_id, owner)

    def get(self, request_id: str) -> RequestRecord | None:
        return self._records.get(request_id)

    def finish(self, request_id: str, status: str, figures: RequestFigures | None = None) -> RequestRecord | None:
        record = self._records.get(request_id)
        if record is None:
            return None
        record = self._records[request_id] = replace(record, status=status, figures=figures)
        return record

    def owner_labels(self) -> Mapping[str, str]:
        """An immutable copy: request id -> owner label (for readers on other threads)."""
        return MappingProxyType({rid: r.owner.label for rid, r in self._records.items()})

    def label(self, request_id: str) -> str:
        record = self._records.get(request_id)
        return record.owner.label if record is not None else request_id

