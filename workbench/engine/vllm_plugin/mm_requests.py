"""Requests with images, as vLLM's client processes them; and what a vision engine takes. vLLM 0.26-0.33.

The engine session adds a request with images as vLLM's own input processor makes it: the chat template's
text and ``multi_modal_data``, processed here (``InputProcessor.process_inputs``, the model's HF processor
expanding each image's placeholder) into the ``EngineCoreRequest`` that ``LLMEngine.add_request`` takes
as it is. Reading that request gives each image's place in the prompt (``mm_features[i].mm_position``:
offset and length) and vLLM's hash of it (``identifier``), which the heatmap marks. The same call
``add_request`` makes itself, so the request costs no extra processing.

Names read here: ``LLMEngine.input_processor`` (0.32, 0.33; ``processor`` where older), its
``process_inputs(request_id, prompt, params, supported_tasks, ..., priority=)``,
``LLMEngine.get_supported_tasks()``, ``InputProcessor.renderer.render_cmpl`` with
``vllm.renderers.inputs.preprocess.parse_model_prompt`` (0.32, 0.33: its ``mm_placeholders``),
``EngineCoreRequest.mm_features`` (``MultiModalFeatureSpec``:
``modality``, ``identifier``, ``mm_position.offset`` / ``.length``), ``model_config.is_multimodal_model``,
``model_config.architectures``, ``model_config.multimodal_config.limit_per_prompt`` (0.26: a dict of
ints or of ``{"count": n}``) and ``.mm_processor_kwargs``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from workbench.engine.backend import VisionInfo
from workbench.engine.images import ImageSpan


def _input_processor(engine):
    return getattr(engine, "input_processor", None) or engine.processor


def process_request(engine, request_id: str, prompt: dict, params, priority: int = 0,
                    check_length: Callable[[int, int], None] = lambda length, image_tokens: None):
    """vLLM's processed request for ``prompt`` (``{"prompt": text, "multi_modal_data": ...}``) and where
    each image sits in it: ``(EngineCoreRequest, (ImageSpan, ...))``.

    Where the processor has a renderer (0.32, 0.33) the prompt is rendered first (the HF processor runs
    there) and ``check_length(prompt tokens, image tokens)`` may refuse it before vLLM's own length check;
    ``process_inputs`` then takes the rendered input as it is. Older versions render inside
    ``process_inputs``: its ``ValueError`` names a prompt that is too long."""
    processor = _input_processor(engine)
    renderer = getattr(processor, "renderer", None)
    parse_model_prompt = _prompt_parser()
    if renderer is not None and hasattr(renderer, "render_cmpl") and parse_model_prompt is not None:
        (prompt,) = renderer.render_cmpl([parse_model_prompt(engine.model_config, prompt)])
        placed = (prompt.get("mm_placeholders") or {}).get("image") or ()
        check_length(len(prompt.get("prompt_token_ids") or ()), sum(int(p.length) for p in placed))
    request = processor.process_inputs(request_id, prompt, params, engine.get_supported_tasks(), priority=priority)
    features = [f for f in (getattr(request, "mm_features", None) or ()) if getattr(f, "modality", "image") == "image"]
    spans = tuple(ImageSpan(index, int(f.mm_position.offset), int(f.mm_position.length), str(f.identifier or ""))
                  for index, f in enumerate(features))
    return request, spans


def _prompt_parser():
    """0.32 and 0.33's ``parse_model_prompt``; None where the version renders inside ``process_inputs``."""
    try:
        from vllm.renderers.inputs.preprocess import parse_model_prompt
    except ImportError:
        return None
    return parse_model_prompt


def is_too_long(exc: Exception) -> bool:
    """Whether vLLM refused a prompt for its length: the renderer's check of the text's tokens (0.32, 0.33:
    ``VLLMValidationError``, parameter ``input_tokens``), or ``process_inputs``'s of the whole prompt."""
    text = str(exc)
    return (getattr(exc, "parameter", None) == "input_tokens" or "maximum context length" in text
            or "maximum model length" in text)


def vision_info(engine, model_path: str) -> VisionInfo | None:
    """What the running engine takes in images; None for a text-only model."""
    model_config = engine.model_config
    if not getattr(model_config, "is_multimodal_model", False):
        return None
    mm_config = getattr(model_config, "multimodal_config", None)
    limit = _image_limit(getattr(mm_config, "limit_per_prompt", None))
    kwargs = dict(getattr(mm_config, "mm_processor_kwargs", None) or {})
    max_pixels, note = _pixels(kwargs, Path(model_path))
    architecture = (getattr(model_config, "architectures", None) or ["?"])[0]
    return VisionInfo(architecture, limit, max_pixels, note)


def _image_limit(limits) -> int:
    value = (limits or {}).get("image", 1)
    count = getattr(value, "count", None)
    if count is None and isinstance(value, dict):
        count = value.get("count")
    return int(count if count is not None else value)


def _pixels(kwargs: dict, folder: Path) -> tuple[int | None, str]:
    """The processor's pixel cap: the engine's mm_processor_kwargs first, then the model's own files."""
    saved = {}
    for name in ("preprocessor_config.json", "processor_config.json"):
        try:
            saved |= json.loads((folder / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
    saved = saved.get("image_processor", saved) if isinstance(saved.get("image_processor"), dict) else saved
    size = saved.get("size") or {}
    max_pixels = kwargs.get("max_pixels") or saved.get("max_pixels")
    if max_pixels is None and "shortest_edge" in size and "longest_edge" in size and saved.get("merge_size"):
        max_pixels = size["longest_edge"]  # Qwen2-VL's processor keeps its pixel range in "size"
    if max_pixels:
        tokens = int(max_pixels) // (saved.get("patch_size", 14) * saved.get("merge_size", 2)) ** 2
        return int(max_pixels), f"max_pixels {int(max_pixels):,}: at most {tokens:,} tokens an image"
    edge = size.get("longest_edge")
    if edge:
        return int(edge) ** 2, f"resized to a longest edge of {edge} px"
    return None, ""
