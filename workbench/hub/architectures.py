"""Whether vLLM runs a model's architecture: vLLM's own registry, asked once per installed vLLM version
in a short-lived process (the window never imports vLLM) and kept in the data folder
(``engine.vllm_architectures``)."""
from __future__ import annotations

from workbench.engine.vllm_architectures import registry_answer, vllm_version


def supported_architectures() -> frozenset[str]:
    """vLLM's architectures; an empty set where vLLM cannot be asked (then nothing is refused for it)."""
    return registry_answer().architectures


def architecture_problem(architectures: list[str], supported: frozenset[str]) -> str | None:
    """Why vLLM cannot run a model of these architectures, or None."""
    if not supported or not architectures or any(a in supported for a in architectures):
        return None
    return (f"vLLM {vllm_version()} does not run {', '.join(architectures)}: it is not in vLLM's model registry. "
            "Choose a model of a supported architecture (Qwen2ForCausalLM, LlamaForCausalLM, ...), or a newer vLLM.")
