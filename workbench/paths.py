"""Where the workbench keeps its files, and how the user's own are written (whole or not at all).
``WORKBENCH_DATA_DIR`` overrides the user data directory, ``WORKBENCH_CONFIG_DIR`` the user config
directory."""
from __future__ import annotations

import os
import tempfile
from importlib.resources import files
from pathlib import Path

APP_NAME = "vllm-workbench"


def data_dir() -> Path:
    override = os.environ.get("WORKBENCH_DATA_DIR")
    if override:
        path = Path(override)
    else:
        from platformdirs import user_data_dir

        path = Path(user_data_dir(APP_NAME, appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def config_dir() -> Path:
    """The user's settings: ``WORKBENCH_CONFIG_DIR``, else ``config/`` in ``WORKBENCH_DATA_DIR`` where that
    is set (tests, benchmarks), else the platform's user config folder."""
    override = os.environ.get("WORKBENCH_CONFIG_DIR")
    if override:
        path = Path(override)
    elif os.environ.get("WORKBENCH_DATA_DIR"):
        path = Path(os.environ["WORKBENCH_DATA_DIR"]) / "config"
    else:
        from platformdirs import user_config_dir

        path = Path(user_config_dir(APP_NAME, appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def resources_dir() -> Path:
    """The shipped resources (the demo corpus): package data, so a wheel install has them too.

    A real folder is promised: the package is installed as files, never imported from a zip.
    """
    return Path(str(files("workbench") / "resources"))


def _mode_for(path: Path) -> int:
    """The file's own permissions where it exists, else what the umask gives a new file."""
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_text_atomically(path: Path, text: str) -> None:
    """Writes ``text`` (UTF-8) to a temporary file beside ``path``, flushes it to the disk and puts it
    in ``path``'s place in one step: a write that fails half-way (a full disk, a crash) leaves ``path``
    as it was, never truncated, and the temporary file is removed."""
    path = Path(path)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        os.fchmod(descriptor, _mode_for(path))  # as a plain write would leave it, not mkstemp's 0600
        with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
