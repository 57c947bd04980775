"""vLLM's KV cache events as they come over ZMQ, decoded into the workbench's own values.

vLLM's publisher (``vllm.distributed.kv_events.ZmqEventPublisher``, 0.26 to 0.33) sends each batch of
events as a multipart message ``(topic, seq, payload)``: ``seq`` an 8-byte big-endian sequence number
counted from 0 by each publisher, ``payload`` the msgpack encoding of a ``KVEventBatch`` msgspec struct.
That struct has taken two shapes on the wire, and both are read here without importing vLLM:

- the batch: an array ``[ts, events, data_parallel_rank]`` (``array_like=True``; 0.26.0 and 0.32.0) or
  a map ``{"ts": ..., "events": ..., "data_parallel_rank": ...}``;
- each event: a map tagged by class name, ``{"type": "BlockStored", "block_hashes": ..., ...}`` (0.26.0
  and 0.32.0 as released), or an array with the tag first, ``["BlockStored", block_hashes, parent, ...]``
  (event structs declared ``array_like=True``), fields in the order vLLM declares them.

Block hashes are bytes (the default) or 64-bit ints (``VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

import msgspec

BlockHash = Union[bytes, int]

# Field order of vLLM's event structs, for the array form (tag first, then these). Later versions only
# append fields with defaults, so a shorter array is an older publisher, never a different meaning.
_STORED_FIELDS = ("block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium",
                  "lora_name", "extra_keys", "group_idx")
_REMOVED_FIELDS = ("block_hashes", "medium", "group_idx")
_BATCH_FIELDS = ("ts", "events", "data_parallel_rank")


class KVEventsDecodeError(ValueError):
    """A payload that is not a batch of vLLM KV cache events."""


@dataclass(frozen=True)
class BlockStored:
    """Full blocks entered the prefix cache: a chain of hashes, each block's parent the one before it
    (the first one's parent is ``parent_hash``, None at the start of a prompt)."""

    block_hashes: tuple[BlockHash, ...]
    parent_hash: BlockHash | None
    token_ids: tuple[int, ...]
    block_size: int
    medium: str | None = None
    group_idx: int | None = None
    lora_name: str | None = None


@dataclass(frozen=True)
class BlockRemoved:
    """Blocks left the prefix cache (evicted, or freed without being cached)."""

    block_hashes: tuple[BlockHash, ...]
    medium: str | None = None
    group_idx: int | None = None


@dataclass(frozen=True)
class AllBlocksCleared:
    """The whole prefix cache was reset (``/reset_prefix_cache``)."""


KVEvent = Union[BlockStored, BlockRemoved, AllBlocksCleared]


@dataclass(frozen=True)
class EventBatch:
    """One published batch: the events of one engine step on one data-parallel rank."""

    seq: int  # the publisher's sequence number; each publisher counts from 0
    ts: float  # wall clock on the server, seconds
    events: tuple[KVEvent, ...]
    data_parallel_rank: int | None


_decoder = msgspec.msgpack.Decoder()


def decode_seq(seq_bytes: bytes) -> int:
    """The sequence number frame: 8 bytes, big-endian, signed (the replay's end marker is -1)."""
    if len(seq_bytes) != 8:
        raise KVEventsDecodeError(f"a sequence number frame has 8 bytes, this one {len(seq_bytes)}")
    return int.from_bytes(seq_bytes, "big", signed=True)


def decode_batch(seq: int, payload: bytes) -> EventBatch:
    """Decodes one payload, in either wire form, into an :class:`EventBatch`."""
    try:
        raw = _decoder.decode(payload)
    except msgspec.DecodeError as error:
        raise KVEventsDecodeError(f"batch {seq} is not msgpack: {error}") from error
    fields = _as_fields(raw, _BATCH_FIELDS, "batch")
    if "ts" not in fields or not isinstance(fields.get("events"), list):
        raise KVEventsDecodeError(f"batch {seq} has no timestamp or no list of events: {raw!r:.200}")
    try:
        events = tuple(_decode_event(item) for item in fields["events"])
    except KVEventsDecodeError:
        raise
    except (KeyError, TypeError, ValueError) as error:
        raise KVEventsDecodeError(f"batch {seq} has an event vLLM would not send: {error!r}") from error
    rank = fields.get("data_parallel_rank")
    return EventBatch(seq=seq, ts=float(fields["ts"]), events=events,
                      data_parallel_rank=int(rank) if rank is not None else None)


def _as_fields(raw: Any, names: tuple[str, ...], what: str) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, list):
        return dict(zip(names, raw))
    raise KVEventsDecodeError(f"a {what} is an array or a map, not {type(raw).__name__}")


def _decode_event(raw: Any) -> KVEvent:
    if isinstance(raw, list) and raw and isinstance(raw[0], str):
        tag, body = raw[0], raw[1:]
        fields = dict(zip(_STORED_FIELDS if tag == "BlockStored" else _REMOVED_FIELDS, body))
    elif isinstance(raw, dict):
        tag, fields = raw.get("type"), raw
    else:
        raise KVEventsDecodeError(f"an event is a tagged array or a tagged map, not {raw!r:.120}")
    if tag == "BlockStored":
        return BlockStored(block_hashes=tuple(fields["block_hashes"]), parent_hash=fields.get("parent_block_hash"),
                           token_ids=tuple(fields.get("token_ids") or ()), block_size=int(fields["block_size"]),
                           medium=fields.get("medium"), group_idx=fields.get("group_idx"),
                           lora_name=fields.get("lora_name"))
    if tag == "BlockRemoved":
        return BlockRemoved(block_hashes=tuple(fields["block_hashes"]), medium=fields.get("medium"),
                            group_idx=fields.get("group_idx"))
    if tag == "AllBlocksCleared":
        return AllBlocksCleared()
    raise KVEventsDecodeError(f"unknown KV cache event type {tag!r}")


def hash_text(block_hash: BlockHash | None, digits: int = 12) -> str:
    """A block hash as people read it: the first hex digits (bytes) or the int in hex."""
    if block_hash is None:
        return "—"
    if isinstance(block_hash, bytes):
        return block_hash.hex()[:digits]
    return f"{block_hash & ((1 << 64) - 1):016x}"[:digits]
