"""A reply streamed from vLLM's OpenAI-compatible API: what a request sends, the reply read through
aiohttp (a vLLM dependency), and what the client counts of it.

Each generated token arrives as one server-sent event, so this runs for every token of every stream:
aiohttp's HTTP parser is in C, and reading the same stream cost 20 µs of CPU an event against httpx's
41 µs (``docs/benchmarks.md``, "A server: the workbench attached"). The rest of the server's API (the
model list, ``/metrics``) stays on httpx (``openai_client``). Every failure becomes one of
``workbench.remote.errors``; the API key goes only in the ``Authorization`` header.
"""
from __future__ import annotations

import asyncio
import json
import ssl
import time
from dataclasses import dataclass
from typing import AsyncIterator, Callable

import aiohttp

from workbench.engine.backend import ChatRequest
from workbench.engine.metrics import RequestFigures, decode_tokens_per_s
from workbench.remote.errors import (
    AuthenticationFailed, CannotConnect, ConnectionLost, NoAnswer, NotAVLLMServer, ServerError, TLSFailed,
)
from workbench.remote.spec import ServerSpec

STREAM_READ_TIMEOUT_S = 600.0  # a reply may wait its turn in the server's queue for a long time


def request_body(request: ChatRequest, model: str, send_priority: bool) -> tuple[str, dict]:
    """The endpoint path and JSON body for one request, streaming with usage at the end."""
    s = request.sampling
    body: dict = {"model": model, "stream": True, "stream_options": {"include_usage": True},
                  "temperature": s.temperature, "top_p": s.top_p, "max_tokens": s.max_tokens,
                  "ignore_eos": s.ignore_eos}
    if s.top_k > 0:
        body["top_k"] = s.top_k
    if s.seed is not None:
        body["seed"] = s.seed
    if send_priority and request.priority:
        body["priority"] = request.priority
    if request.prompt_token_ids is not None:
        return "/completions", {**body, "prompt": list(request.prompt_token_ids)}
    if request.prompt is not None:
        return "/completions", {**body, "prompt": request.prompt}
    body["messages"] = [{"role": m.role, "content": m.content} for m in request.messages]
    if request.chat_template:
        body["chat_template"] = request.chat_template
    return "/chat/completions", body


@dataclass
class StreamTally:
    """One streaming request's client-side times and the server's usage at the end."""

    submitted: float
    first: float = 0.0
    last: float = 0.0
    num_chunks: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int | None = None  # only where the server reports prompt_tokens_details
    finish_reason: str | None = None

    def figures(self) -> RequestFigures:
        """Figures on the client's clock; queue time and (unless reported) cached tokens not available."""
        output = self.output_tokens or self.num_chunks
        return RequestFigures(
            prompt_tokens=self.prompt_tokens, cached_prompt_tokens=self.cached_tokens, output_tokens=output,
            ttft_s=self.first - self.submitted if self.first else None,
            decode_tokens_per_s=decode_tokens_per_s(output, self.first, self.last) if self.first else None,
            source="client", queue_s=None, e2e_s=time.monotonic() - self.submitted)


def take_chunk(payload: dict, tally: StreamTally, on_text: Callable[[str], None]) -> None:
    if "error" in payload and not payload.get("choices"):
        error = payload["error"]
        raise ServerError(f"The server stopped the reply: {error.get('message', error) if isinstance(error, dict) else error}")
    for choice in payload.get("choices") or ():
        text = (choice.get("delta") or {}).get("content") if "delta" in choice else choice.get("text")
        if text:
            now = time.monotonic()
            tally.first = tally.first or now
            tally.last = now
            tally.num_chunks += 1
            on_text(text)
        if choice.get("finish_reason"):
            tally.finish_reason = choice["finish_reason"]
    usage = payload.get("usage")
    if usage:
        tally.prompt_tokens = int(usage.get("prompt_tokens") or 0)
        tally.output_tokens = int(usage.get("completion_tokens") or 0)
        details = usage.get("prompt_tokens_details") or {}
        if details.get("cached_tokens") is not None:
            tally.cached_tokens = int(details["cached_tokens"])


