"""A folder of the app's own for the files an engine makes while it runs, removed as it stops. No Qt.

vLLM binds its processes' ZeroMQ sockets as files under ``VLLM_RPC_BASE_PATH`` (the temp folder unless
set), and nothing removes those of processes that are shut down or killed: seven socket files in /tmp
for each start of the demo engine, measured on vLLM 0.32 (CPU). Each engine start (a local engine, or a
served ``vllm serve``) gets a folder in the temp folder; the engine's sockets and its start's phase file
go there, and the folder goes when the engine has stopped. The folder's ``owner`` file names the app
(its ``process_guard`` owner tag): :func:`remove_leftovers` removes, at the next start, the folders of an
app that was killed.

A socket's path holds at most :data:`SOCKET_PATH_MAX` bytes, and vLLM names each socket by a uuid, so the
folder's name is short. Where the temp folder's own path leaves no room for it, or the user set
``VLLM_RPC_BASE_PATH`` (their folder, their files), vLLM's sockets go where vLLM puts them.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from workbench.engine.process_guard import mark_owner, owner_alive

RPC_PATH_ENV = "VLLM_RPC_BASE_PATH"
PREFIX = "wbrun-"
OWNER_FILE = "owner"
SOCKET_PATH_MAX = 107  # sizeof(sockaddr_un.sun_path) less its terminating NUL, on Linux
SOCKET_NAME_LEN = 1 + 36  # "/" and the uuid vLLM names each socket by (get_open_zmq_ipc_path)


def new_run_folder() -> Path:
    """A fresh, private (0700) folder in the temp folder, its ``owner`` file naming this app."""
    folder = Path(tempfile.mkdtemp(prefix=PREFIX))
    (folder / OWNER_FILE).write_text(mark_owner())
    return folder


def vllm_env(folder: Path) -> dict[str, str]:
    """What to add to an engine's environment so that vLLM's sockets go into ``folder``: nothing where the
    user chose a folder for them, or where a socket's path in ``folder`` would be too long."""
    if os.environ.get(RPC_PATH_ENV) or len(os.fsencode(folder)) + SOCKET_NAME_LEN > SOCKET_PATH_MAX:
        return {}
    return {RPC_PATH_ENV: str(folder)}


@contextmanager
def environment_for_start(values: dict[str, str]) -> Iterator[None]:
    """``values`` in this process's environment while an engine's processes start (they inherit them), and the
    environment as it was afterwards: nothing started later from this process (a served vLLM, vLLM used
    directly) inherits a run folder that is gone by then."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def remove_run_folder(folder: Path | None) -> None:
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def remove_leftovers() -> list[Path]:
    """Removes the run folders whose app is gone (killed, so it never removed them); returns them."""
    removed = []
    for folder in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            owner = (folder / OWNER_FILE).read_text().strip()
        except OSError:  # not ours, or its app is between making it and naming itself
            continue
        if owner and not owner_alive(owner):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed

