"""The user's permission to run a model's own code (``trust_remote_code``), remembered per model.

A preset alone never turns it on: the panel asks once for each model, and the answer is kept here.
"""
from __future__ import annotations

import json
from pathlib import Path

from workbench.paths import config_dir, write_text_atomically


def _file() -> Path:
    return config_dir() / "trusted_models.json"


def trusted_models() -> list[str]:
    try:
        found = json.loads(_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [str(m) for m in found] if isinstance(found, list) else []


def is_trusted(model: str) -> bool:
    return model in trusted_models()


def remember_trust(model: str) -> None:
    models = trusted_models()
    if model not in models:
        write_text_atomically(_file(), json.dumps(models + [model], indent=1))
