"""Writing a batch's results: JSONL, CSV, and the OpenAI batch output that ``vllm run-batch`` writes.
A dataset record's own answer (``reference``) goes beside the generated text in JSONL and CSV, and so do a
row's images, by reference (the source as the record gave it, the turn, name, format, size and SHA-256; a
``data:`` URL's image as its copy in the data folder); the OpenAI output stays exactly vLLM's.

Each writer is a generator that yields the number of rows written so far (every ``EXPORT_CHUNK``
rows), so a window can show a progress bar and stay responsive. The file appears under its name
only once complete: a stopped or failed export leaves nothing half-written.

The OpenAI batch output follows vLLM 0.32's ``run_batch`` (``BatchRequestOutput``): one line per
request with ``id``, ``custom_id``, ``response`` (``status_code``, ``request_id``, ``body``: a
``chat.completion`` or ``text_completion``) and ``error``; a request that did not complete has
status 400, no body, and its error. (vLLM 0.32's run-batch runs ``/v1/chat/completions`` only; a
``/v1/completions`` line gets the same envelope around vLLM's ``CompletionResponse``.)
"""
from __future__ import annotations

import csv
import json
import os
import time
import uuid
from pathlib import Path
from typing import Iterator

from workbench.batch.csv_rows import WRITE_ENCODING
from workbench.batch.formats import CHAT_URL, BatchPrompt
from workbench.batch.record_images import BatchImage
from workbench.batch.results import COUNT_COLUMNS, DONE, TIME_COLUMNS, BatchResults

EXPORT_FORMATS = {"jsonl": "JSONL (.jsonl)", "csv": "CSV (.csv)", "openai": "OpenAI batch output (.jsonl)"}
EXPORT_CHUNK = 1000
CSV_COLUMNS = ("line", "custom_id", "status", "finish_reason", *COUNT_COLUMNS, *TIME_COLUMNS, "prompt", "images",
               "text", "reference", "error")


def random_uuid() -> str:
    """As vLLM's ``random_uuid``: 16 hex digits."""
    return uuid.uuid4().hex[:16]


def row_record(results: BatchResults, row: int) -> dict:
    """One row as the JSONL export writes it: its input, status, figures and output."""
    prompt = results.prompts[row]
    record: dict = {"line": prompt.line_no, "custom_id": prompt.custom_id, "status": results.status_name(row)}
    if prompt.messages is not None:
        record["messages"] = [{"role": m.role, "content": m.content} for m in prompt.messages]
    else:
        record["prompt"] = prompt.prompt
    if prompt.images:
        record["images"] = [image_record(image) for image in prompt.images]
    record["finish_reason"] = results.finish_reason(row) or None
    for name in (*COUNT_COLUMNS, *TIME_COLUMNS):
        record[name] = results.value(name, row)
    record["text"] = results.texts[row]
    if prompt.reference is not None:  # the dataset's own answer, to compare the generated one with
        record["reference"] = prompt.reference
    record["error"] = results.errors.get(row)
    return record


def image_record(image: BatchImage) -> dict:
    """One image of a row as the exports keep it: where it came from and what it was, not its bytes."""
    record = {"source": image.source, "turn": image.turn, "name": image.name}
    if image.ref is not None:
        ref = image.ref
        record.update(mime=ref.mime, width=ref.width, height=ref.height, num_bytes=ref.num_bytes, sha256=ref.sha256)
    if image.location and image.location != image.source:
        record["path"] = image.location  # the file read (a relative path resolved, a data: URL's copy)
    return record


