"""A Hugging Face Hub on 127.0.0.1 for tests: repos built on disk, served by a real Hub server, with the
real ``huggingface_hub`` client pointed at it through ``HF_ENDPOINT``.

The server is olah (PyPI ``olah``, a self-hosted Hub mirror), run offline on local git repos from its own
virtualenv (``.venv-hub``, made by ``packaging/install.py --test``; ``WORKBENCH_HUB_SERVER`` may name another
``olah-cli``). In front of it, on the address the client is given, runs ``tests/hub_standin.py``: a stand-in
for what olah does not serve offline (search, model_info's Hub fields, gated repos, Range requests); see its
docstring. docs/results/hub-server-survey.md says what olah does and does not do.

    from hub_server import HubServer, add_repo, tiny_repo_files, qwen7b_shaped_files

    with HubServer(tmp_path) as hub:                # olah and the stand-in, on free ports
        add_repo(hub, "tiny-org/tiny", tiny_repo_files(tmp_path / "src"))
        hub.start()
        point_client_at(monkeypatch, hub.endpoint, tmp_path / "hf-home")  # HF_ENDPOINT, HF_HOME, no token
        ...the real huggingface_hub calls...
    # both processes are gone here, whatever the test did

or, for a module's tests, ``hub = hub_fixture(build)`` with ``build(server, workdir)`` adding the repos.

Repos may be added before :meth:`HubServer.start`, and after it too (olah reads them per request). The
folders to add are built by ``tests/hub_repos.py`` (re-exported here).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from hub_repos import (QWEN25_7B_CONFIG, QWEN25_7B_PARAMETERS, qwen7b_shaped_files, qwen7b_tensors,
                       tiny_repo_files, write_safetensors_header)

__all__ = ["HubServer", "add_repo", "hub_fixture", "point_client_at", "olah_cli", "free_port",
           "QWEN25_7B_CONFIG", "QWEN25_7B_PARAMETERS", "qwen7b_shaped_files", "qwen7b_tensors", "tiny_repo_files",
           "write_safetensors_header"]

ROOT = Path(__file__).resolve().parent.parent
STANDIN = Path(__file__).resolve().parent / "hub_standin.py"
START_TIMEOUT_S = 30.0
GIT_ENV = {"GIT_AUTHOR_NAME": "hub-test", "GIT_AUTHOR_EMAIL": "hub-test@localhost", "GIT_COMMITTER_NAME": "hub-test",
           "GIT_COMMITTER_EMAIL": "hub-test@localhost", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def olah_cli() -> str:
    """The olah server's command; the test is skipped (failed under CI) where it is not installed."""
    named = os.environ.get("WORKBENCH_HUB_SERVER")
    found = Path(named) if named else ROOT / ".venv-hub" / "bin" / "olah-cli"
    if found.exists():
        return str(found)
    why = (f"the tests' Hub server is not installed ({found} is missing): `python3 packaging/install.py --test` "
           "installs it, or `python3 -m venv .venv-hub && .venv-hub/bin/pip install olah==0.5.4`")
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- repos on disk ------------------------------------------------------------------------------------------

LFS_PATTERNS = ("*.safetensors", "*.bin", "*.pt", "*.gguf")  # what the Hub keeps in git-LFS


def add_repo(hub: "HubServer", repo_id: str, source: Path, gated_token: str | None = None) -> Path:
    """``source``'s files as the one commit of ``repo_id`` (``owner/name``) on ``hub``; its folder.

    A model folder (config.json, tokenizer files, model.safetensors) is copied as it is; weights are
    committed as git-LFS pointers with their objects in ``.git/lfs/objects``, as on the Hub (no git-lfs
    needed), so olah lists them with their sha256 and size and gives the sha256 as their ETag. With
    ``gated_token`` the repo is gated: its files need that token, as a gated repo's on the Hub do."""
    folder = hub.repos_root / repo_id
    shutil.copytree(source, folder)
    weights = [path for pattern in LFS_PATTERNS for path in folder.rglob(pattern)]
    originals = {path: _to_lfs_pointer(folder, path) for path in weights}
    env = {**os.environ, **GIT_ENV}
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "Upload"]):
        subprocess.run(cmd, cwd=folder, env=env, check=True)
    for path, lfs_object in originals.items():  # the working tree holds the content, for the stand-in's ranges
        shutil.copyfile(lfs_object, path)
    if gated_token:
        hub.gated[repo_id] = gated_token
        hub.write_standin_config()
    return folder


