"""Which backend runs a start command: the local engine, or a server (attached, or served first)."""
from __future__ import annotations

from workbench.engine.backend import Backend
from workbench.remote.spec import ServerSpec


def backend_for(config) -> Backend:
    if isinstance(config, ServerSpec):
        from workbench.engine.demo_model import model_for_start
        from workbench.remote.backend import RemoteBackend

        return RemoteBackend(config, model_for_start=model_for_start)  # "Serve" builds the demo model first
    from workbench.engine.session import EngineSession

    return EngineSession(config)
