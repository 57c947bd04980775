"""A conversation as JSON (every field, with each reply's settings and vLLM's figures) and as Markdown."""
from __future__ import annotations

import json
from dataclasses import asdict

from workbench.model.conversations import Conversation


def conversation_json(conversation: Conversation) -> str:
    return json.dumps({
        "conversation_id": conversation.conversation_id, "title": conversation.title,
        "sampling": asdict(conversation.sampling) if conversation.sampling is not None else None,
        "messages": [asdict(message) for message in conversation.messages],
    }, indent=2, ensure_ascii=False)


def conversation_markdown(conversation: Conversation) -> str:
    """Each turn under a heading, each reply with its system prompt and vLLM's figures below it."""
    lines = [f"# {conversation.title}", ""]
    for message in conversation.messages:
        lines += [f"## {message.role.capitalize()}", ""]
        if message.role == "assistant" and message.system_prompt:
            lines += [f"> System prompt: {message.system_prompt}", ""]
        lines += [message.text or "_(no text)_", ""]
        figures = message.figures
        if figures is not None:
            parts = [f"{figures.prompt_tokens} prompt tokens ({figures.cached_prompt_tokens} cached)",
                     f"{figures.output_tokens} output tokens"]
            if figures.ttft_s is not None:
                parts.append(f"TTFT {figures.ttft_s * 1e3:.0f} ms")
            if figures.decode_tokens_per_s:
                parts.append(f"{figures.decode_tokens_per_s:.1f} tok/s")
            lines += [f"> {', '.join(parts)}", ""]
        if message.error:
            lines += [f"> {message.status}: {message.error}", ""]
    return "\n".join(lines)
