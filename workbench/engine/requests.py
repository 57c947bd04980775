"""The request registry: every request sent to the engine, its owner and its figures. No Qt.

It sits in the engine layer, below both the application model and batch runs, which keep their owners in
one registry: it needs only the engine's request ids and figures (``metrics.RequestFigures``).

An owner is a conversation's message or a batch row; the heatmap names a block's owners through it.
A batch row's record leaves when its request ends (the batch's results keep its figures).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Mapping

from workbench.engine.metrics import RequestFigures


@dataclass(frozen=True)
class Owner:
    kind: str  # "chat" or "batch"
    owner_id: str  # the conversation id, or the batch run id
    item_id: str  # the message id, or the row
    label: str  # what the heatmap's tooltip says: "Chat 2", "Batch row 17 (line 18)"
    # The names of the request's images in the order they are sent (every image of the history, earliest
    # first): ``ImageSpan.index`` points here, so the heatmap's hover can name an image.
    image_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class RequestRecord:
    request_id: str
    owner: Owner
    status: str = "running"  # "running", "done", "stopped", "error"
    figures: RequestFigures | None = None


# Owners with images kept after their records leave (a finished batch row's): the heatmap's hover still names
# the image of a block the prefix cache keeps. Bounded, oldest out first: a name costs little, a 100,000-row
# run's every row would not.
GONE_WITH_IMAGES = 4096


class RequestRegistry:
    def __init__(self):
        self._records: dict[str, RequestRecord] = {}
        self._gone: OrderedDict[str, Owner] = OrderedDict()  # request id -> its owner, for images' names

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

    def __len__(self) -> int:
        return len(self._records)

    def discard(self, request_id: str) -> None:
        record = self._records.pop(request_id, None)
        if record is not None and record.owner.image_names:
            self._gone[request_id] = record.owner
            if len(self._gone) > GONE_WITH_IMAGES:
                self._gone.popitem(last=False)

    def owner_labels(self) -> Mapping[str, str]:
        """An immutable copy: request id -> owner label (for readers on other threads)."""
        return MappingProxyType({rid: r.owner.label for rid, r in self._records.items()})

    def label(self, request_id: str) -> str:
        owner = self._owner(request_id)
        return owner.label if owner is not None else request_id

    def image_names(self, request_id: str) -> tuple[str, ...]:
        """The names of the request's images in the order sent (``ImageSpan.index`` points here); () for a
        request without images, or one whose record left long ago (see :data:`GONE_WITH_IMAGES`)."""
        owner = self._owner(request_id)
        return owner.image_names if owner is not None else ()

    def _owner(self, request_id: str) -> Owner | None:
        record = self._records.get(request_id)
        return record.owner if record is not None else self._gone.get(request_id)

