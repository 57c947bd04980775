"""Python ``LLM(...)`` calls (with the ``SamplingParams(...)`` they use), as written in docs and notebooks:
one command per call, in order, each named by the variable it is assigned to. Values are read with
``python_values`` (arithmetic, names bound earlier); one that is not a value is named on its own option
and the rest of the call is still read.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace

from workbench.presets.command_out import PYTHON
from workbench.presets.command_text import CommandTextError, Option
from workbench.presets.import_result import (
    ENGINE, NOTE, SAMPLING_TYPES, VALUE, ImportedCommand, ImportMessage, set_sampling, shown,
)
from workbench.presets.python_values import NotAValue, evaluate
from workbench.presets.serve_import import serve_option

RUNS = {"generate", "chat", "beam_search", "encode", "embed", "classify", "score", "reward"}


@dataclass
class Snippet:
    """What the walk through the snippet has found so far, in the order it is written."""

    first: ImportedCommand
    args: dict
    code: str  # the snippet as parsed: what each label quotes
    names: dict = field(default_factory=dict)  # name -> value, for the names bound to values so far
    env: dict = field(default_factory=dict)
    calls: list[ImportedCommand] = field(default_factory=list)
    llm_of: dict = field(default_factory=dict)  # variable -> the call last assigned to it
    sampling_of: dict = field(default_factory=dict)  # variable -> (SamplingParams node, names then)
    samplings: list = field(default_factory=list)  # every SamplingParams(...): (node, names then)
    used: dict = field(default_factory=dict)  # id(call) -> the SamplingParams it runs with
    where: dict = field(default_factory=dict)  # id(call) -> (its line, the variable it is assigned to)
    name_notes: dict = field(default_factory=dict)  # name -> what was said reading its value
    engine_args_of: dict = field(default_factory=dict)  # variable -> its EngineArgs(...) call


def unindented(text: str) -> str:
    """A snippet as docs and notebooks show it: indented (in a function, a list item) or with a REPL's
    ``>>> `` / ``... `` prompts, as the code itself. Comment lines do not count in the indent (Python
    reads none of theirs): a comment above an indented snippet still leaves it read."""
    lines = text.splitlines()
    if any(line.lstrip().startswith(">>>") for line in lines):
        lines = [re.sub(r"^\s*(>>>|\.\.\.)( |$)", "", line) for line in lines
                 if line.lstrip().startswith((">>>", "..."))]
    code = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    margin = min((len(line) - len(line.lstrip()) for line in code), default=0)
    return "\n".join(line[margin:] if not margin or line[:margin].isspace() else line.lstrip() for line in lines)


def from_python(first: ImportedCommand, text: str, args: dict) -> list[ImportedCommand]:
    """One ImportedCommand per ``LLM(...)`` call, ``first`` the first of them; CommandTextError when the
    text is not Python or has no call."""
    code = unindented(text)
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise CommandTextError(f"line {exc.lineno}: not valid Python ({exc.msg}); paste the whole LLM(...) call")
    snippet = Snippet(first, args, code)
    for statement in statements(tree):
        read_statement(snippet, statement)
    if not snippet.calls:
        raise CommandTextError("no LLM(...) call in this Python text: paste the code that creates the LLM")
    for number, call in enumerate(snippet.calls, start=1):
        chosen = snippet.used.get(id(call)) or (snippet.samplings[0] if len(snippet.samplings) == 1 else None)
        if chosen is not None:
            read_sampling(snippet, call, *chosen)
        call.name = call_name(snippet, call, number)
    return snippet.calls


def call_name(snippet: Snippet, call: ImportedCommand, number: int) -> str:
    """The variable the call is assigned to (with its line where several calls share it), or its place."""
    line, target = snippet.where[id(call)]
    if target is None:
        return f"LLM call {number} (line {line})"
    shared = sum(t == target for _, t in snippet.where.values()) > 1
    return f"{target} (line {line})" if shared else target


def statements(node: ast.AST):
    """Every statement, nested ones (a function's body, an ``if``'s branches) included, in written order."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt):
            yield child
        if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
            yield from statements(child)


