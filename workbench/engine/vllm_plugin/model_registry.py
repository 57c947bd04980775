"""The architectures this vLLM runs, from its own model registry (``vllm.ModelRegistry``, the same on
0.26 to 0.33), and which of them take images or other media: the registry's ``_MULTIMODAL_MODELS``
table (``vllm/model_executor/models/registry.py``, present in 0.26 and 0.32), whose names need no
model class imported to be read. Run as a program it prints both as JSON, so a process that must not
import vLLM (the window's) asks a short-lived one: ``python -m workbench.engine.vllm_plugin.model_registry``.
"""
from __future__ import annotations

import json
import sys


def supported_architectures() -> list[str]:
    from vllm import ModelRegistry

    return sorted(ModelRegistry.get_supported_archs())


def multimodal_architectures() -> list[str]:
    """The architectures vLLM registers as multimodal; empty where this vLLM keeps no such table."""
    from vllm.model_executor.models import registry

    return sorted(getattr(registry, "_MULTIMODAL_MODELS", {}))


if __name__ == "__main__":
    json.dump({"architectures": supported_architectures(), "multimodal": multimodal_architectures()}, sys.stdout)
