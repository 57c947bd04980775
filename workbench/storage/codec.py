"""Values to JSON and back: settings, figures, prompts. Plain functions over the frozen dataclasses."""
from __future__ import annotations

import json
from dataclasses import asdict, fields
from functools import cache

from workbench.batch.formats import BatchPrompt
from workbench.batch.record_images import BatchImage
from workbench.batch.run import RunSettings
from workbench.engine.backend import Message
from workbench.engine.images import ImageRef
from workbench.engine.metrics import RequestFigures
from workbench.engine.sampling import SamplingSettings


def to_json(value) -> str | None:
    """A dataclass (or None) as JSON; tuples become lists."""
    return None if value is None else json.dumps(asdict(value), separators=(",", ":"))


@cache
def _field_names(cls) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


def _known(cls, data: dict) -> dict:
    """Only the fields ``cls`` has: a field a later version added is left out, not an error."""
    names = _field_names(cls)
    return {k: v for k, v in data.items() if k in names}


def figures_from_json(text: str | None) -> RequestFigures | None:
    return None if text is None else RequestFigures(**_known(RequestFigures, json.loads(text)))


def sampling_from_json(text: str | None) -> SamplingSettings | None:
    return None if text is None else SamplingSettings(**_known(SamplingSettings, json.loads(text)))


def prompt_from_json(text: str) -> BatchPrompt:
    data = _known(BatchPrompt, json.loads(text))
    if data.get("messages") is not None:
        data["messages"] = tuple(Message(m["role"], m["content"]) for m in data["messages"])  # images: data["images"]
    data["sampling"] = tuple(tuple(pair) for pair in data.get("sampling", ()))
    data["images"] = tuple(batch_image_from_dict(image) for image in data.get("images", ()))
    return BatchPrompt(**data)


def batch_image_from_dict(data: dict) -> BatchImage:
    data = _known(BatchImage, data)
    ref = data.get("ref")
    data["ref"] = None if ref is None else ImageRef(**_known(ImageRef, ref))
    return BatchImage(**data)


def run_settings_from_json(text: str) -> RunSettings:
    data = _known(RunSettings, json.loads(text))
    data["sampling"] = SamplingSettings(**_known(SamplingSettings, data.get("sampling", {})))
    return RunSettings(**data)
