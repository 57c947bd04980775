"""A preset's image settings checked before anything starts: ``limit_mm_per_prompt``'s counts,
``mm_processor_kwargs``' pixel range, and whether the model reads images at all.

Each function returns what is wrong (naming the value, the cause and the fix), or None.
"""
from __future__ import annotations

import difflib
from pathlib import Path

from workbench.presets.model_facts import ModelFacts

MEDIA_OPTIONS = {"image": ("width", "height"), "video": ("num_frames", "width", "height"), "audio": ("length",)}
SMALLEST_PIXELS = 28 * 28  # one image token of Qwen2-VL: smart_resize never goes below one 28 x 28 square
VISION_MODELS = "demo-vl, or a Qwen2.5-VL, Qwen2-VL or Idefics3 model"


def limit_problem(limits: dict) -> str | None:
    """vLLM's limit_mm_per_prompt: each medium's count (``{ image = 5 }``), or a table with its count and
    the size vLLM profiles with (``{ image = { count = 5, width = 1024, height = 1024 } }``)."""
    example = "e.g. { image = 5 } (0 turns a medium off)"
    for medium, limit in limits.items():
        near = difflib.get_close_matches(medium, list(MEDIA_OPTIONS), n=1, cutoff=0.7)
        if medium not in MEDIA_OPTIONS and near:
            return f"'{medium}' is not a medium vLLM counts; did you mean '{near[0]}'? {example}"
        if isinstance(limit, dict):
            problem = _options_problem(medium, limit)
            if problem:
                return f"{problem}; {example}, or {{ {medium} = {{ count = 5 }} }}"
        elif isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            return f"{medium} = {limit!r}: the images (or other media) a prompt may hold, a whole number 0 or more; " \
                   f"{example}"
    return None


def _options_problem(medium: str, options: dict) -> str | None:
    allowed = ("count",) + MEDIA_OPTIONS.get(medium, ())
    for name, number in options.items():
        if name not in allowed:
            return f"{medium}.{name} is not one of vLLM's {medium} options ({', '.join(allowed)})"
        low = 0 if name == "count" else 1
        if isinstance(number, bool) or not isinstance(number, int) or number < low:
            return f"{medium}.{name} = {number!r}: a whole number {low} or more"
    return None


def processor_kwargs_problem(kwargs: dict) -> str | None:
    """mm_processor_kwargs, as far as the pixel range Qwen2-VL's processor reads goes (the other keys are
    the model's processor's own)."""
    pixels = {name: kwargs[name] for name in ("min_pixels", "max_pixels") if name in kwargs}
    for name, number in pixels.items():
        if isinstance(number, bool) or not isinstance(number, int) or number < SMALLEST_PIXELS:
            return f"{name} = {number!r}: a whole number of pixels, at least {SMALLEST_PIXELS} (one 28 x 28 image " \
                   f"token); e.g. max_pixels = 1003520 (1280 tokens an image)"
    if len(pixels) == 2 and pixels["min_pixels"] > pixels["max_pixels"]:
        return f"min_pixels {pixels['min_pixels']} is above max_pixels {pixels['max_pixels']}: the processor would " \
               "have no size to give an image; lower min_pixels or raise max_pixels"
    return None


def value_problem(key: str, value) -> str | None:
    """What is wrong with one dict-valued image setting (its type is checked already)."""
    if key == "limit_mm_per_prompt":
        return limit_problem(value)
    if key == "mm_processor_kwargs":
        return processor_kwargs_problem(value)
    return None


def text_only_reason(model: ModelFacts, multimodal: frozenset[str] | None) -> str | None:
    """Why ``model`` reads no images (None: it does, or that cannot be told without vLLM's registry,
    ``multimodal`` None)."""
    if model.vision_config or multimodal is None or model.reads_images(multimodal):
        return None
    name = Path(model.path).name or model.path
    if model.audio_config:
        return f"{name} reads no images: its config.json has an audio_config and no vision_config"
    architectures = ", ".join(model.architectures) or "its architecture"
    return f"{name} reads text only: its config.json has no vision_config, and vLLM's registry does not list " \
           f"{architectures} as multimodal"


def vision_model_problem(preset: str, model: ModelFacts | None, multimodal: frozenset[str] | None) -> str | None:
    """The preset is for a vision-language model and ``model`` is not one."""
    reason = text_only_reason(model, multimodal) if model is not None else None
    if reason is None:
        return None
    return f"The {preset} preset needs a vision-language model, and {reason}. Not applied: choose a vision " \
           f"model first (Model > Choose model…: {VISION_MODELS}), or another preset for this one."
