"""One real ``vllm`` API server for a whole test module, started through the workbench's own "Serve"
code path (``workbench.remote.serve``): the demo model on 127.0.0.1, free ports picked at run time,
Prometheus metrics and KV cache events (ZMQ, with a replay endpoint) on.

Use it with ``from remote_server import vllm_server`` in a test module marked ``slow``. The fixture
yields a :class:`RunningServer`: ``base_url``, ``metrics_url``, ``kv_events_endpoints`` (publisher and
replay), ``options`` (the ``ServeOptions``), ``process`` (the ``ServerProcess``), and ``kill()`` /
``restart()`` (same address and ports) for tests of a lost server.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace

import pytest

SERVER_START_TIMEOUT_S = 300.0


@dataclass
class RunningServer:
    options: object  # ServeOptions
    process: object  # ServerProcess

    @property
    def base_url(self) -> str:
        return self.process.base_url

    @property
    def metrics_url(self) -> str:
        return self.base_url + "/metrics"

    @property
    def kv_events_endpoints(self):
        from workbench.remote.serve import kv_endpoints

        return kv_endpoints(self.options)

    def kill(self) -> None:
        """SIGKILL to the server and its engine core, as a crash would."""
        self.process.kill()

    def restart(self) -> None:
        """The same server again on the same address and ports (after :meth:`kill`)."""
        from workbench.remote.serve import ServerProcess

        self.process.stop()
        self.process = ServerProcess(self.options, self.process.log_dir)
        self.process.start()
        self.process.wait_ready(timeout_s=SERVER_START_TIMEOUT_S)


def served_demo_options(model_path: str):
    """The app's demo preset as "Serve" starts it, on free loopback ports; without CUDA graphs where the
    suite's engines start eager (``WORKBENCH_TEST_ENFORCE_EAGER=1``, the H200's runs: a served start then
    takes seconds, not a minute, and this module starts the server three times)."""
    from workbench.app import demo_engine_config
    from workbench.remote.spec import ServeOptions
    from workbench.remote.serve import free_port

    eager = True if os.environ.get("WORKBENCH_TEST_ENFORCE_EAGER") == "1" else None
    config = replace(demo_engine_config(model_path), max_num_seqs=16, enforce_eager=eager)
    return ServeOptions(config, free_port(), free_port(), free_port())


@pytest.fixture(scope="module")
def vllm_server(demo_model_path, tmp_path_factory):
    from workbench.remote.serve import ServerProcess

    options = served_demo_options(demo_model_path)
    process = ServerProcess(options, tmp_path_factory.mktemp("server-logs"))
    process.start()
    server = RunningServer(options, process)
    try:
        process.wait_ready(timeout_s=SERVER_START_TIMEOUT_S)
        yield server
    finally:
        server.process.stop()
        assert not server.process.running(), "the served vLLM process outlived the test module"
