"""What a server backend reports beyond text and statistics, as immutable messages for the model."""
from __future__ import annotations

from dataclasses import dataclass

from workbench.remote.prometheus import ServerMetrics
from workbench.remote.spec import KVEventsEndpoint


@dataclass(frozen=True)
class ServerStateChanged:
    """The connection: "connecting", "connected", "reconnecting" (lost, retried with backoff) or "closed"."""

    state: str
    base_url: str  # the endpoint, ready to copy (never with the key)
    message: str = ""
    attempt: int = 0  # reconnect attempts so far
    retry_in_s: float | None = None
    served: bool = False  # the workbench started this server ("Serve")
    log_path: str | None = None  # the served server's own log
    kv_events_endpoints: tuple[KVEventsEndpoint, ...] = ()
    metrics_problem: str = ""  # /metrics could not be read: why (the plots stay empty)


@dataclass(frozen=True)
class ServerMetricsRead:
    """One scrape of the server's /metrics, every engine of it."""

    metrics: ServerMetrics