def export_rows(results: BatchResults, path: str | Path, fmt: str, model: str = "") -> Iterator[int]:
    """Writes ``results`` to ``path`` in ``fmt`` (a key of EXPORT_FORMATS); yields rows written."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}")
    path = Path(path)
    partial = path.with_name(path.name + ".part")
    done = False
    try:
        with open(partial, "w", encoding=WRITE_ENCODING if fmt == "csv" else "utf-8", newline="") as stream:
            if fmt == "csv":
                yield from _write_csv(results, stream)
            else:
                line = _openai_line if fmt == "openai" else _jsonl_line
                yield from _write_lines(results, stream, lambda row: line(results, row, model))
        os.replace(partial, path)
        done = True
    finally:
        if not done:
            partial.unlink(missing_ok=True)
    yield results.num_rows


def _write_lines(results: BatchResults, stream, line) -> Iterator[int]:
    for row in range(results.num_rows):
        stream.write(json.dumps(line(row), ensure_ascii=False))
        stream.write("\n")
        if (row + 1) % EXPORT_CHUNK == 0:
            yield row + 1


def _jsonl_line(results: BatchResults, row: int, model: str) -> dict:
    return row_record(results, row)


def _write_csv(results: BatchResults, stream) -> Iterator[int]:
    writer = csv.writer(stream)
    writer.writerow(CSV_COLUMNS)
    for row in range(results.num_rows):
        record = row_record(results, row)
        prompt = record.pop("prompt", None)
        if prompt is None:
            prompt = results.prompts[row].preview()
        record["prompt"] = prompt
        if "images" in record:
            record["images"] = json.dumps([image["path"] if "path" in image else image["source"]
                                           for image in record["images"]], ensure_ascii=False)
        writer.writerow(["" if record.get(name) is None else record[name] for name in CSV_COLUMNS])
        if (row + 1) % EXPORT_CHUNK == 0:
            yield row + 1


# ------------------------------------------------------------------ vllm run-batch's output
def _openai_line(results: BatchResults, row: int, model: str) -> dict:
    prompt = results.prompts[row]
    custom_id = prompt.custom_id or f"line-{prompt.line_no}"
    request_id = f"vllm-batch-{random_uuid()}"
    if results.status(row) != DONE:
        error = results.errors.get(row) or f"the request did not complete: {results.status_name(row)}"
        return {"id": f"vllm-{random_uuid()}", "custom_id": custom_id,
                "response": {"status_code": 400, "request_id": request_id, "body": None}, "error": error}
    body = _completion_body(results, row, prompt, model)
    return {"id": f"vllm-{random_uuid()}", "custom_id": custom_id,
            "response": {"status_code": 200, "request_id": request_id, "body": body}, "error": None}


def _usage(results: BatchResults, row: int) -> dict:
    prompt_tokens = results.value("prompt_tokens", row) or 0
    completion_tokens = results.value("output_tokens", row) or 0
    return {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + completion_tokens,
            "completion_tokens": completion_tokens,
            "prompt_tokens_details": {"cached_tokens": results.value("cached_prompt_tokens", row),
                                      "created_cache_tokens": None, "multimodal_tokens": None},
            "completion_tokens_details": None}


def _completion_body(results: BatchResults, row: int, prompt: BatchPrompt, model: str) -> dict:
    text, finish_reason = results.texts[row], results.finish_reason(row) or None
    common = {"created": int(time.time()), "model": model}
    tail = {"service_tier": None, "system_fingerprint": None, "usage": _usage(results, row)}
    if prompt.messages is not None or prompt.url == CHAT_URL:
        message = {"role": "assistant", "content": text, "refusal": None, "annotations": None, "audio": None,
                   "function_call": None, "reasoning": None}
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason,
                  "stop_reason": None, "token_ids": None, "routed_experts": None}
        return {"id": f"chatcmpl-{random_uuid()}", "object": "chat.completion", **common, "choices": [choice],
                **tail, "prompt_logprobs": None, "prompt_token_ids": None, "prompt_text": None,
                "kv_transfer_params": None, "ec_transfer_params": None, "metrics": None}
    choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason, "stop_reason": None,
              "token_ids": None, "prompt_logprobs": None, "prompt_token_ids": None, "routed_experts": None}
    return {"id": f"cmpl-{random_uuid()}", "object": "text_completion", **common, "choices": [choice], **tail,
            "kv_transfer_params": None, "ec_transfer_params": None, "metrics": None}
