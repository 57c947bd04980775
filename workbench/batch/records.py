"""One dataset record (a JSON object, a table row) as a batch prompt, in the formats that training and
evaluation tools write:

- ``jsonl``: ``{"prompt": ...}`` or ``{"messages": [...]}`` (OpenAI chat; ms-swift's standard format);
- ``alpaca``: ``instruction``, ``input``, ``output``, ``system``, ``history`` (ms-swift and LLaMA-Factory join
  instruction and input as ``f"{instruction}\\n{input}"``);
- ``sharegpt``: ``conversations`` of ``{"from": "human" | "gpt" | "system", "value": ...}``, or ms-swift's
  ``conversation`` of ``{"human": ..., "assistant": ...}`` pairs;
- ``swift``: ms-swift's query/response format, ``query``, ``response``, ``history`` (``[[q, r], ...]``),
  ``system``.

In each, a record may carry images: content parts, or an ``images`` column with ``<image>`` markers in the
text (:mod:`workbench.batch.record_images` reads where they are; :mod:`workbench.batch.image_check` checks
each as the file is read, keeping a reference).

A record that ends with the answer (the last assistant turn, ``output``, ``response``) is asked without it,
and the answer kept as the row's ``reference``, beside the generated one. A record's own sampling fields
(``max_tokens``, ``temperature``, ...) apply to its request, and a bad one is reported, never ignored.
Formats after ms-swift's "Custom Dataset" page (``docs/source_en/Customization/Custom-dataset.md``,
github.com/modelscope/ms-swift at 3602360a) and LLaMA-Factory's ``data/README.md`` (ff6d4d12).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from workbench.batch.image_check import ImageChecker
from workbench.batch.record_images import (
    IMAGE_PART_TYPES, OTHER_MEDIA_PART_TYPES, PART_MARK, BatchImage, ImageFormError, column_images, part_image,
    place_images,
)
from workbench.engine.backend import Message
from workbench.engine.images import ImageProblem

RECORD_FORMATS = {
    "jsonl": "Prompt or messages (OpenAI chat, ms-swift messages)",
    "alpaca": "Alpaca: instruction, input, output (Dolly's context, response)",
    "sharegpt": "ShareGPT: conversations (from / value)",
    "swift": "ms-swift query / response / history",
    "turns": "MT-Bench: turns (the first is asked)",
    "field": "Records: a prompt field you name (question, text, …)",
}
# a "field" record's prompt where none is named, in this order; its reference, the first of REFERENCE_FIELDS
LIKELY_PROMPT_FIELDS = ("question", "text", "input", "content", "problem", "instruction", "query", "prompt")
REFERENCE_FIELDS = ("answer", "answers", "response", "output", "completion", "solution", "target", "label")
SYSTEM_FIELDS = ("system_prompt", "system")  # a "field" record's system message
ROLES = ("system", "user", "assistant")
SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "system": "system",
                  "chatgpt": "assistant", "bing": "assistant", "bard": "assistant"}
TOOL_TURNS = ("function_call", "observation", "tool", "tool_call", "tool_response", "function")
SAMPLING_FIELDS = {"max_tokens": int, "max_completion_tokens": int, "max_new_tokens": int, "temperature": float,
                   "top_p": float, "top_k": int, "seed": int}


class LineError(ValueError):
    """What is wrong with one line or record (its reason; the caller knows where it is)."""


@dataclass(frozen=True, slots=True)
class BatchPrompt:
    """One prompt of the file: raw text (a completion) or chat messages (the chat template applies)."""

    line_no: int  # the line a record starts on, or a table's row number (1-based)
    prompt: str | None = None
    messages: tuple[Message, ...] | None = None
    custom_id: str | None = None
    url: str | None = None  # OpenAI batch input only
    sampling: tuple[tuple[str, float | int], ...] = ()  # the record's own settings, over the run's
    reference: str | None = None  # the record's own answer, kept beside the generated one
    images: tuple[BatchImage, ...] = ()  # by reference: each read when the row is sent, before its turn's text

    def preview(self) -> str:
        if self.prompt is not None:
            return self.prompt
        return self.messages[-1].content if self.messages else ""


def elide(text: str, limit: int) -> str:
    """``text`` on one line (a line break shown as ⏎), cut to ``limit`` characters with an ellipsis."""
    flat = text[: limit + 1].replace("\n", " ⏎ ")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def guess_record_format(record) -> str:
    """The format a record's keys say: ``openai`` for a run-batch line, else a key of RECORD_FORMATS."""
    if not isinstance(record, dict):
        return "jsonl"
    keys = record.keys()
    if {"custom_id", "body"} <= keys:
        return "openai"
    if "conversations" in keys or "conversation" in keys:
        return "sharegpt"
    if "messages" in keys or "prompt" in keys:
        return "jsonl"
    if "instruction" in keys:
        return "alpaca"
    if "query" in keys:
        return "swift"
    if "turns" in keys:
        return "turns"
    return "field" if prompt_field(record) is not None else "jsonl"