def own_calls(statement: ast.stmt) -> list[ast.Call]:
    """The calls in a statement's own expressions (not in the statements nested in it), in written order."""
    found, todo = [], [c for c in ast.iter_child_nodes(statement) if not isinstance(c, (ast.stmt, ast.excepthandler))]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Call):
            found.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def called(node: ast.Call) -> str:
    return ast.unparse(node.func).split(".")[-1]


def read_statement(snippet: Snippet, statement: ast.stmt) -> None:
    target = assigned_to(statement)
    for node in own_calls(statement):
        whole = node is getattr(statement, "value", None) and target is not None
        if called(node) == "LLM":
            call = read_llm(snippet, node, target if whole else None)
            if whole:
                snippet.llm_of[target] = call
        elif called(node) == "EngineArgs" and whole:  # LLM(**asdict(engine_args)), as vLLM's examples do
            snippet.engine_args_of[target] = node
        elif called(node) == "SamplingParams":
            snippet.samplings.append((node, dict(snippet.names)))
            if whole:
                snippet.sampling_of[target] = snippet.samplings[-1]
        elif isinstance(node.func, ast.Attribute) and node.func.attr in RUNS:
            runs_with(snippet, node)
    if isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Subscript) \
            and "CUDA_VISIBLE_DEVICES" in ast.unparse(statement.targets[0]):
        try:
            snippet.env["CUDA_VISIBLE_DEVICES"] = str(evaluate(statement.value, snippet.names))
        except NotAValue:
            snippet.env.pop("CUDA_VISIBLE_DEVICES", None)
    bind(snippet, statement, target)


def assigned_to(statement: ast.stmt) -> str | None:
    """``llm = ...``, ``self.llm = ...``, ``llm: LLM = ...``: the variable, as written."""
    targets = statement.targets if isinstance(statement, ast.Assign) else \
        [statement.target] if isinstance(statement, ast.AnnAssign) else []
    if len(targets) == 1 and isinstance(targets[0], (ast.Name, ast.Attribute)):
        return ast.unparse(targets[0])
    return None


def bind(snippet: Snippet, statement: ast.stmt, target: str | None) -> None:
    """A name bound to a value is known from here on; one bound to anything else is no longer known."""
    if target is None or getattr(statement, "value", None) is None:
        return
    notes = []
    try:
        snippet.names[target] = evaluate(statement.value, snippet.names, notes)
        snippet.name_notes[target] = notes
    except NotAValue:
        snippet.names.pop(target, None)
        snippet.name_notes.pop(target, None)


def runs_with(snippet: Snippet, node: ast.Call) -> None:
    """``llm.generate(prompts, sampling_params)``: that call runs with that SamplingParams."""
    call = snippet.llm_of.get(ast.unparse(node.func.value))
    if call is None:
        return
    for value in node.args + [k.value for k in node.keywords]:
        if isinstance(value, ast.Call) and called(value) == "SamplingParams":
            snippet.used[id(call)] = (value, dict(snippet.names))
        elif isinstance(value, ast.Name) and value.id in snippet.sampling_of:
            snippet.used[id(call)] = snippet.sampling_of[value.id]


def read_llm(snippet: Snippet, node: ast.Call, target: str | None) -> ImportedCommand:
    call = snippet.first if not snippet.calls else ImportedCommand(snippet.first.source, form=PYTHON)
    call.env.update(snippet.env)
    snippet.where[id(call)] = (node.lineno, target)
    snippet.calls.append(call)
    read_arguments(snippet, call, node)
    return call


