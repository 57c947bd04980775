"""Where a server is, how to reach it, and (for "Serve") what to start: immutable values.

The API key lives only in memory: it is left out of ``repr``, of :meth:`ServerSpec.public` (what the
recent-servers list, logs and the database see) and of every export.
"""
from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from workbench.engine.spec import EngineConfig


@dataclass(frozen=True)
class ServeOptions:
    """What "Serve" starts: vLLM's API server on ``config`` (the current preset), on loopback ports."""

    config: EngineConfig
    port: int
    kv_events_port: int
    kv_replay_port: int
    host: str = "127.0.0.1"

    def kv_events_config(self) -> str:
        """The ``--kv-events-config`` JSON: vLLM's ZMQ publisher and its replay endpoint on loopback."""
        return json.dumps({"enable_kv_cache_events": True, "publisher": "zmq",
                           "endpoint": f"tcp://127.0.0.1:{self.kv_events_port}",
                           "replay_endpoint": f"tcp://127.0.0.1:{self.kv_replay_port}"})


@dataclass(frozen=True)
class KVEventsEndpoint:
    """One rank's KV cache events: the ZMQ publisher and, where known, its replay endpoint."""

    publisher: str  # "tcp://127.0.0.1:5557"
    replay: str | None = None
    rank: int = 0
    # True: the workbench listens on ``publisher`` and the server connects to it. vLLM's publisher binds
    # only a wildcard address ("tcp://*:5557") and connects to any other, so a served server's events
    # on "tcp://127.0.0.1:PORT" stay on loopback with the workbench's end bound there.
    listen: bool = False


@dataclass(frozen=True)
class ServerSpec:
    """A server to attach to. ``model``: the model id to use ("" for the first of ``/v1/models``)."""

    base_url: str
    api_key: str = field(default="", repr=False)
    kv_events_endpoints: tuple[KVEventsEndpoint, ...] = ()
    verify_tls: bool = True
    model_name: str = ""
    serve: ServeOptions | None = None  # set when the workbench starts the server itself
    timeout_s: float = 10.0  # connect and first-answer timeout of each call

    @property
    def model(self) -> str:
        """What the engine status names while it starts (the loop's message)."""
        return self.model_name or self.base_url

    @property
    def api_root(self) -> str:
        """The base URL without a trailing ``/v1``: ``/metrics`` and ``/version`` sit beside it."""
        url = self.base_url.rstrip("/")
        return url[:-3] if url.endswith("/v1") else url

    @property
    def openai_url(self) -> str:
        return self.api_root + "/v1"

    @property
    def metrics_url(self) -> str:
        return self.api_root + "/metrics"

    def public(self) -> dict:
        """What may be kept or shown: everything but the key."""
        return {"base_url": self.api_root, "verify_tls": self.verify_tls,
                "kv_events": [e.publisher for e in self.kv_events_endpoints],
                "kv_replay": [e.replay or "" for e in self.kv_events_endpoints]}

    def with_key(self, api_key: str) -> "ServerSpec":
        return replace(self, api_key=api_key)


def is_loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: str) -> str:
    """The URL as given, or ValueError naming what is wrong with it and how to write it."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"'{url}' is not a server address: write it as http://host:port or https://host "
                         "(for example http://127.0.0.1:8000).")
    return url.strip().rstrip("/")


def needs_plain_http_confirmation(url: str) -> bool:
    """Plain http to a host other than this machine sends prompts (and the key) unencrypted: ask first."""
    return urlsplit(url).scheme == "http" and not is_loopback(url)
