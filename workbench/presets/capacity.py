"""The capacity planner: what a configuration will cost before it starts.

Weights from the model's files; KV bytes per token = layers × KV heads × head size × dtype bytes × 2
(keys and values); blocks from the memory budget; the largest number of sequences that fit at
max_model_len. On CPU the budget is the KV space in bytes, and vLLM's count is that arithmetic; on a
GPU it is the share of the device left after the weights and the activation peak, estimated here. For a
vision-language model, the tokens of a prompt holding as many of the largest images as the engine takes
(``limit_mm_per_prompt``, at the processor's ``max_pixels``: ``presets.image_tokens``) and how many such
prompts the blocks hold.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

from workbench.engine.spec import EngineConfig
from workbench.presets.machine import Machine
from workbench.presets.image_tokens import QWEN2_VL
from workbench.presets.model_facts import DTYPE_BYTES, ModelFacts

GIB = 1 << 30


def size_text(num_bytes: int) -> str:
    return f"{num_bytes / GIB:.2f} GiB" if num_bytes >= GIB // 4 else f"{num_bytes / (1 << 20):.1f} MiB"
NON_TORCH_BYTES = 512 << 20  # CUDA context, NCCL and allocator slack outside torch's own count
DEFAULT_BATCHED_TOKENS = 8192


@dataclass(frozen=True)
class ImagePlan:
    """A prompt of the most images the engine takes, each at the largest size its processor gives one."""

    num_images: int
    size: str  # "max_pixels 1,003,520", "longest edge 1,456"
    tokens: int  # the images' tokens, their markers included
    num_prompts: int  # such prompts whose images the KV blocks hold at once
    max_model_len: int

    def line(self) -> str:
        what = f"{self.num_images} images" if self.num_images != 1 else "An image"
        text = f"{what} at {self.size}: {self.tokens:,} tokens; {self.num_prompts:,} such prompts fit the KV cache"
        if self.tokens > self.max_model_len:
            text += f". More than max_model_len {self.max_model_len:,}: vLLM refuses such a prompt; raise " \
                    "max_model_len, or lower max_pixels or limit_mm_per_prompt"
        return text


@dataclass(frozen=True)
class CapacityPlan:
    weights_bytes: int
    weights_from_files: bool
    kv_bytes_per_token: int
    block_size: int
    budget_bytes: int  # the memory the KV cache gets
    num_blocks: int
    max_model_len: int
    max_concurrent_seqs: int  # sequences of max_model_len tokens that fit at once
    basis: str  # how the budget was found
    images: ImagePlan | None = None  # a vision-language model's images (None: a model that reads none)

    def lines(self) -> list[str]:
        weights = size_text(self.weights_bytes) + ("" if self.weights_from_files else " (from config.json)")
        lines = [f"Weights: {weights}",
                 f"KV per token: {self.kv_bytes_per_token:,} bytes",
                 f"KV budget: {size_text(self.budget_bytes)} ({self.basis})",
                 f"KV blocks: {self.num_blocks:,} of {self.block_size} tokens",
                 f"Sequences of {self.max_model_len:,} tokens at once: {self.max_concurrent_seqs:,}"]
        return lines + ([self.images.line()] if self.images is not None else [])


def served_dtype_bytes(config: EngineConfig, model: ModelFacts) -> int:
    """Bytes per value of the weights as vLLM serves them: with dtype "auto" it serves float32 weights in
    16 bits."""
    dtype = str(config.option("dtype", "auto"))
    return DTYPE_BYTES.get(dtype, min(model.dtype_bytes, 2))


def kv_dtype_bytes(config: EngineConfig, model: ModelFacts) -> int:
    dtype = str(config.option("kv_cache_dtype", "auto"))
    return 1 if dtype.startswith("fp8") else DTYPE_BYTES.get(dtype, served_dtype_bytes(config, model))


def kv_bytes_per_token(config: EngineConfig, model: ModelFacts) -> int:
    return model.num_layers * model.num_kv_heads * model.head_size * kv_dtype_bytes(config, model) * 2


def activation_peak_bytes(config: EngineConfig, model: ModelFacts) -> int:
    """vLLM profiles one forward pass of max_num_batched_tokens; this is that pass's largest tensors
    (the MLP's intermediate and the logits of the sampled rows), in the model's dtype."""
    tokens = config.option("max_num_batched_tokens") or DEFAULT_BATCHED_TOKENS
    dtype_bytes = served_dtype_bytes(config, model)
    mlp = tokens * model.intermediate_size * 2 * dtype_bytes
    logits = config.max_num_seqs * model.vocab_size * 4
    return mlp + tokens * model.hidden_size * 4 * dtype_bytes + logits


def _budget(config: EngineConfig, model: ModelFacts, machine: Machine) -> tuple[int, str]:
    if config.kv_cache_memory_bytes:
        return config.kv_cache_memory_bytes, "kv_cache_memory_bytes"
    if machine.on_cpu:
        space = os.environ.get("VLLM_CPU_KVCACHE_SPACE")
        return (int(float(space) * GIB), "VLLM_CPU_KVCACHE_SPACE") if space else (GIB, "the CPU default, 1 GiB")
    util = config.gpu_memory_utilization or 0.9
    tp = max(1, int(config.option("tensor_parallel_size", 1) or 1))  # each GPU holds 1/tp of the weights
    taken = model.served_weights_bytes(config.option("quantization")) // tp + activation_peak_bytes(config, model) + \
        NON_TORCH_BYTES
    return max(0, int(machine.gpu_total_bytes * util) - taken), \
        f"{util:.2f} of {machine.gpu_total_bytes / GIB:.0f} GiB less weights and activations"


def images_per_prompt(config: EngineConfig) -> int:
    """The images a prompt may hold: limit_mm_per_prompt's (a count, or a table with one), else 1 (vLLM's
    own limit is 999: the plan counts one image)."""
    limit = (config.option("limit_mm_per_prompt") or {}).get("image")
    count = limit.get("count") if isinstance(limit, dict) else limit
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1


def plan_images(config: EngineConfig, model: ModelFacts, num_blocks: int, block_size: int) -> ImagePlan | None:
    if model.image_processor is None or not model.reads_images(frozenset()):
        return None
    processor = model.image_processor.with_kwargs(config.option("mm_processor_kwargs"))
    num_images = images_per_prompt(config)
    tokens = num_images * processor.largest_image_tokens()
    size = f"max_pixels {processor.max_pixels:,}" if processor.kind == QWEN2_VL else \
        f"longest edge {processor.longest_edge:,}"
    return ImagePlan(num_images, size, tokens, num_blocks // math.ceil(tokens / block_size), config.max_model_len)


def plan_capacity(config: EngineConfig, model: ModelFacts, machine: Machine) -> CapacityPlan:
    block_size = config.block_size or (32 if machine.on_cpu else 16)
    per_token = kv_bytes_per_token(config, model)
    tp = int(config.option("tensor_parallel_size", 1) or 1)
    budget, basis = _budget(config, model, machine)
    if config.num_gpu_blocks_override:
        num_blocks, basis = config.num_gpu_blocks_override, "num_gpu_blocks_override"
    else:  # each GPU holds 1/tp of the heads, and the pool counts blocks per GPU
        num_blocks = budget * tp // (per_token * block_size) if per_token else 0
    per_seq = math.ceil(config.max_model_len / block_size)
    return CapacityPlan(model.served_weights_bytes(config.option("quantization")), model.weights_from_files, per_token,
                        block_size, budget, num_blocks, config.max_model_len, num_blocks // per_seq if per_seq else 0,
                        basis, plan_images(config, model, num_blocks, block_size))


def compare_with_engine(plan: CapacityPlan, real_blocks: int | None) -> str:
    """The estimate beside vLLM's own count once the engine runs."""
    if not real_blocks:
        return f"Estimate {plan.num_blocks:,} blocks; vLLM's count arrives when the engine is ready."
    off = (plan.num_blocks - real_blocks) / real_blocks
    return f"vLLM allocated {real_blocks:,} blocks; the estimate was {plan.num_blocks:,} ({off:+.1%})."
