"""A Python ``LLM(...)`` call (with ``SamplingParams(...)`` beside it), as written in docs and notebooks."""
from __future__ import annotations

import ast
import re
import textwrap

from workbench.presets.command_text import CommandTextError, Option
from workbench.presets.import_result import SAMPLING_TYPES, VALUE, ImportedCommand, set_sampling
from workbench.presets.serve_import import serve_option


def literal(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise CommandTextError(f"line {node.lineno}: {ast.unparse(node)} is not a literal value; write the value "
                               "itself (a number, text, True/False)") from None


def unindented(text: str) -> str:
    """A snippet as docs and notebooks show it: indented (in a function, a list item) or with a REPL's
    ``>>> `` / ``... `` prompts, as the code itself."""
    lines = text.splitlines()
    if any(line.lstrip().startswith(">>>") for line in lines):
        lines = [re.sub(r"^\s*(>>>|\.\.\.)( |$)", "", line) for line in lines
                 if line.lstrip().startswith((">>>", "..."))]
    return textwrap.dedent("\n".join(lines))


def from_python(result: ImportedCommand, text: str, args: dict) -> None:
    try:
        tree = ast.parse(unindented(text))
    except SyntaxError as exc:
        raise CommandTextError(f"line {exc.lineno}: not valid Python ({exc.msg}); paste the whole LLM(...) call")
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript) \
                and "CUDA_VISIBLE_DEVICES" in ast.unparse(node.targets[0]):
            result.env["CUDA_VISIBLE_DEVICES"] = str(literal(node.value))
        if not isinstance(node, ast.Call):
            continue
        called = ast.unparse(node.func).split(".")[-1]
        if called == "LLM":
            if node.args:
                result.model = literal(node.args[0])
            for keyword in node.keywords:
                if keyword.arg is None:  # LLM(**settings): the values are not in the text
                    result.say(f"**{ast.unparse(keyword.value)}", VALUE, "not read: write each engine argument "
                                                                          "as name=value in the call")
                    continue
                serve_option(result, Option(keyword.arg, literal(keyword.value), keyword.arg), args)
        elif called == "SamplingParams":
            for keyword in node.keywords:
                option = Option(keyword.arg, None, keyword.arg)
                if keyword.arg in SAMPLING_TYPES:
                    set_sampling(result, option, keyword.arg, literal(keyword.value))
                else:
                    result.kept[f"SamplingParams.{keyword.arg}"] = literal(keyword.value)
