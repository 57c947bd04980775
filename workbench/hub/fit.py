"""Will it fit: a model's facts (from the Hub, before a download) through the capacity planner the presets
use, at the current preset's settings on this machine, TP included; and where it does not fit, what
would make it: a smaller max_model_len, fp8 KV, tensor parallelism, a quantized variant."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import psutil

from workbench.engine.spec import EngineConfig
from workbench.presets.capacity import CapacityPlan, plan_capacity, size_text
from workbench.presets.machine import Machine
from workbench.presets.model_facts import ModelFacts

MIN_USEFUL_TOKENS = 2048  # a model that cannot hold one sequence this long does not fit in any useful way
QUANTIZED_MARKS = ("awq", "gptq", "fp8", "int4", "int8", "w4a16", "w8a8", "nvfp4", "bnb", "4bit", "8bit")
HOST_HEADROOM = 1.15  # the CPU build holds the weights in host memory, with room for the process


@dataclass(frozen=True)
class FitAnswer:
    fits: bool
    plan: CapacityPlan  # at the model's own context length
    max_len_that_fits: int  # the longest max_model_len one sequence can have
    seqs_at_that_len: int
    headline: str
    lines: tuple[str, ...]
    suggestions: tuple[str, ...]


def quantized_variants(repo_id: str, names: list[str]) -> list[str]:
    """Repos among ``names`` that look like a quantized build of ``repo_id``'s model."""
    base = repo_id.split("/")[-1].lower()
    for suffix in ("-instruct", "-chat", "-it"):
        base = base.removesuffix(suffix)
    return [n for n in names if n != repo_id and base in n.lower()
            and any(mark in n.lower() for mark in QUANTIZED_MARKS)]


def _config_for(config: EngineConfig, facts: ModelFacts, **engine) -> EngineConfig:
    """The preset's configuration for this model, at its own context length, without a block count the
    preset may have set for another model."""
    changed = config.with_changes([("max_model_len", facts.max_position_embeddings), ("num_gpu_blocks_override", None),
                                   *engine.items()])
    return replace(changed, model=facts.path)


def _fitting(plan: CapacityPlan, facts: ModelFacts) -> tuple[int, int]:
    longest = min(facts.max_position_embeddings, plan.num_blocks * plan.block_size)
    per_seq = math.ceil(longest / plan.block_size) if longest else 0
    return longest, (plan.num_blocks // per_seq if per_seq else 0)


def will_it_fit(config: EngineConfig, facts: ModelFacts, machine: Machine,
                alternatives: list[str] = ()) -> FitAnswer:
    """``config``: the current preset's engine configuration; ``alternatives``: other repos of the same
    search (quantized variants among them are offered where it does not fit)."""
    target = _config_for(config, facts)
    plan = plan_capacity(target, facts, machine)
    longest, seqs = _fitting(plan, facts)
    need = min(MIN_USEFUL_TOKENS, facts.max_position_embeddings)
    free = psutil.virtual_memory().available if machine.on_cpu else 0
    host_short = machine.on_cpu and facts.weights_bytes * HOST_HEADROOM > free
    fits = longest >= need and not host_short
    tp = int(config.option("tensor_parallel_size", 1) or 1)
    gpu = f"{machine.gpu_total_bytes / (1 << 30):.0f} GiB GPU"
    where = "this machine's memory (the CPU build)" if machine.on_cpu else \
        (f"{tp} × {gpu}" + (f" (tensor_parallel_size {tp})" if tp > 1 else "")
         + (f", of the {machine.num_usable_gpus} here" if machine.num_usable_gpus > tp else ""))
    if fits:
        full = longest == facts.max_position_embeddings
        context = "the model's full context" if full else f"of the model's {facts.max_position_embeddings:,}"
        headline = (f"Fits on {where}: {plan.num_blocks * plan.block_size:,} tokens of KV cache "
                    f"({plan.num_blocks:,} blocks); a context of {longest:,} tokens ({context}), "
                    f"{seqs:,} sequence{'s' if seqs != 1 else ''} of it at once.")
    elif host_short:
        headline = (f"Does not fit: the weights ({size_text(facts.weights_bytes)}) need more than the "
                    f"{size_text(free)} of memory free now.")
    elif plan.budget_bytes <= 0:
        headline = (f"Does not fit: the weights ({size_text(facts.weights_bytes)}) and vLLM's working memory "
                    f"take more than {plan.basis.split(' less ')[0]}.")
    else:
        headline = (f"Does not fit: {plan.num_blocks * plan.block_size:,} tokens of KV cache would be left, "
                    f"less than one sequence of {need:,}.")
    lines = (f"Parameters and weights: {size_text(facts.weights_bytes)}"
             + ("" if facts.weights_from_files else " (estimated from config.json)"),
             *plan.lines()[1:], f"Longest max_model_len that fits: {longest:,}",
             f"Sequences of that length at once: {seqs:,}")
    return FitAnswer(fits, plan, longest, seqs, headline, lines,
                     tuple(_suggestions(config, facts, machine, plan, fits, alternatives, host_short)))


def _suggestions(config, facts, machine, plan, fits, alternatives, host_short) -> list[str]:
    ideas = []
    if fits and plan.num_blocks * plan.block_size >= facts.max_position_embeddings:
        return ideas
    quantized = [f"a quantized variant: {name}" for name in quantized_variants(facts.path, list(alternatives))[:3]]
    if host_short:
        need = size_text(int(facts.weights_bytes * HOST_HEADROOM))
        return quantized + [f"a machine with {need} of memory free for the CPU build, or GPUs that hold "
                            f"{size_text(facts.weights_bytes)} of weights with room for the KV cache"]
    longest, _ = _fitting(plan, facts)
    if longest >= MIN_USEFUL_TOKENS and longest < facts.max_position_embeddings:
        ideas.append(f"max_model_len {longest:,} (the longest that fits) instead of the model's "
                     f"{facts.max_position_embeddings:,}")
    kv = str(config.option("kv_cache_dtype", "auto"))
    if not kv.startswith("fp8") and (not machine.on_cpu or machine.cpu.holds_fp8_kv):
        more = plan_capacity(_config_for(config, facts, kv_cache_dtype="fp8"), facts, machine)
        if more.num_blocks > plan.num_blocks:
            ideas.append(f"kv_cache_dtype fp8: {more.num_blocks * more.block_size:,} tokens of KV cache "
                         "(twice as many; outputs may differ slightly)")
    tp = int(config.option("tensor_parallel_size", 1) or 1)
    if not machine.on_cpu and machine.num_usable_gpus >= 2 * tp:
        wider = plan_capacity(_config_for(config, facts, tensor_parallel_size=2 * tp), facts, machine)
        if wider.num_blocks > plan.num_blocks:
            ideas.append(f"tensor_parallel_size {2 * tp}: {wider.num_blocks * wider.block_size:,} tokens of KV "
                         f"cache on {2 * tp} GPUs")
    return ideas + quantized
