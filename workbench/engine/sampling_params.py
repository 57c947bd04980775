"""The one conversion from the workbench's sampling settings to vLLM's ``SamplingParams``."""
from __future__ import annotations

from workbench.engine.sampling import SamplingSettings


def to_sampling_params(settings: SamplingSettings, max_tokens_cap: int | None = None, detokenize: bool = True):
    """vLLM's ``SamplingParams`` for ``settings``, streaming DELTA outputs.

    ``max_tokens_cap``: the room left in the context (max_model_len less the prompt); max_tokens is
    lowered to it. ``detokenize``: False for an engine without a tokenizer (token ids only)."""
    from vllm import SamplingParams
    from vllm.sampling_params import RequestOutputKind

    max_tokens = settings.max_tokens if max_tokens_cap is None else min(settings.max_tokens, max_tokens_cap)
    return SamplingParams(
        temperature=settings.temperature, top_p=settings.top_p,
        top_k=settings.top_k if settings.top_k > 0 else -1, max_tokens=max_tokens, seed=settings.seed,
        ignore_eos=settings.ignore_eos, output_kind=RequestOutputKind.DELTA, detokenize=detokenize,
    )
