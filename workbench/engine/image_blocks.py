"""Which KV blocks hold an image's tokens, for the heatmap's marks and hover. No Qt.

A request's images sit where :class:`~workbench.engine.images.ImageSpan` says in its prompt; the blocks
holding them are its block table at ``span.blocks(block_size)``. :class:`ImageBlocks` works them out once
per snapshot, and only for the requests that sent images (a table is a snapshot's shared array: one that
did not change is not looked at again), so a pool of 640,000 blocks costs what its few image requests cost.

When a request finishes its table leaves the snapshot, but its blocks stay in the prefix cache, where a
later request with the same image can reuse them: those are still marked while they are cached and have
not changed since the table was last seen (a block that is evicted and filled again changes).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Callable, Mapping

import numpy as np

from workbench.engine.heatmap_image import block_cells
from workbench.engine.images import ImageSpan
from workbench.engine.kv_snapshot import BLOCK_STATE_CACHED, CHUNK_BLOCKS, KVSnapshot

IMAGE_MARK_COLOUR = (20, 20, 20)  # the hatch over blocks holding image tokens: dark on every state's colour
MAX_FINISHED = 512  # finished requests whose cached image blocks are still marked; older ones are let go
_NO_IDS = np.zeros(0, np.int64)


@dataclass(frozen=True)
class _RequestImages:
    """One request's image blocks: ``block_ids[i]`` holds tokens of ``spans[span_of[i]]``."""

    table: np.ndarray  # the block table they were read from (the snapshot's own array)
    spans: tuple[ImageSpan, ...]
    block_ids: np.ndarray
    span_of: np.ndarray
    gone_at: int = 0  # the snapshot version from which its table was no longer seen (0: live)
    reused_from: Mapping[int, str] = field(default_factory=dict)  # block id -> the finished request it was cached by


@dataclass(frozen=True)
class ImageAt:
    """One image's tokens in a block: whose, which image, and where the block came from."""

    request_id: str
    span: ImageSpan
    live: bool  # the request still runs (its table is in the snapshot)
    reused_from: str = ""  # the finished request whose cached block this one took: a prefix-cache hit


def _request_images(table: np.ndarray, spans: tuple[ImageSpan, ...], block_size: int) -> _RequestImages:
    ids, span_of = [], []
    for number, span in enumerate(spans):
        indexes = span.blocks(block_size)
        blocks = table[indexes.start:min(indexes.stop, len(table))]  # a table still filling may be shorter
        ids.append(np.asarray(blocks, np.int64))
        span_of.append(np.full(len(blocks), number, np.int64))
    return _RequestImages(table, spans, np.concatenate(ids) if ids else _NO_IDS,
                          np.concatenate(span_of) if span_of else _NO_IDS)


def _gather(snapshot: KVSnapshot, name: str, block_ids: np.ndarray) -> np.ndarray:
    """One array's values at ``block_ids``, read from the chunks that hold them (the whole array is
    never joined for a few blocks)."""
    values = np.zeros(len(block_ids), snapshot.chunks[name][0].dtype if snapshot.chunks[name] else np.int32)
    chunk_of = block_ids // CHUNK_BLOCKS
    for chunk in np.unique(chunk_of):
        where = chunk_of == chunk
        values[where] = snapshot.chunks[name][int(chunk)][block_ids[where] - int(chunk) * CHUNK_BLOCKS]
    return values