def prompt_field(record) -> str | None:
    """The field of a record that likely holds its prompt (GSM8K's "question", a corpus's "text"): the first
    of LIKELY_PROMPT_FIELDS that holds text."""
    if not isinstance(record, dict):
        return None
    return next((name for name in LIKELY_PROMPT_FIELDS if isinstance(record.get(name), str)), None)


def text_fields(record) -> list[str]:
    """A record's fields that hold text, the likely prompt's first (by its name, else the longest text): what the
    field can be chosen from."""
    if not isinstance(record, dict):
        return []
    fields = [name for name, value in record.items() if isinstance(value, str)]
    likely = prompt_field(record) or max(fields, key=lambda name: len(record[name]), default=None)
    return [likely, *(name for name in fields if name != likely)] if likely else fields


def record_prompt(fmt: str, number: int, record, checker: ImageChecker | None = None,
                  field: str | None = None) -> BatchPrompt:
    """The prompt of one record in format ``fmt``; LineError says what is wrong with it (an image that
    cannot be used too). ``checker`` checks its images (relative paths from the working folder without one).
    ``field``: the "field" format's prompt field (else the record's likely one). A record that is a string
    (a JSON array or lines of prompts) is the prompt."""
    if isinstance(record, str) and fmt in ("jsonl", "field"):
        return BatchPrompt(number, prompt=prompt_text(record))
    if not isinstance(record, dict):
        raise LineError(f"expected a JSON object {{...}} or a prompt string, got a JSON {type(record).__name__}")
    column = _image_form(column_images, record)
    parts: list = []
    messages, reference = (_named_field(record, field or prompt_field(record)) if fmt == "field"
                           else _READERS[fmt](record, parts))
    custom_id = _optional_text(record, "custom_id") if fmt == "jsonl" else None
    sampling = tuple(record_sampling(record))
    common = {"custom_id": custom_id, "sampling": sampling, "reference": reference}
    if isinstance(messages, str):
        if not column:
            return BatchPrompt(number, prompt=messages, **common)
        (message,), images = with_images(number, (Message("user", messages),), [], column, checker)
        return BatchPrompt(number, prompt=message.content, images=images, **common)
    messages, images = with_images(number, messages, parts, column, checker)
    return BatchPrompt(number, messages=messages, images=images, **common)


def with_images(number: int, messages: tuple[Message, ...], parts: list, column: list,
                checker: ImageChecker | None) -> tuple[tuple[Message, ...], tuple[BatchImage, ...]]:
    """The messages without their image marks, and their images checked (see :func:`place_images`)."""
    messages, placed = _image_form(place_images, messages, parts, column)
    if not placed:
        return messages, ()
    try:
        return messages, (checker or ImageChecker(Path.cwd())).check_all(placed, number)
    except ImageProblem as exc:
        raise LineError(str(exc)) from None


def _image_form(read, *args):
    try:
        return read(*args)
    except ImageFormError as exc:
        raise LineError(str(exc)) from None


# ------------------------------------------------------------------ each format
def _prompt_or_messages(record: dict, parts: list):
    if "prompt" in record and "messages" in record and _first_question(record["messages"]) != record["prompt"]:
        raise LineError("has both \"prompt\" and \"messages\", and the prompt is not the first user message: give "
                        "one of them")  # UltraChat's and no_robots' prompt repeats it: the messages are read
    if "messages" in record:
        return answer_split(parse_messages(record["messages"], parts))
    if "prompt" not in record:
        raise LineError(f"missing field: \"prompt\" or \"messages\"{_other_format(record, 'jsonl')}")
    reference = next((_text(record, k) for k in ("completion", "response", "output") if k in record), None)
    return prompt_text(record["prompt"]), reference


def _alpaca(record: dict, _parts: list):
    """Alpaca's instruction, input and output; Dolly's (databricks-dolly-15k) context and response in their place."""
    instruction = _text(record, "instruction", required="alpaca")
    given = _text(record, "input" if "input" in record else "context") or ""
    query = f"{instruction}\n{given}" if instruction and given else instruction or given
    if not query.strip():
        raise LineError("\"instruction\" and \"input\" are both empty")
    turns = (*_history(record), Message("user", query))
    return (*_system(record), *turns), _text(record, "output" if "output" in record else "response")


def _query_response(record: dict, _parts: list):
    query = _text(record, "query", required="swift")
    if not query.strip():
        raise LineError("\"query\" is empty")
    return (*_system(record), *_history(record), Message("user", query)), _text(record, "response")


