"""Sampling settings and their defaults, held once. No vLLM here: the application model holds them.

The chat's sampling panel starts from :data:`DEFAULT_SAMPLING`; the engine session and both
benchmark paths turn settings into ``SamplingParams`` through ``sampling_params.to_sampling_params``.
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