class ImageBlocks:
    """The image blocks of the latest snapshot: :attr:`block_ids` to mark, :meth:`describe` to hover."""

    def __init__(self, max_finished: int = MAX_FINISHED):
        self.max_finished = max_finished
        self.block_size = 0
        self._live: dict[str, _RequestImages] = {}
        self._finished: OrderedDict[str, _RequestImages] = OrderedDict()  # oldest first
        self._finished_joined: tuple[np.ndarray, np.ndarray] | None = None  # their block ids and gone_at, joined
        self.block_ids = _NO_IDS  # every marked block id, sorted, once each

    def clear(self) -> None:
        self.__init__(self.max_finished)

    def update(self, snapshot: KVSnapshot) -> bool:
        """Takes the image requests' blocks from ``snapshot``; True where the marked blocks changed. A
        snapshot where no image request came, went or grew costs a look-up a request and one gather."""
        if snapshot.block_size != self.block_size:
            self.clear()
            self.block_size = snapshot.block_size
        live, changed = {}, False
        for request_id, spans in snapshot.image_spans.items():
            table = snapshot.tables.get(request_id)
            if table is None:
                continue
            known = self._live.get(request_id)
            if known is None or known.table is not table or known.spans is not spans:
                if self._finished.pop(request_id, None) is not None:  # preempted, then scheduled again
                    self._finished_joined = None
                images, changed = _request_images(table, spans, snapshot.block_size), True
                # a new request's prefix-cache hits: blocks a finished request left cached (seen before pruning)
                reused = known.reused_from if known is not None else self._cached_by_finished(images.block_ids)
                known = replace(images, reused_from=reused) if reused else images
            live[request_id] = known
        for request_id, gone in self._live.items():
            if request_id not in live:
                self._finished[request_id] = _RequestImages(gone.table, gone.spans, gone.block_ids, gone.span_of,
                                                            gone_at=snapshot.version)
                changed, self._finished_joined = True, None
        self._live = live
        if not (self._keep_cached(snapshot) or changed):
            return False
        marked = [r.block_ids for r in (*live.values(), *self._finished.values()) if len(r.block_ids)]
        block_ids = np.unique(np.concatenate(marked)) if marked else _NO_IDS
        changed = not np.array_equal(block_ids, self.block_ids)
        self.block_ids = block_ids
        return changed

    def _keep_cached(self, snapshot: KVSnapshot) -> bool:
        """A finished request keeps the blocks still cached and unchanged since its table was seen (read
        for all finished requests at once: one gather, not one a request); True where one lost any."""
        changed = False
        while len(self._finished) > self.max_finished:
            self._finished.popitem(last=False)
            changed, self._finished_joined = True, None
        if not self._finished:
            return changed
        ids, gone_at, _ = self._joined()
        in_pool = ids < snapshot.num_blocks
        keep = np.zeros(len(ids), np.bool_)
        keep[in_pool] = ((_gather(snapshot, "states", ids[in_pool]) == BLOCK_STATE_CACHED)
                         & (_gather(snapshot, "changed_at", ids[in_pool]) <= gone_at[in_pool]))
        if keep.all():
            return changed
        finished = list(self._finished.items())
        ends = np.cumsum([len(gone.block_ids) for _, gone in finished])[:-1]
        for (request_id, gone), kept in zip(finished, np.split(keep, ends)):
            if not kept.any():
                del self._finished[request_id]
            elif not kept.all():
                self._finished[request_id] = _RequestImages(gone.table, gone.spans, gone.block_ids[kept],
                                                            gone.span_of[kept], gone.gone_at)
        self._finished_joined = None
        return True

    def _joined(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The finished requests' block ids, each one's ``gone_at`` and its request's place in ``_finished``."""
        if self._finished_joined is None:
            finished = list(self._finished.values())
            self._finished_joined = (
                np.concatenate([gone.block_ids for gone in finished]),
                np.concatenate([np.full(len(gone.block_ids), gone.gone_at) for gone in finished]),
                np.concatenate([np.full(len(gone.block_ids), place) for place, gone in enumerate(finished)]))
        return self._finished_joined

    def _cached_by_finished(self, block_ids: np.ndarray) -> dict[int, str]:
        """Which of ``block_ids`` a finished request left in the prefix cache: block id -> that request."""
        if not self._finished or not len(block_ids):
            return {}
        ids, _, place = self._joined()
        hit = np.isin(ids, block_ids)
        if not hit.any():
            return {}
        names = list(self._finished)
        return {int(block): names[int(where)] for block, where in zip(ids[hit], place[hit])}

    def images_at(self, block_id: int) -> list[ImageAt]:
        """Each image whose tokens ``block_id`` holds."""
        found = []
        for live, requests in ((True, self._live), (False, self._finished)):
            for request_id, images in requests.items():
                for index in np.flatnonzero(images.block_ids == block_id):
                    found.append(ImageAt(request_id, images.spans[int(images.span_of[index])], live,
                                         images.reused_from.get(block_id, "")))
        return found

    def describe(self, snapshot: KVSnapshot, blocks: range, owner_name: Callable[[str], str],
                 image_names: Callable[[str], tuple[str, ...]]) -> str:
        """The hover's lines about image tokens in ``blocks`` ("" where they hold none): for one block,
        each image ("Chat 3 · cat.png, tokens 12–31 of the prompt, shared with Chat 2"); for a binned
        cell, how many of its blocks hold image tokens and whose."""
        if not len(self.block_ids) or not len(blocks):
            return ""
        if len(blocks) > 1:
            return self._describe_binned(blocks, owner_name)
        block_id = blocks[0]
        owners = {owner_name(r) for r in snapshot.owners_of(block_id)}
        lines = []
        for image in self.images_at(block_id):
            line = _image_line(image, owner_name, image_names, owners)
            if line not in lines:
                lines.append(line)
        return "image tokens:\n" + "\n".join(lines) if lines else ""

    def _describe_binned(self, blocks: range, owner_name: Callable[[str], str]) -> str:
        inside = self.block_ids[(self.block_ids >= blocks.start) & (self.block_ids < blocks.stop)]
        if not len(inside):
            return ""
        labels = sorted({owner_name(image.request_id) for block_id in inside.tolist()
                         for image in self.images_at(block_id)})
        return f"image tokens in {len(inside)} of its blocks: {', '.join(labels)}"


def _image_line(image: ImageAt, owner_name: Callable[[str], str], image_names: Callable[[str], tuple[str, ...]],
                owners: set[str]) -> str:
    """"Chat 3 · cat.png, tokens 12–31 of the prompt", then who else holds the block or where it came from."""
    span, label = image.span, owner_name(image.request_id)
    names = image_names(image.request_id)
    name = names[span.index] if span.index < len(names) else f"image {span.index + 1}"
    line = f"{label} · {name}, tokens {span.offset}–{span.offset + span.length - 1} of the prompt"
    others = sorted(owners - {label})
    if others:
        return f"{line}, shared with {', '.join(others)}"
    if not image.live:
        return f"{line} (finished; cached for a request with the same image)"
    if image.reused_from:
        earlier = owner_name(image.reused_from)
        return f"{line}, reused from the prefix cache ({'an earlier request' if earlier == label else earlier})"
    return line


def hatch_lines(grid: tuple[int, int, int], block_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The marks' hatch as line segments (x, y pairs, for a path drawn with ``connect="pairs"``): three
    rising diagonals across each cell of the grid ``grid_shape`` gave that holds one of ``block_ids``."""
    rows, columns = block_cells(grid, block_ids)
    row, column = rows.astype(np.float64), columns.astype(np.float64)
    # per cell: (0, ½)→(½, 0), (0, 1)→(1, 0), (½, 1)→(1, ½), in cell units from its top-left corner
    x0, y0 = np.array([0.0, 0.0, 0.5]), np.array([0.5, 1.0, 1.0])
    x1, y1 = np.array([0.5, 1.0, 1.0]), np.array([0.0, 0.0, 0.5])
    x = np.stack([column[:, None] + x0, column[:, None] + x1], axis=-1).ravel()
    y = np.stack([row[:, None] + y0, row[:, None] + y1], axis=-1).ravel()
    return x, y
