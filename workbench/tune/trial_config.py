"""A trial's engine configuration from its parameters, and the search space checked against vLLM's own
``EngineArgs`` (through the presets' checks) before a search starts."""
from __future__ import annotations

from workbench.engine.spec import EngineConfig
from workbench.presets.checks import check_name, check_on_machine, check_value
from workbench.presets.machine import Machine
from workbench.presets.model_facts import ModelFacts
from workbench.tune.space import engine_value
from workbench.tune.values import SearchSpace


def trial_config(base: EngineConfig, space: SearchSpace, params: dict) -> EngineConfig:
    """``base`` with every parameter of the space at vLLM's default unless the trial sets it, first come
    first served (as ``vllm serve`` schedules): trial 0, which sets none, is vLLM's defaults."""
    changes = [(p.name, None) for p in space.parameters]
    changes += [(name, engine_value(name, value)) for name, value in params.items()]
    changes.append(("scheduling_policy", None))
    return base.with_changes(changes)


def config_problem(config: EngineConfig) -> str:
    """Why vLLM would refuse this combination at its start (found without starting it), or ""."""
    kwargs = config.engine_kwargs(on_cpu=False)
    batched = kwargs.get("max_num_batched_tokens")
    if batched is not None and kwargs.get("enable_chunked_prefill") is False and batched < config.max_model_len:
        return (f"max_num_batched_tokens {batched} is below max_model_len {config.max_model_len} with chunked "
                "prefill off: a prompt of full length could never be scheduled (vLLM refuses it)")
    seqs = kwargs.get("max_num_seqs")
    if batched is not None and seqs is not None and batched < seqs:
        return f"max_num_batched_tokens {batched} is below max_num_seqs {seqs} (vLLM refuses it)"
    return ""


def space_problems(space: SearchSpace, machine: Machine, facts: ModelFacts | None) -> list[str]:
    """Each searched value vLLM's ``EngineArgs`` (or this machine) rejects, named with its fix; [] for none."""
    from workbench.engine.vllm_plugin.engine_args import engine_arg_types

    args = engine_arg_types()
    problems = []
    for parameter in space.searched():
        found = check_name(parameter.name, parameter.values_to_check(), args)
        if found is None and parameter.kind in ("int", "float") and parameter.low > parameter.high:
            problems.append(f"Search space: {parameter.name} runs from {parameter.low} to {parameter.high}: "
                            "its low end must not be above its high end.")
            continue
        for value in () if found is not None else parameter.values_to_check():
            value = engine_value(parameter.name, value)
            found = (check_value(parameter.name, value, args[parameter.name]) if value is not None else None) \
                or check_on_machine(parameter.name, value, machine, facts)
            if found is not None:
                break
        if found is not None:
            problems.append(f"Search space: {found.message} Change the range or the choices, or untick "
                            f"{parameter.name}.")
    return problems
