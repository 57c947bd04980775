"""Where the engine loop runs: in an engine-client process of its own (``client_bridge``), or in a
thread of the window's process (``host``). One setting chooses, ``WORKBENCH_ENGINE_CLIENT``."""
from __future__ import annotations

from workbench.engine.client_wire import engine_client_kind


def engine_host(kind: str | None = None, check_with_scan: bool = False):
    """The host of the engine loop, with ``EngineThread``'s face (``host``, ``start``, ``stop``)."""
    if engine_client_kind(kind) == "process":
        from workbench.bridge.client_bridge import ClientProcessThread

        return ClientProcessThread(check_with_scan=check_with_scan)
    from workbench.bridge.engine_host import EngineThread

    return EngineThread(check_with_scan=check_with_scan)