def _turns(record: dict, _parts: list):
    """MT-Bench's ``turns``: the first is asked (each later turn answers the model's own reply, so a batch of
    single requests asks the first, as vLLM's benchmarks do); its ``reference`` answer kept, where it has one."""
    turns = record.get("turns")
    if not isinstance(turns, list) or not turns or not isinstance(turns[0], str) or not turns[0].strip():
        raise LineError("\"turns\" must be a list of the user's turns as text" + _other_format(record, "turns"))
    reference = record.get("reference")
    if isinstance(reference, list):
        reference = reference[0] if reference and isinstance(reference[0], str) else None
    return turns[0], reference if isinstance(reference, str) else None


def _first_question(messages) -> str | None:
    """The content of the first user message of a record's ``messages``, where it is text."""
    if not isinstance(messages, list):
        return None
    return next((m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "user"), None)


def _sharegpt(record: dict, parts: list):
    """ShareGPT's ``conversations`` (from / value, or role / content); ms-swift's ``conversation`` of pairs, or
    LMSYS-Chat-1M's of role / content turns."""
    turns = record.get("conversations")
    if "conversation" in record and "conversations" not in record:
        turns = record["conversation"]
        if not (isinstance(turns, list) and turns and isinstance(turns[0], dict) and "role" in turns[0]):
            return answer_split((*_system(record), *_pairs(turns, parts)))
    if not isinstance(turns, list) or not turns:
        raise LineError("\"conversations\" must be a non-empty list of {\"from\": ..., \"value\": ...}"
                        f"{_other_format(record, 'sharegpt')}")
    messages = list(_system(record))
    for number, turn in enumerate(turns, 1):
        if not isinstance(turn, dict):
            raise LineError(f"turn {number} is not an object")
        speaker = turn.get("from", turn.get("role"))
        if speaker in TOOL_TURNS:
            raise LineError(f"turn {number} is a {speaker} turn: tool calls are not supported in a batch (leave "
                            "the record out, or give it as plain turns)")
        if speaker not in SHAREGPT_ROLES:
            raise LineError(f"turn {number} is from {json.dumps(speaker)}; ShareGPT's speakers are human, gpt and "
                            "system")
        value = turn.get("value", turn.get("content"))
        messages.append(Message(SHAREGPT_ROLES[speaker], _content_text(value, number, parts)))
    return answer_split(tuple(messages))


def _pairs(value, parts: list) -> list[Message]:
    """ms-swift's ``conversation``: ``[{"human": q, "assistant": r}, ...]`` (the last answer may be missing)."""
    if not isinstance(value, list) or not value:
        raise LineError("\"conversation\" must be a non-empty list of {\"human\": ..., \"assistant\": ...}")
    messages = []
    for number, pair in enumerate(value, 1):
        if not isinstance(pair, dict) or not isinstance(pair.get("human"), str):
            raise LineError(f"turn {number} of \"conversation\" needs \"human\": text")
        messages.append(Message("user", pair["human"]))
        if pair.get("assistant") is not None:
            messages.append(Message("assistant", _content_text(pair["assistant"], number, parts)))
    return messages


def _named_field(record: dict, field: str | None) -> tuple[str | tuple[Message, ...], str | None]:
    """The "field" format: the prompt from the field named (after a system message from SYSTEM_FIELDS, where
    the record has one), the reference from the first of REFERENCE_FIELDS."""
    if field is None or field not in record:
        text = ", ".join(text_fields(record)[:8]) or "none"
        named = f"\"{field}\"" if field else "a prompt field"
        raise LineError(f"missing field: {named} (the fields that hold text: {text}); choose the prompt field "
                        "in Open prompt file…")
    value = record[field]
    if not isinstance(value, str):
        raise LineError(f"\"{field}\" must be a string, got {json.dumps(value, ensure_ascii=False)[:40]}")
    if not value.strip():
        raise LineError(f"\"{field}\" is empty")
    answer = next((record[name] for name in REFERENCE_FIELDS if name != field and record.get(name) is not None), None)
    reference = (None if answer is None else answer if isinstance(answer, str)
                 else json.dumps(answer, ensure_ascii=False))
    system = next((record[name] for name in SYSTEM_FIELDS if name != field and isinstance(record.get(name), str)
                   and record[name].strip()), None)  # OpenOrca's system_prompt
    return ((Message("system", system), Message("user", value)) if system else value), reference


_READERS = {"jsonl": _prompt_or_messages, "alpaca": _alpaca, "sharegpt": _sharegpt, "swift": _query_response,
            "turns": _turns}


# ------------------------------------------------------------------ the parts formats share
def answer_split(messages: tuple[Message, ...]) -> tuple[tuple[Message, ...], str | None]:
    """A conversation that ends with the assistant's answer: the question, and the answer as reference."""
    if len(messages) > 1 and messages[-1].role == "assistant" and any(m.role == "user" for m in messages[:-1]):
        return messages[:-1], messages[-1].content
    if not any(m.role == "user" for m in messages):
        raise LineError("the conversation has no user turn: there is nothing to ask")
    return messages, None