def open_stream_session(spec: ServerSpec) -> aiohttp.ClientSession:
    """The session the streams share; made on the I/O loop (aiohttp binds it to the running loop)."""
    headers = {"Authorization": f"Bearer {spec.api_key}"} if spec.api_key else {}
    connector = aiohttp.TCPConnector(limit=1024, ssl=None if spec.verify_tls else False)
    return aiohttp.ClientSession(headers=headers, connector=connector, trust_env=False)


async def stream_request(session: aiohttp.ClientSession, spec: ServerSpec, request: ChatRequest, model: str,
                         on_text: Callable[[str], None], send_priority: bool = False) -> StreamTally:
    """Streams one request; ``on_text`` gets each new piece of text. Raises ServerError."""
    path, body = request_body(request, model, send_priority)
    tally = StreamTally(time.monotonic())
    timeout = aiohttp.ClientTimeout(total=None, connect=spec.timeout_s, sock_connect=spec.timeout_s,
                                    sock_read=STREAM_READ_TIMEOUT_S)
    answered = False
    try:
        async with session.post(spec.openai_url + path, json=body, timeout=timeout) as response:
            answered = True
            if response.status != 200:
                raise refusal(response.status, await response.text(errors="replace"), spec)
            async for payload in events(response):
                take_chunk(payload, tally, on_text)
    except ServerError:
        raise
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        raise explain_stream(exc, spec, answered) from exc
    return tally


def refusal(status: int, text: str, spec: ServerSpec) -> ServerError:
    if status in (401, 403):
        return AuthenticationFailed(spec.api_root, status)
    try:
        message = (json.loads(text).get("error") or {}).get("message") or text
    except (ValueError, AttributeError):
        message = text
    return ServerError(f"The server refused the request (HTTP {status}): {str(message).strip()[:500]}")


async def events(response: aiohttp.ClientResponse) -> AsyncIterator[dict]:
    """The JSON payloads of a server-sent event stream, up to ``[DONE]``."""
    pending = b""
    async for chunk in response.content.iter_any():
        lines = (pending + chunk).split(b"\n") if pending else chunk.split(b"\n")
        pending = lines.pop()
        for line in lines:
            if line.startswith(b"data:"):
                data = line[5:].strip()
                if data == b"[DONE]":
                    return
                yield _payload(data, response)
    if pending.startswith(b"data:") and pending[5:].strip() not in (b"", b"[DONE]"):  # a last line, unended
        yield _payload(pending[5:].strip(), response)


def _payload(data: bytes, response: aiohttp.ClientResponse) -> dict:
    try:
        return json.loads(data)
    except ValueError as exc:
        text = data[:80].decode("utf-8", "replace")
        raise NotAVLLMServer(str(response.url), f"a stream line is not JSON: {text!r}") from exc


def explain_stream(exc: Exception, spec: ServerSpec, answered: bool) -> ServerError:
    """The workbench's message for what aiohttp raised, before the server answered or during the reply."""
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if isinstance(exc, (aiohttp.ClientConnectorCertificateError, aiohttp.ClientSSLError, ssl.SSLError)) \
            or "CERTIFICATE_VERIFY_FAILED" in detail:
        return TLSFailed(spec.api_root, detail)
    if isinstance(exc, aiohttp.ClientConnectorError):
        return CannotConnect(spec.api_root, detail)
    if isinstance(exc, (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError, aiohttp.ClientOSError,
                        ConnectionError)):
        return ConnectionLost(spec.api_root, detail)
    if isinstance(exc, asyncio.TimeoutError):
        return ConnectionLost(spec.api_root, detail) if answered else NoAnswer(spec.api_root, STREAM_READ_TIMEOUT_S)
    if isinstance(exc, aiohttp.ClientResponseError):
        return NotAVLLMServer(spec.api_root, detail)
    return ServerError(f"The server at {spec.api_root} could not be used: {detail}.")
