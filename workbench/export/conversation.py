"""A conversation as JSON (every field, with each reply's settings and vLLM's figures) and as Markdown.

Its images are copied beside the file, into ``<name>_images/`` (one file per content, named by its
hash, as the data folder keeps them), and referenced from both forms by that relative path; an image
no longer in the data folder is named as missing rather than failing the export.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path

from workbench.engine import image_store
from workbench.engine.images import ImageRef
from workbench.model.conversations import Conversation


def image_file(ref: ImageRef, folder_name: str) -> str:
    """Where an exported image lies, relative to the exported file (forward slashes, as Markdown links are)."""
    return f"{folder_name}/{ref.sha256[:16]}{ref.suffix}"


def images_folder_name(path: Path) -> str:
    return f"{path.stem}_images"


def conversation_json(conversation: Conversation, images_folder: str = "images") -> str:
    """Every field; each image also with ``file``, its path relative to the JSON file."""
    messages = []
    for message in conversation.messages:
        data = asdict(message)
        data["images"] = [{**asdict(ref), "file": image_file(ref, images_folder)} for ref in message.images]
        messages.append(data)
    return json.dumps({
        "conversation_id": conversation.conversation_id, "title": conversation.title,
        "sampling": asdict(conversation.sampling) if conversation.sampling is not None else None,
        "messages": messages,
    }, indent=2, ensure_ascii=False)


def conversation_markdown(conversation: Conversation, images_folder: str = "images") -> str:
    """Each turn under a heading, its images first, each reply with its system prompt and vLLM's figures
    below it."""
    lines = [f"# {conversation.title}", ""]
    for message in conversation.messages:
        lines += [f"## {message.role.capitalize()}", ""]
        if message.role == "assistant" and message.system_prompt:
            lines += [f"> System prompt: {message.system_prompt}", ""]
        for ref in message.images:
            lines += [f"![{_escaped(ref.name)}]({image_file(ref, images_folder)} \"{_escaped(ref.describe())}\")", ""]
        lines += [message.text or "_(no text)_", ""]
        lines += _figures_lines(message.figures)
        if message.error:
            lines += [f"> {message.status}: {message.error}", ""]
    return "\n".join(lines)


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("]", "\\]").replace('"', "'")


def _figures_lines(figures) -> list[str]:
    if figures is None:
        return []
    parts = [f"{figures.prompt_tokens} prompt tokens ({figures.cached_prompt_tokens} cached)",
             f"{figures.output_tokens} output tokens"]
    if figures.num_image_tokens:
        parts.insert(1, f"{figures.num_image_tokens} image tokens")
    if figures.ttft_s is not None:
        parts.append(f"TTFT {figures.ttft_s * 1e3:.0f} ms")
    if figures.decode_tokens_per_s:
        parts.append(f"{figures.decode_tokens_per_s:.1f} tok/s")
    return [f"> {', '.join(parts)}", ""]


def copy_images(refs, target: Path, images_dir: Path | None = None) -> list[ImageRef]:
    """Copies each image of ``refs`` from the store (``images_dir``; None: the data folder's) into
    ``target`` under the name :func:`image_file` gives it; returns those no longer in the store."""
    missing = []
    for ref in dict.fromkeys(refs):  # the same image twice is copied once
        destination = target.parent / image_file(ref, target.name)
        try:
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(image_store.path_of(ref, images_dir), destination)
        except FileNotFoundError:
            missing.append(ref)
    return missing


def export_conversation(conversation: Conversation, path: Path, images_dir: Path | None = None) -> list[str]:
    """JSON for a .json name, Markdown otherwise, with the images copied into ``<name>_images/`` beside it.
    Returns the images that could not be copied (named, with the fix); raises ``OSError`` when a file
    cannot be written."""
    folder = images_folder_name(path)
    refs = [ref for message in conversation.messages for ref in message.images]
    missing = copy_images(refs, path.with_name(folder), images_dir) if refs else []
    text = (conversation_json(conversation, folder) if path.suffix.lower() == ".json"
            else conversation_markdown(conversation, folder))
    path.write_text(text, encoding="utf-8")
    return [f"{ref.name}: no longer in the data folder ({image_store.path_of(ref, images_dir)}); attach it "
            "again to keep it" for ref in missing]
