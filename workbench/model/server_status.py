"""The server the engine loop is attached to, as the window shows it: connection, endpoint, metrics."""
from __future__ import annotations

from dataclasses import dataclass

from workbench.remote.prometheus import ServerMetrics
from workbench.remote.spec import KVEventsEndpoint


@dataclass(frozen=True)
class ServerStatus:
    state: str = ""  # "" (no server), "connected", "reconnecting", "closed"
    base_url: str = ""  # the endpoint other tools can use (never with the key)
    message: str = ""
    attempt: int = 0
    retry_in_s: float | None = None
    served: bool = False  # started by the workbench ("Serve")
    log_path: str | None = None
    kv_events_endpoints: tuple[KVEventsEndpoint, ...] = ()  # where the prefix-cache view subscribes
    metrics_problem: str = ""
    metrics: ServerMetrics | None = None  # the latest scrape, every engine

    @property
    def attached(self) -> bool:
        return self.state in ("connected", "reconnecting")
