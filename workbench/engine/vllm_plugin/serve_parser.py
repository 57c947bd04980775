"""vLLM's own ``vllm serve`` argument parser, used to read a pasted command line the way vLLM reads it.

Supported vLLM versions: 0.26 to 0.33. Read here: ``FlexibleArgumentParser`` (``vllm.utils.
argparse_utils``, or ``vllm.utils`` before 0.27) and the serve parser vLLM builds from it with
``make_arg_parser`` (``vllm.entrypoints.launchers.cli_args`` from 0.30, ``vllm.entrypoints.openai.
cli_args`` before): the model positional, ``FrontendArgs`` (the API server's options) and
``AsyncEngineArgs.add_cli_args`` (the engine's). Where neither is there, ``EngineArgs.add_cli_args``
alone. Whatever the parser does with what is written (dotted options merged into one JSON value,
``-O3``, underscores, unique-prefix abbreviations, ``--no-`` negations, ``--x=value``, JSON values,
multi-value options, ``--config file.yaml``) is vLLM's; only the defaults are left out, so that a
result holds what the line set and nothing else. Imported lazily (vLLM takes seconds to import).
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import json
from functools import lru_cache

PLAIN = (str, int, float, bool, list, dict, type(None))
NOT_SETTINGS = frozenset({"model_tag", "config", "help"})  # dests that are not a setting of either side


class ServeLineError(ValueError):
    """vLLM's parser refused what was written: its own message (``unrecognized arguments: ...``,
    ``argument --max-model-len: invalid ... value``, ``ambiguous option: ...``)."""


def _flexible_parser_class():
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:  # vLLM 0.26
        from vllm.utils import FlexibleArgumentParser
    return FlexibleArgumentParser


def _make_serve_parser(parser):
    for module in ("vllm.entrypoints.launchers.cli_args", "vllm.entrypoints.openai.cli_args"):
        try:
            make_arg_parser = __import__(module, fromlist=["make_arg_parser"]).make_arg_parser
        except (ImportError, AttributeError):
            continue
        return make_arg_parser(parser)
    from vllm.engine.arg_utils import EngineArgs

    return EngineArgs.add_cli_args(parser)


def _as_written(convert):
    """vLLM's converter for one option, with a config object (``CompilationConfig``...) given back as the
    JSON that was written, so that a preset keeps plain values."""
    @functools.wraps(convert)  # argparse names the converter in its messages
    def read(text):
        value = convert(text)
        if isinstance(value, PLAIN):
            return value
        try:
            return json.loads(text)
        except ValueError:
            return str(getattr(value, "value", text))
    return read


@lru_cache(maxsize=1)
def serve_parser():
    """vLLM's serve parser with every default suppressed (a namespace holds only what was written) and
    its errors raised as ``ServeLineError`` instead of ending the process."""
    base = _flexible_parser_class()

    class QuietParser(base):
        def error(self, message):
            raise ServeLineError(message)

        def exit(self, status=0, message=None):
            raise ServeLineError(message or f"vLLM's parser stopped (status {status})")

    parser = _make_serve_parser(QuietParser(prog="vllm serve", add_help=False))
    for action in parser._actions:
        action.default = argparse.SUPPRESS
        if callable(action.type):
            action.type = _as_written(action.type)
    return parser


def parse_words(words: list[str]) -> dict[str, object]:
    """What vLLM's serve parser makes of ``words`` (the arguments after ``vllm serve``): each setting the
    words give, by its dest name (``tensor_parallel_size``, ``port``, ``model_tag``...)."""
    try:
        return vars(serve_parser().parse_args(list(words)))
    except ServeLineError:
        raise
    except (ValueError, TypeError, argparse.ArgumentError) as exc:  # vLLM's own checks in parse_args
        raise ServeLineError(str(exc)) from exc


def config_file_words(path: str) -> list[str]:
    """The arguments a ``--config`` YAML file stands for, as vLLM's parser reads it (OSError, or
    ServeLineError for a file vLLM refuses)."""
    try:
        return list(serve_parser().load_config_file(path))
    except OSError:
        raise
    except Exception as exc:  # vLLM raises ValueError / yaml errors for a malformed file
        raise ServeLineError(f"vLLM could not read {path}: {exc}") from exc


@lru_cache(maxsize=1)
def server_dests() -> frozenset[str]:
    """The serve parser's settings that belong to the API server, not to ``EngineArgs``: host, port,
    api_key, the tool and reasoning parsers, AsyncEngineArgs' request logging..."""
    from vllm.engine.arg_utils import EngineArgs

    engine = {field.name for field in dataclasses.fields(EngineArgs)}
    dests = {action.dest for action in serve_parser()._actions}
    return frozenset(dests - engine - NOT_SETTINGS)


def option_strings() -> dict[str, str]:
    """Every flag the serve parser knows -> its dest."""
    return {flag: action.dest for action in serve_parser()._actions for flag in action.option_strings}