def parse_messages(value, parts: list | None = None) -> tuple[Message, ...]:
    """Chat messages as OpenAI writes them: a string, or parts of type text and image. Each image part's
    source is appended to ``parts`` and leaves a ``PART_MARK`` in its text (:func:`place_images` places
    them); without ``parts``, an image part is refused."""
    if not isinstance(value, list) or not value:
        raise LineError("\"messages\" must be a non-empty list of {\"role\": ..., \"content\": ...}")
    messages = []
    for number, item in enumerate(value, 1):
        if not isinstance(item, dict):
            raise LineError(f"message {number} is not an object")
        role = item.get("role")
        if role in TOOL_TURNS:
            raise LineError(f"message {number} is a {role} message: tool calls are not supported in a batch")
        if role not in ROLES:
            raise LineError(f"message {number} has role {json.dumps(role)}; the roles are {', '.join(ROLES)}")
        messages.append(Message(role, _content_text(item.get("content"), number, parts)))
    return tuple(messages)


def _content_text(content, number: int, parts: list | None = None) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        kinds = {p.get("type") for p in content}
        other = sorted(kinds & set(OTHER_MEDIA_PART_TYPES))
        if other:
            raise LineError(f"message {number} has {other[0]} parts: the batch sends text and images only "
                            "(leave them out, or run the record from the chat)")
        if kinds & set(IMAGE_PART_TYPES) and parts is None:
            raise LineError(f"message {number} has image parts where only text is read")
        if kinds <= {"text", *IMAGE_PART_TYPES}:
            return "".join(_part_text(part, number, parts) for part in content)
    raise LineError(f"message {number} has no text content (a string, or parts of type \"text\" or "
                    "\"image_url\")")


def _part_text(part: dict, number: int, parts: list | None) -> str:
    if part.get("type") == "text":
        return str(part.get("text", part.get("value", "")))
    parts.append(_image_form(part_image, part, number))
    return PART_MARK


def prompt_text(value) -> str:
    if isinstance(value, list) and len(value) == 1:
        value = value[0]  # OpenAI's completions accept a list; one prompt a line here
    if not isinstance(value, str):
        raise LineError(f"\"prompt\" must be a string, got {json.dumps(value)[:40]}")
    if not value.strip():
        raise LineError("\"prompt\" is empty")
    return value


def _optional_text(record: dict, name: str) -> str | None:
    value = record.get(name)
    if value is not None and not isinstance(value, str):
        raise LineError(f"\"{name}\" must be a string, got {json.dumps(value)[:40]}")
    return value


def _text(record: dict, name: str, required: str | None = None) -> str | None:
    if required and name not in record:
        raise LineError(f"missing field: \"{name}\"{_other_format(record, required)}")
    return _optional_text(record, name)


def _system(record: dict) -> tuple[Message, ...]:
    system = _optional_text(record, "system")
    return (Message("system", system),) if system else ()


def _history(record: dict) -> list[Message]:
    history = record.get("history") or []
    if not isinstance(history, list) or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(t, str)
                                                                                            for t in p) for p in history):
        raise LineError("\"history\" must be a list of [question, answer] pairs of text")
    return [Message(role, text) for pair in history for role, text in zip(("user", "assistant"), pair)]


def _other_format(record: dict, fmt: str) -> str:
    """A hint where the record's keys say another format than the one chosen."""
    guessed = guess_record_format(record)
    if guessed == fmt:
        keys = ", ".join(list(record)[:6])
        return f" (the record has: {keys or 'no fields'})"
    label = "OpenAI batch (vllm run-batch)" if guessed == "openai" else RECORD_FORMATS[guessed]
    return f"; the record looks like {label}: choose that format"


def record_sampling(record: dict, where: str = ""):
    """A record's own sampling settings as (name, value) pairs, each checked; ``where``: "body." for a
    run-batch line."""
    for name, kind in SAMPLING_FIELDS.items():
        value = record.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)):
            raise LineError(f"{where}{name} must be {'an integer' if kind is int else 'a number'}, got "
                            f"{json.dumps(value)}")
        if name.startswith("max_") and value < 1:
            raise LineError(f"{where}{name} must be 1 or more, got {value}")
        if name == "temperature" and value < 0:
            raise LineError(f"{where}temperature must be 0 or more, got {value}")
        if name == "top_p" and not 0 < value <= 1:
            raise LineError(f"{where}top_p must be above 0 and at most 1, got {value}")
        if name == "top_k" and value < -1:
            raise LineError(f"{where}top_k must be -1 (off) or more, got {value}")
        yield ("max_tokens" if name.startswith("max_") else name), kind(value)
