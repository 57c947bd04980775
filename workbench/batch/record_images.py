"""A record's images: where each one is given and which turn it goes with. No bytes are read here.

The forms, as the tools that write batch files and datasets give them:

- content parts of a message (OpenAI chat, ``vllm run-batch`` bodies, ms-swift's messages):
  ``{"type": "image_url", "image_url": {"url": ...}}``, the plain-string ``"image_url": "..."``,
  ``{"type": "image", "image": ...}``, and a bare ``{"type": "image"}`` that takes the next image of the
  record's image column;
- an image column beside the text (LLaMA-Factory's and ms-swift's ``images``, a table's ``image``): a
  path or URL, a list of them, or ``{"path": ..., "bytes": ...}`` as a ``datasets`` Image column writes
  it; each ``<image>`` marker in the text takes the next one. Images beyond the markers go before the
  first user turn's text, as ms-swift places them (and so do all a record's images when it has no marker).

A turn's images are rendered before its text (``Message.images``), so the markers are taken out of the text.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

from workbench.engine.backend import Message
from workbench.engine.images import ImageRef

IMAGE_MARKER = "<image>"
PART_MARK = "\ue000"  # where an image part stood in a message's text, until the images are placed
IMAGE_PART_TYPES = ("image_url", "image", "input_image")
OTHER_MEDIA_PART_TYPES = ("video", "video_url", "input_video", "audio", "audio_url", "input_audio")
IMAGE_COLUMNS = ("images", "image")
OTHER_MEDIA_COLUMNS = ("videos", "video", "audios", "audio")


class ImageFormError(ValueError):
    """A record whose images are given in a form that cannot be read (the reason; the caller knows where)."""


@dataclass(frozen=True, slots=True)
class BatchImage:
    """One image of a batch row, by reference: the bytes are read when the row is sent."""

    source: str  # as the record gives it: a path, a file:// or http(s) URL; a data: URL or embedded bytes abridged
    turn: int  # the index in the row's messages of the turn it goes with (0 for a plain prompt)
    ref: ImageRef | None = None  # checked when the file was read; None for an http(s) URL, fetched when sent
    location: str = ""  # where the bytes are read when sent: an absolute path, the URL, the data folder's copy

    @property
    def name(self) -> str:
        return self.ref.name if self.ref is not None else url_name(self.source)


def url_name(url: str) -> str:
    """What an image at a URL is called before it is fetched: the last part of its path, else its host."""
    _, _, rest = url.split("?", 1)[0].split("#", 1)[0].partition("://")
    host, _, path = rest.partition("/")
    return path.rstrip("/").rsplit("/", 1)[-1] or host or url


def part_image(part: dict, number: int):
    """The source an image part gives (a string, or bytes), or None for a bare ``{"type": "image"}``."""
    for key in ("image_url", "image", "url", "value", "path"):
        value = part.get(key)
        if value is None or key == "image" and part.get("type") != "image":
            continue
        if isinstance(value, dict):
            value = value.get("url", value.get("path", value.get("bytes")))
        if isinstance(value, str) and value.strip() or isinstance(value, bytes) and value:
            return value.strip() if isinstance(value, str) else value
        raise ImageFormError(f"message {number} has an image part whose {key!r} is not a URL or path: "
                             f"{json.dumps(value, default=str)[:60]} (write {{\"type\": \"image_url\", "
                             "\"image_url\": {\"url\": \"...\"}})")
    return None


def column_images(record: dict) -> list:
    """The record's image column as a list of sources (strings or bytes); [] where it has none."""
    for key in OTHER_MEDIA_COLUMNS:
        if record.get(key):
            raise ImageFormError(f"the record has {key!r}: the batch sends text and images only (leave the "
                                 f"record's {key} out, or run it from the chat)")
    given = [key for key in IMAGE_COLUMNS if record.get(key) not in (None, [], "")]
    if len(given) > 1:
        raise ImageFormError("the record has both \"images\" and \"image\": give its images in one of them")
    if not given:
        return []
    value = record[given[0]]
    items = value if isinstance(value, list) else [value]
    sources = []
    for number, item in enumerate(items, 1):
        if isinstance(item, dict):
            item = item.get("bytes") or item.get("path") or item.get("url")
        if not (isinstance(item, str) and item.strip() or isinstance(item, bytes) and item):
            raise ImageFormError(f"{given[0]!r} item {number} is not a path or URL: "
                                 f"{json.dumps(items[number - 1], default=str)[:60]}")
        sources.append(item.strip() if isinstance(item, str) else item)
    return sources


def place_images(messages: tuple[Message, ...], parts: list, column: list):
    """The messages without their image marks, and each image as (turn, source) in the order sent.

    ``parts``: the sources of the image parts met while reading the messages, in order (each left a
    ``PART_MARK`` in its text; None for a bare part, which takes the next image of the column);
    ``column``: the record's image column, whose images each ``<image>`` marker takes in turn. Parts of a
    turn that was cut off (the answer kept as the reference) are left out with it."""
    if not parts and not column:
        return messages, ()
    marks = re.compile(f"{re.escape(IMAGE_MARKER)}|{PART_MARK}" if column else PART_MARK)
    inline = iter(parts)
    slots = [(turn, next(inline) if mark == PART_MARK else None)
             for turn, message in enumerate(messages) for mark in marks.findall(message.content)]
    num_wanted = sum(source is None for _, source in slots)
    extra = len(column) - num_wanted
    if extra < 0:
        raise ImageFormError(f"the text has {_count(num_wanted, IMAGE_MARKER + ' marker')} but the record "
                             f"{_count(len(column), 'image')}: give one image for each {IMAGE_MARKER} (or "
                             "bare image part)")
    if column and not num_wanted and any(source is not None for source in parts):
        raise ImageFormError("the record gives images both as content parts and in an image column: give them "
                             "one way (or bare {\"type\": \"image\"} parts where the column's go)")
    taken = iter(column)
    placed = [(_first_user_turn(messages), next(taken)) for _ in range(extra)]
    placed += [(turn, source if source is not None else next(taken)) for turn, source in slots]
    placed.sort(key=lambda pair: pair[0])  # the order they are sent in: turn by turn (a stable sort)
    cleaned = tuple(Message(m.role, marks.sub("", m.content).strip()) if marks.search(m.content) else m
                    for m in messages)
    return cleaned, tuple(placed)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' if number != 1 else ''}"


def _first_user_turn(messages: tuple[Message, ...]) -> int:
    return next((turn for turn, m in enumerate(messages) if m.role == "user"), 0)


def abridged(source) -> str:
    """A source as a row keeps and shows it: a data: URL as its head and size, bytes as their size."""
    if isinstance(source, bytes):
        return f"(image bytes in the record, {len(source):,} bytes)"
    if source[:5].lower() == "data:":
        head, _, body = source.partition(",")
        return f"{head},… ({len(body):,} characters)"
    return source
