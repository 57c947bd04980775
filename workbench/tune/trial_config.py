"""A trial's engine configuration from its parameters, and the search space checked against vLLM's own
``EngineArgs`` (through the presets' checks) before a search starts."""
from __future__ import annotations

import tomlkit

from workbench.engine.spec import SERVE_CONTEXT, EngineConfig
from workbench.presets.document import PresetDocument
from workbench.presets.machine import Machine
from workbench.presets.model_facts import ModelFacts
from workbench.tune.space import chunking_needed, engine_value
from workbench.tune.values import SearchSpace


def trial_config(base: EngineConfig, space: SearchSpace, params: dict) -> EngineConfig:
    """``base`` with every parameter of the space at vLLM's default unless the trial sets it, as the exported
    ``vllm serve`` line will run: first come first served, and the batch limits a trial leaves open at
    ``vllm serve``'s defaults (not an ``LLMEngine``'s, which differ on large GPUs). Trial 0, which sets none,
    is ``vllm serve`` with no flags."""
    changes = [(p.name, None) for p in space.parameters]
    changes += [(name, engine_value(name, value)) for name, value in params.items()]
    changes += [("scheduling_policy", None), ("usage_context", SERVE_CONTEXT)]
    return base.with_changes(changes)


def config_problem(config: EngineConfig) -> str:
    """Why vLLM would refuse this combination at its start (found without starting it), or ""."""
    kwargs = config.engine_kwargs(on_cpu=False)
    batched = kwargs.get("max_num_batched_tokens")
    if kwargs.get("enable_chunked_prefill") is False and chunking_needed(batched, config.max_model_len):
        return (f"max_num_batched_tokens {batched} is below max_model_len {config.max_model_len} with chunked "
                "prefill off: a prompt of full length could never be scheduled (vLLM refuses it)")
    seqs = kwargs.get("max_num_seqs")
    if batched is not None and seqs is not None and batched < seqs:
        return f"max_num_batched_tokens {batched} is below max_num_seqs {seqs} (vLLM refuses it)"
    return ""


def space_problems(space: SearchSpace, machine: Machine, facts: ModelFacts | None) -> list[str]:
    """Each searched value vLLM's ``EngineArgs`` (or this machine) rejects, named with its fix; [] for none.
    The values go to the presets' checking process as presets (vLLM is imported there, not here): the
    k-th preset holds each parameter's k-th value (the ends of a range, each choice). Blocks the caller."""
    from workbench.presets.check_process import check_in_process

    problems, values = [], {}
    for parameter in space.searched():
        if parameter.kind in ("int", "float") and parameter.low > parameter.high:
            problems.append(f"Search space: {parameter.name} runs from {parameter.low} to {parameter.high}: "
                            "its low end must not be above its high end.")
            continue
        # vLLM's default (None) needs no check; a dict (speculative_config) is one value, not a platform table
        kept = [v for v in map(lambda v: engine_value(parameter.name, v), parameter.values_to_check())
                if v is not None and not isinstance(v, dict)]
        values[parameter.name] = kept or [None]
    found = {}
    for k in range(max((len(v) for v in values.values()), default=0)):
        document = PresetDocument(tomlkit.document())
        for name, kept in values.items():
            value = kept[min(k, len(kept) - 1)]
            if value is not None and name not in found:
                document.set_engine_value(name, value)
        for problem in check_in_process(document, machine, facts)[0]:
            found.setdefault(problem.key.removeprefix("engine."), problem)
    return problems + [f"Search space: {problem.message} Change the range or the choices, or untick {name}."
                       for name, problem in found.items()]
