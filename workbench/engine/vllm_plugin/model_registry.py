"""The architectures this vLLM runs, from its own model registry (``vllm.ModelRegistry``, the same on
0.26 to 0.33). Run as a program it prints them as JSON, so a process that must not import vLLM (the
window's) asks a short-lived one: ``python -m workbench.engine.vllm_plugin.model_registry``.
"""
from __future__ import annotations

import json
import sys


def supported_architectures() -> list[str]:
    from vllm import ModelRegistry

    return sorted(ModelRegistry.get_supported_archs())


if __name__ == "__main__":
    json.dump({"architectures": supported_architectures()}, sys.stdout)
