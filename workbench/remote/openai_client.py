"""vLLM's OpenAI-compatible API, asynchronously through httpx: the model list and ``/version``, and what
each streamed chat and completion request sends and counts (the streams themselves are read through
aiohttp: ``sse_stream``).

Every failure is one of ``workbench.remote.errors``, each with its own message. The key goes only in
the ``Authorization`` header of the requests; nothing here logs or keeps it.
"""
from __future__ import annotations

import logging
import ssl
import time
from dataclasses import dataclass
from typing import Callable

import httpx

from workbench.engine.backend import ChatRequest
from workbench.engine.metrics import RequestFigures, decode_tokens_per_s
from workbench.remote.errors import (
    AuthenticationFailed, CannotConnect, ConnectionLost, NoAnswer, NotAVLLMServer, ServerError, TLSFailed,
)
from workbench.remote.spec import ServerSpec

# httpx logs each request at INFO: twice a second for /metrics alone. Its warnings still show.
logging.getLogger("httpx").setLevel(logging.WARNING)

STREAM_READ_TIMEOUT_S = 600.0  # a reply may wait its turn in the server's queue for a long time


@dataclass(frozen=True)
class ServerFacts:
    """What the server says about itself when the workbench attaches."""

    models: tuple[str, ...]
    max_model_len: int
    vllm_version: str  # "" where /version does not answer


def make_client(spec: ServerSpec) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {spec.api_key}"} if spec.api_key else {}
    timeout = httpx.Timeout(spec.timeout_s, read=spec.timeout_s)
    limits = httpx.Limits(max_connections=1024, max_keepalive_connections=512)
    return httpx.AsyncClient(headers=headers, timeout=timeout, verify=spec.verify_tls, limits=limits,
                             trust_env=False)


def explain(exc: Exception, url: str, spec: ServerSpec, during_stream: bool = False) -> ServerError:
    """The workbench's message for what httpx raised."""
    if isinstance(exc, ServerError):
        return exc
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if _is_tls_failure(exc):
        return TLSFailed(url, detail)
    if during_stream and isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.ConnectError,
                                          httpx.ReadTimeout, httpx.WriteError)):
        return ConnectionLost(spec.api_root, detail)
    if isinstance(exc, (httpx.ReadTimeout, httpx.PoolTimeout)):
        return NoAnswer(url, spec.timeout_s)
    if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
        return CannotConnect(url, detail)
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
        return NotAVLLMServer(url, detail)
    return ServerError(f"The server at {url} could not be used: {detail}.")


def _is_tls_failure(exc: Exception) -> bool:
    seen = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError) or "CERTIFICATE_VERIFY_FAILED" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _check_status(response: httpx.Response, url: str) -> None:
    if response.status_code in (401, 403):
        raise AuthenticationFailed(url, response.status_code)
    if response.status_code != 200:
        raise NotAVLLMServer(url, f"{response.request.method} {response.request.url.path} gave HTTP "
                                  f"{response.status_code}")


async def read_facts(client: httpx.AsyncClient, spec: ServerSpec) -> ServerFacts:
    """``/v1/models`` (the models and their context length) and ``/version``; raises ServerError."""
    url = spec.openai_url + "/models"
    try:
        response = await client.get(url)
    except Exception as exc:
        raise explain(exc, spec.api_root, spec) from exc
    _check_status(response, spec.api_root)
    try:
        data = response.json()["data"]
        models = tuple(str(entry["id"]) for entry in data)
        max_len = int(next((e.get("max_model_len") or 0 for e in data), 0) or 0)
    except (ValueError, KeyError, TypeError) as exc:
        raise NotAVLLMServer(spec.api_root, "GET /v1/models gave no OpenAI model list") from exc
    if not models:
        raise NotAVLLMServer(spec.api_root, "it serves no model")
    version = ""
    try:
        answer = await client.get(spec.api_root + "/version")
        if answer.status_code == 200:
            version = str(answer.json().get("version", ""))
    except Exception:  # /version is a vLLM extra: an OpenAI server without it still works
        pass
    return ServerFacts(models, max_len, version)


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
