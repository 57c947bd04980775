"""ms-swift's ``swift infer`` arguments (or a fragment of them): its own options, its ``--vllm_`` spellings of
vLLM's engine arguments and ``--vllm_engine_kwargs``."""
from __future__ import annotations

import difflib
import json

from workbench.presets.checks import NOT_VLLM_OPTIONS, non_option_reason
from workbench.presets.command_text import Option, parse_shell
from workbench.presets.import_result import NON_OPTION, NOTE, VALUE, ImportedCommand, set_engine, set_sampling
from workbench.presets.swift_options import (
    BATCH_INPUT, ENGINE_KWARGS, MODEL, OTHER_BACKEND_ONLY, RENAMED, SAMPLING, SAMPLING_NAMES, SWIFT_OPTIONS,
    VLLM_PREFIXED,
)


def swift_nearest(name: str) -> str:
    names = list(SWIFT_OPTIONS) + [f"vllm_{n}" for n in VLLM_PREFIXED]
    if name in RENAMED:
        return f" In ms-swift: {RENAMED[name]}."
    near = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
    return f" The nearest ms-swift option is --{near[0]}." if near else ""


def swift_option(result: ImportedCommand, option: Option, args: dict) -> None:
    name, raw = option.name, option.value
    if name.startswith("vllm_") and name[5:] in VLLM_PREFIXED and name[5:] in args:
        set_engine(result, option, name[5:], raw, args)
    elif name == ENGINE_KWARGS:
        try:
            kwargs = json.loads(raw or "")
        except ValueError:
            result.say(option, VALUE, "expected JSON, e.g. '{\"enable_chunked_prefill\": true}'")
            return
        for key, value in kwargs.items():
            inner = Option(f"{option.flag}.{key}", None, key)
            if key in args and key not in NOT_VLLM_OPTIONS:
                set_engine(result, inner, key, json.dumps(value) if isinstance(value, (dict, list)) else value, args)
            else:
                result.say(inner, NON_OPTION, non_option_reason(key, args))
    elif name in SWIFT_OPTIONS:
        swift_own(result, option, SWIFT_OPTIONS[name])
    elif name in OTHER_BACKEND_ONLY:
        result.say(option, NON_OPTION, f"not a vLLM option; {OTHER_BACKEND_ONLY[name]}.")
    elif name in args and name not in NOT_VLLM_OPTIONS:
        set_engine(result, option, name, raw, args,
                    non_option=f"not an ms-swift option: ms-swift hands vLLM's {name} on only inside --{ENGINE_KWARGS} "
                         f"'{{\"{name}\": ...}}'; the preset keeps it as vLLM's {name}.")
    else:
        reason = non_option_reason(name, args).removeprefix("not a vLLM option; ").removeprefix("not a vLLM option ")
        result.say(option, NON_OPTION, f"not an option of vLLM or ms-swift; {reason}{swift_nearest(name)}")


def swift_own(result: ImportedCommand, option: Option, goes_to: str) -> None:
    if option.value is None:
        result.say(option, VALUE, f"{option.flag} needs a value: write {option.flag} VALUE")
    elif goes_to == MODEL:
        result.model = option.value
    elif goes_to == BATCH_INPUT:
        result.batch_input = option.value
    elif goes_to == SAMPLING:
        set_sampling(result, option, SAMPLING_NAMES[option.name], option.value)
    else:
        result.kept[option.flag] = option.value
        if option.name == "infer_backend" and option.value != "vllm":
            result.say(option, NOTE, f"this line runs ms-swift's {option.value} backend, not vLLM; the preset keeps "
                                     "its vLLM settings")


def from_swift(result: ImportedCommand, words: list[str], args: dict) -> None:
    command = parse_shell(words)
    result.env.update(command.env)
    for option in command.options:
        swift_option(result, option, args)
