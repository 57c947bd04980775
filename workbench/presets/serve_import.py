"""vLLM's own forms of a command: a ``vllm serve`` line and vLLM's YAML config."""
from __future__ import annotations

from pathlib import Path

from workbench.presets.checks import NOT_VLLM_OPTIONS, non_option_reason
from workbench.presets.command_text import Option
from workbench.presets import serve_line
from workbench.presets.import_result import MODEL, NON_OPTION, ImportedCommand, generation_config, set_engine


def serve_option(result: ImportedCommand, option: Option, args: dict) -> None:
    from workbench.engine.vllm_plugin.engine_args import cli_spellings, server_options

    name = cli_spellings().get(option.flag, option.name)
    raw = option.value
    if name.startswith("no_") and name[3:] in args and bool in args[name[3:]].types and raw is None:
        name, raw = name[3:], "false"
    if name == "model":
        result.model = raw
        result.became(option, MODEL, str(raw))
    elif name == "override_generation_config":
        generation_config(result, option, raw)
    elif name in args and name not in NOT_VLLM_OPTIONS:
        set_engine(result, option, name, raw, args)
    elif name in server_options() or name == "config":
        result.keep(option, option.flag, raw)
    else:
        result.say(option, NON_OPTION, non_option_reason(name, args))


def from_serve(result: ImportedCommand, words: list[str], args: dict, base_dir: Path | None = None) -> None:
    serve_line.read_serve_line(result, words, args, base_dir)


def from_yaml(result: ImportedCommand, text: str, args: dict) -> None:
    serve_line.read_yaml_config(result, text, args)