def read_arguments(snippet: Snippet, call: ImportedCommand, node: ast.Call) -> None:
    """An LLM(...) or EngineArgs(...) call's model and name=value arguments; ``**x`` read where ``x`` is an
    EngineArgs(...) of the snippet (``asdict(x)``, ``vars(x)``) or a dict of values bound earlier."""
    if node.args:
        keyword(snippet, call, ast.keyword("model", node.args[0], lineno=node.args[0].lineno), written=False)
    for item in node.keywords:
        if item.arg is not None:
            keyword(snippet, call, item)
            continue
        source = unpacked(snippet, item.value)
        if isinstance(source, ast.Call):
            read_arguments(snippet, call, source)
        elif isinstance(source, dict):
            for name, value in source.items():
                written = ast.parse(repr(value), mode="eval").body
                keyword(snippet, call, ast.keyword(str(name), written, lineno=item.value.lineno))
        else:  # LLM(**settings): the values are not in the text
            call.say(f"**{ast.unparse(item.value)}", VALUE, "not read: write each engine argument as "
                                                           "name=value in the call")


def unpacked(snippet: Snippet, node: ast.AST):
    """What ``**node`` spreads: an EngineArgs(...) call of the snippet, a dict of values, or None."""
    if isinstance(node, ast.Call) and called(node) in ("asdict", "vars") and len(node.args) == 1:
        node = node.args[0]
    name = ast.unparse(node)
    if name in snippet.engine_args_of:
        return snippet.engine_args_of[name]
    value = snippet.names.get(name)
    return value if isinstance(value, dict) and all(isinstance(k, str) for k in value) else None


def keyword(snippet: Snippet, call: ImportedCommand, item: ast.keyword, written: bool = True) -> None:
    """One ``name=value`` of the call, labelled as written (``tensor_parallel_size=2``)."""
    label = f"{item.arg}={as_written(snippet, item.value)}" if written else as_written(snippet, item.value)
    notes = []
    try:
        value = evaluate(item.value, snippet.names, notes)
    except NotAValue:
        call.messages.append(unreadable(item, label))
        return
    for name in {n.id for n in ast.walk(item.value) if isinstance(n, ast.Name)}:
        notes.extend(snippet.name_notes.get(name, ()))
    for note in dict.fromkeys(notes):
        call.say(label, NOTE, note)
    if value is None:
        call.became(label, ENGINE, f"{item.arg} = None: vLLM's default, which a preset says by leaving it out")
        return
    option = Option(item.arg, value, item.arg)
    outcomes, messages = len(call.outcomes), len(call.messages)
    serve_option(call, option, snippet.args)
    relabel(call, outcomes, messages, shown(option), label)


def as_written(snippet: Snippet, node: ast.AST) -> str:
    """A value as the snippet writes it; one written over several lines (with comments in it, perhaps) as
    Python reads it."""
    written = ast.get_source_segment(snippet.code, node) or ""
    return written if written and "\n" not in written else ast.unparse(node)


def unreadable(item: ast.keyword, label: str) -> ImportMessage:
    return ImportMessage(item.arg, VALUE, f"line {item.value.lineno}: {label} is not a value the import can "
                                          "read; write the value itself")


def relabel(call: ImportedCommand, outcomes: int, messages: int, old: str, new: str) -> None:
    """What the shared readers recorded for an option since ``outcomes``/``messages``, labelled ``new``."""
    call.outcomes[outcomes:] = [replace(b, option=new) if b.option == old else b for b in call.outcomes[outcomes:]]
    call.messages[messages:] = [replace(m, text=new + m.text[len(old):]) if m.text.startswith(old + ":") else m
                                for m in call.messages[messages:]]


def read_sampling(snippet: Snippet, call: ImportedCommand, node: ast.Call, names: dict) -> None:
    for item in node.keywords:
        if item.arg is None:
            call.say(f"**{ast.unparse(item.value)}", VALUE, "not read: write each sampling value as name=value")
            continue
        label = f"{item.arg}={as_written(snippet, item.value)}"
        try:
            value = evaluate(item.value, names)
        except NotAValue:
            call.messages.append(unreadable(item, label))
            continue
        if item.arg in SAMPLING_TYPES:
            set_sampling(call, Option(label, None, item.arg), item.arg, value)
        else:
            call.keep(Option(label, None, item.arg), f"SamplingParams.{item.arg}", value)
