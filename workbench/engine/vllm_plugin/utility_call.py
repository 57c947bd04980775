"""The client side of the plugin's utility calls (vLLM's synchronous client, 0.26 to 0.33).

:func:`request_utility` sends a utility call without waiting for it (``call_utility`` blocks the
stepping thread for one to two engine steps, 20–30 ms on an H200). :func:`wake_blocked_step` is one
workaround: vLLM's synchronous client marks the engine dead when its process exits but leaves a
``step()`` that is already waiting for output blocked forever; the workbench's watchdog wakes it with
vLLM's own ``EngineDeadError``.
"""
from __future__ import annotations

import uuid
from concurrent.futures import Future


def request_utility(engine, method: str, *args) -> Future:
    """``engine_core.call_utility`` without the wait: the result arrives on the returned future."""
    client = engine.engine_core
    results, send = getattr(client, "utility_results", None), getattr(client, "_send_input", None)
    if not isinstance(results, dict) or send is None:  # another client: fall back to the blocking call
        future: Future = Future()
        future.set_result(client.call_utility(method, *args))
        return future
    from vllm.v1.engine import EngineCoreRequestType

    call_id = uuid.uuid1().int >> 64
    future = Future()
    results[call_id] = future
    send(EngineCoreRequestType.UTILITY, (0, call_id, method, args))
    return future


def wake_blocked_step(engine) -> None:
    """Makes a ``step()`` blocked on a dead engine core raise ``EngineDeadError``."""
    from vllm.v1.engine.exceptions import EngineDeadError

    client = engine.engine_core
    outputs_queue = getattr(client, "outputs_queue", None)
    if outputs_queue is not None:
        outputs_queue.put_nowait(EngineDeadError())


def is_engine_dead(error: BaseException) -> bool:
    """True where vLLM's client raised because its engine core is gone (``EngineDeadError``, which
    ``add_request`` raises once the core has died), not because it refused a request."""
    from vllm.v1.engine.exceptions import EngineDeadError

    return isinstance(error, EngineDeadError)
