"""vLLM's OpenAI-compatible API, asynchronously through httpx: the model list and ``/version`` (the
streamed replies are ``sse_stream``'s, through aiohttp).

Every failure is one of ``workbench.remote.errors``, each with its own message. The key goes only in
the ``Authorization`` header of the requests; nothing here logs or keeps it.
"""
from __future__ import annotations

import logging
import ssl
from dataclasses import dataclass

import httpx

from workbench.remote.errors import (
    AuthenticationFailed, CannotConnect, ConnectionLost, NoAnswer, NotAVLLMServer, ServerError, TLSFailed,
)
from workbench.remote.spec import ServerSpec

# httpx logs each request at INFO: twice a second for /metrics alone. Its warnings still show.
logging.getLogger("httpx").setLevel(logging.WARNING)

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
