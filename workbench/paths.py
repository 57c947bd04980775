"""Where the workbench keeps its files. ``WORKBENCH_DATA_DIR`` overrides the user data directory."""
from __future__ import annotations

import os
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


def resources_dir() -> Path:
    """The shipped resources: inside the source tree, next to the package."""
    return Path(__file__).resolve().parent.parent / "resources"
