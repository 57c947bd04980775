"""vLLM's own forms of a command: a ``vllm serve`` line and vLLM's YAML config."""
from __future__ import annotations

import json
import re

from workbench.presets.checks import NOT_VLLM_OPTIONS, non_option_reason
from workbench.presets.command_text import CommandTextError, Option, parse_shell
from workbench.presets.import_result import NON_OPTION, ImportedCommand, generation_config, set_engine


def serve_option(result: ImportedCommand, option: Option, args: dict) -> None:
    from workbench.engine.vllm_plugin.engine_args import cli_spellings, server_options

    name = cli_spellings().get(option.flag, option.name)
    raw = option.value
    if name.startswith("no_") and name[3:] in args and bool in args[name[3:]].types and raw is None:
        name, raw = name[3:], "false"
    if name == "model":
        result.model = raw
    elif name == "override_generation_config":
        generation_config(result, option, raw)
    elif name in args and name not in NOT_VLLM_OPTIONS:
        set_engine(result, option, name, raw, args)
    elif name in server_options() or name == "config":
        result.kept[option.flag] = raw
    else:
        result.say(option, NON_OPTION, non_option_reason(name, args))


def from_serve(result: ImportedCommand, words: list[str], args: dict) -> None:
    command = parse_shell(words)
    result.env.update(command.env)
    program = command.program
    if "serve" in program and program.index("serve") + 1 < len(program):
        result.model = program[program.index("serve") + 1]
    for option in command.options:
        serve_option(result, option, args)


def from_yaml(result: ImportedCommand, text: str, args: dict) -> None:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CommandTextError(f"not a valid YAML config ({exc}); write one 'name: value' a line") from exc
    if not isinstance(data, dict):
        raise CommandTextError("a YAML config is 'name: value' lines; this is not")
    if found := re.search(r"CUDA_VISIBLE_DEVICES=(\S+)", text):
        result.env["CUDA_VISIBLE_DEVICES"] = found.group(1)
    for key, value in data.items():
        raw = json.dumps(value) if isinstance(value, (dict, list)) else \
            (str(value).lower() if isinstance(value, bool) else value if value is None else str(value))
        serve_option(result, Option(str(key), raw, str(key).replace("-", "_")), args)