def _to_lfs_pointer(folder: Path, path: Path) -> Path:
    """``path`` moved into ``folder``'s LFS object store and replaced by its pointer; the object's path."""
    data = path.read_bytes()
    oid = hashlib.sha256(data).hexdigest()
    lfs_object = folder / ".git" / "lfs" / "objects" / oid[:2] / oid[2:4] / oid
    lfs_object.parent.mkdir(parents=True, exist_ok=True)
    lfs_object.write_bytes(data)
    path.write_text(f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {len(data)}\n")
    return lfs_object


# -- the servers ------------------------------------------------------------------------------------------

if sys.platform.startswith("linux"):
    import ctypes

    _LIBC = ctypes.CDLL(None, use_errno=True)  # loaded here: the child may only make the call itself
else:
    _LIBC = None


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the test process dies, even by SIGKILL (Linux's
    PR_SET_PDEATHSIG), so that a killed pytest leaves no server behind either."""
    if _LIBC is not None:
        _LIBC.prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG


class HubServer:
    """olah and the stand-in in front of it, on free loopback ports, as a context manager.

    ``endpoint`` is what ``HF_ENDPOINT`` is set to. ``kill()`` SIGKILLs both (a crash mid-transfer);
    ``start()`` again brings them back on the same ports. Leaving the ``with`` block stops them, on a
    failing test too. ``pace`` ("owner/name/file" -> seconds per 64 KiB) sends a file slowly."""

    def __init__(self, workdir: Path, pace: dict[str, float] | None = None):
        self.workdir = Path(workdir)
        self.repos_root = self.workdir / "mirrors" / "models"
        self.repos_root.mkdir(parents=True, exist_ok=True)
        self.gated: dict[str, str] = {}
        self.pace = dict(pace or {})
        self.olah_port, self.port = free_port(), free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.request_log = self.workdir / "requests.log"
        self._processes: list[subprocess.Popen] = []

    def write_standin_config(self) -> Path:
        path = self.workdir / "standin.json"
        path.write_text(json.dumps({"port": self.port, "upstream": f"http://127.0.0.1:{self.olah_port}",
                                    "repos_root": str(self.repos_root), "gated": self.gated, "pace": self.pace,
                                    "log": str(self.request_log)}))
        return path

    def _olah_config(self) -> Path:
        path = self.workdir / "olah.toml"
        path.write_text(
            "[basic]\n"
            f'host = "127.0.0.1"\nport = {self.olah_port}\n'
            f'repos-path = "{self.workdir / "olah-cache"}"\n'
            f'mirrors-path = ["{self.workdir / "mirrors"}"]\n'
            "[accessibility]\noffline = true\n")
        return path

    def _spawn(self, cmd: list[str], log_name: str) -> None:
        log = open(self.workdir / log_name, "ab")
        self._processes.append(subprocess.Popen(cmd, cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, start_new_session=True,
                                                preexec_fn=_die_with_parent))
        log.close()

    def start(self) -> "HubServer":
        """Both servers started; returns once each answers (or raises, naming its log)."""
        self._spawn([olah_cli(), "-c", str(self._olah_config()), "--log-path", str(self.workdir / "olah-logs")],
                    "olah.out")
        self._spawn([sys.executable, str(STANDIN), str(self.write_standin_config())], "standin.out")
        self._wait(f"http://127.0.0.1:{self.olah_port}/api/whoami-v2", "olah.out")
        self._wait(f"{self.endpoint}/api/models", "standin.out")
        return self

    def _wait(self, url: str, log_name: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self._processes):
                break
            try:
                urllib.request.urlopen(url, timeout=1).close()
                return
            except urllib.error.HTTPError:
                return  # it answers, with an error: that is up
            except OSError:
                time.sleep(0.1)
        log = (self.workdir / log_name).read_text(errors="replace")[-2000:]
        self.stop()
        raise RuntimeError(f"the tests' Hub server did not answer at {url}:\n{log}")

    def kill(self) -> None:
        """SIGKILL to both servers' process groups, as a crash would; waits until they are gone."""
        self._signal(signal.SIGKILL)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 5 s, to whatever is still running."""
        self._signal(signal.SIGTERM, grace_s=5.0)

    def _signal(self, sig: int, grace_s: float = 0.0) -> None:
        for process in self._processes:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, sig)
                except ProcessLookupError:
                    pass
        for process in self._processes:
            try:
                process.wait(timeout=grace_s or 5.0)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self._processes.clear()

    def requests(self) -> list[str]:
        """What the client asked, one ``METHOD PATH RANGE`` line a request."""
        return self.request_log.read_text().splitlines() if self.request_log.exists() else []

    def __enter__(self) -> "HubServer":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def point_client_at(monkeypatch, endpoint: str, home: Path) -> Path:
    """The ``huggingface_hub`` client of this process (and of any it starts) pointed at ``endpoint``, with
    ``home`` as HF_HOME (its cache in ``home/hub``), no token from the machine and Xet off.

    huggingface_hub reads these variables once, when it is imported, and the suite has imported it by
    then: its constants, and the endpoint of the HfApi behind ``huggingface_hub.get_safetensors_metadata``
    and the other module functions, are patched too (undone with the test's ``monkeypatch``). Returns
    the cache."""
    from huggingface_hub import constants, hf_api
    from huggingface_hub.utils import _cache_manager

    cache = home / "hub"
    token = home / "token"
    env = {"HF_ENDPOINT": endpoint, "HF_HOME": str(home), "HF_HUB_CACHE": str(cache), "HF_TOKEN_PATH": str(token),
           "HF_HUB_DISABLE_XET": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for key in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(key, raising=False)
    template = endpoint + "/{repo_id}/resolve/{revision}/{filename}"
    patched = {"ENDPOINT": endpoint, "HUGGINGFACE_CO_URL_TEMPLATE": template,
               "HF_URL_HOSTS": constants.HF_URL_HOSTS | {"127.0.0.1"}, "HF_HOME": str(home),
               "HF_HUB_CACHE": str(cache),
               "HF_TOKEN_PATH": str(token), "HF_STORED_TOKENS_PATH": str(home / "stored_tokens"),
               "HF_HUB_OFFLINE": False, "HF_HUB_DISABLE_XET": True}
    for key, value in patched.items():
        monkeypatch.setattr(constants, key, value, raising=False)
    monkeypatch.setattr(_cache_manager, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(hf_api.api, "endpoint", endpoint)  # the HfApi behind the module's functions
    return cache


def hub_fixture(build, scope: str = "module"):
    """A pytest fixture that yields a started :class:`HubServer` after ``build(server, workdir)`` has added
    its repos; stopped when the scope ends. In a test module: ``hub = hub_fixture(my_repos)``."""

    @pytest.fixture(scope=scope)
    def hub(tmp_path_factory):
        work = tmp_path_factory.mktemp("hub")
        with HubServer(work) as server:
            build(server, work)
            server.start()
            yield server

    return hub
