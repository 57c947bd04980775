"""Sampling settings: the defaults, held once, and the one conversion to vLLM's ``SamplingParams``.

The chat's sampling panel starts from :data:`DEFAULT_SAMPLING`; the engine session and both
benchmark paths turn settings into ``SamplingParams`` through :func:`to_sampling_params` only.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SamplingSettings:
    """What a request asks of the sampler; the field defaults are the workbench's defaults."""

    temperature: float = 0.7
    top_p: float = 0.95
    top_k: int = 0  # 0: off
    max_tokens: int = 256
    seed: int | None = None  # None: a fresh random seed per request
    ignore_eos: bool = False


DEFAULT_SAMPLING = SamplingSettings()


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
