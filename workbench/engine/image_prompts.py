"""A chat request with images as vLLM takes it: the chat template's text and the decoded pictures. No vLLM.

Each message's images go before its text as ``{"type": "image"}`` parts, the form the models' own chat
templates place their image placeholders for (and vLLM's, for a template that takes string content); the
tokenizer renders the template to text, and vLLM's processor expands each placeholder into the image's
tokens. Before anything is sent, a request the engine cannot take is refused with its cause and its fix:
images for a text-only model, more images than ``limit_mm_per_prompt``, a picture that does not decode.
"""
from __future__ import annotations

from pathlib import Path

from workbench.engine.backend import ChatRequest, ImagesRefusedError
from workbench.engine.images import ImageProblem, to_rgb


def image_prompt(session, request: ChatRequest) -> dict:
    """``{"prompt": text, "multi_modal_data": {"image": [pictures]}}`` for ``session``'s engine."""
    images = [image for message in request.messages for image in message.images]
    vision = session.vision
    if vision is None:
        model = Path(session.model_path).name or session.model_path
        raise ImagesRefusedError(
            f"{model} reads text only, so its engine cannot take the {len(images)} image(s) of this question. "
            "Images need a vision model: pick demo-vl or a Qwen2.5-VL model (Model > Choose model…), or remove "
            "the images and ask again. Your question is kept.")
    if len(images) > vision.max_images_per_prompt:
        raise ImagesRefusedError(
            f"This request holds {len(images)} images (the conversation's, earliest first); the engine takes at "
            f"most {vision.max_images_per_prompt} a prompt (vLLM's limit_mm_per_prompt). Raise "
            "limit_mm_per_prompt in the preset (the multimodal preset takes 5), start a new chat, or send fewer.")
    return {"prompt": chat_text(session, request), "multi_modal_data": {"image": [_decoded(i) for i in images]}}


def chat_text(session, request: ChatRequest) -> str:
    if session.tokenizer is None:
        raise ImagesRefusedError("This engine runs without a tokenizer, so images cannot be placed in a prompt.")
    messages = [{"role": m.role, "content": [*({"type": "image"} for _ in m.images), {"type": "text", "text": m.content}]}
                if m.images else {"role": m.role, "content": m.content} for m in request.messages]
    template = request.chat_template or session.chat_template()
    if not template:
        raise ImagesRefusedError("This model has no chat template, so its image placeholders cannot be placed: "
                                 "choose a template file in the chat's Settings, or a model that ships one.")
    return session.tokenizer.apply_chat_template(messages, chat_template=template, add_generation_prompt=True,
                                                 tokenize=False)


def _decoded(image):
    try:
        return to_rgb(image)
    except (OSError, ValueError, ImageProblem) as exc:
        raise ImagesRefusedError(f"{image.ref.name} could not be decoded ({exc}): attach it again, or another "
                                 "copy of it.") from exc
