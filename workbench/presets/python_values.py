"""The value of a Python expression as a snippet writes it: numbers, text (f-strings of such values too),
True/False/None, dict, list and tuple literals, ``+ - * / // % **`` and unary minus over them, names
bound to such values earlier in the snippet, and ``os.environ.get("X", "default")`` /
``os.getenv("X", "default")`` read as their default. Read over the syntax tree only: nothing in the
snippet runs.
"""
from __future__ import annotations

import ast
import operator

OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
             ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
SIGNS = {ast.USub: operator.neg, ast.UAdd: operator.pos}
ENVIRONMENT_READS = {"os.environ.get", "os.getenv", "environ.get", "getenv"}
MAX_TEXT = 1 << 16  # "x" * 10**9 is no setting
MAX_DIGITS = 40  # 2 ** 10**10 neither


class NotAValue(ValueError):
    """An expression the import cannot read as a value (a call, an unknown name, ``args.model``)."""

    def __init__(self, node: ast.AST):
        super().__init__(ast.unparse(node))
        self.node = node


def evaluate(node: ast.AST, names: dict, notes: list[str] | None = None):
    """``node``'s value; NotAValue naming the part that is not one. ``names``: the snippet's names bound so
    far; ``notes``: where a value read in place of another (an environment variable's default) is said."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool, type(None))):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, (ast.List, ast.Tuple)) and not any(isinstance(e, ast.Starred) for e in node.elts):
        return [evaluate(e, names, notes) for e in node.elts]  # a tuple too: the value vLLM's argument takes
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {evaluate(k, names, notes): evaluate(v, names, notes) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp) and type(node.op) in SIGNS:
        operand = evaluate(node.operand, names, notes)
        if isinstance(operand, (int, float)) and not isinstance(operand, bool):
            return SIGNS[type(node.op)](operand)
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        return _arithmetic(node, evaluate(node.left, names, notes), evaluate(node.right, names, notes))
    if isinstance(node, ast.JoinedStr):
        return "".join(_formatted(part, names, notes) for part in node.values)
    if isinstance(node, ast.Call):
        return _environment_default(node, names, notes)
    raise NotAValue(node)


def _formatted(part: ast.AST, names: dict, notes: list[str] | None) -> str:
    """One piece of an f-string: its text, or ``{name}`` with no conversion or format."""
    if isinstance(part, ast.FormattedValue):
        if part.conversion != -1 or part.format_spec is not None:
            raise NotAValue(part)
        value = evaluate(part.value, names, notes)
        if isinstance(value, (dict, list)):
            raise NotAValue(part)
        return str(value)
    return evaluate(part, names, notes)


def _arithmetic(node: ast.BinOp, left, right):
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left, right))
    texts = isinstance(node.op, ast.Add) and all(isinstance(v, str) for v in (left, right))
    repeated = isinstance(node.op, ast.Mult) and {type(left), type(right)} == {str, int}
    if isinstance(node.op, ast.Pow) and numbers and abs(right) > 256:
        raise NotAValue(node)
    if not (numbers or texts or repeated):
        raise NotAValue(node)
    if repeated and (left if isinstance(left, int) else right) * len(left if isinstance(left, str) else right) \
            > MAX_TEXT:
        raise NotAValue(node)
    try:
        value = OPERATORS[type(node.op)](left, right)
    except (ArithmeticError, ValueError):  # 1 / 0, 0 ** -1
        raise NotAValue(node) from None
    if isinstance(value, int) and abs(value).bit_length() > MAX_DIGITS * 4:
        raise NotAValue(node)
    if isinstance(value, str) and len(value) > MAX_TEXT:
        raise NotAValue(node)
    return value


def _environment_default(node: ast.Call, names: dict, notes: list[str] | None):
    """``os.environ.get("X", "default")``: the default, and a note that X is this machine's to say."""
    if ast.unparse(node.func) not in ENVIRONMENT_READS or len(node.args) != 2 or node.keywords:
        raise NotAValue(node)
    variable, default = evaluate(node.args[0], names, notes), evaluate(node.args[1], names, notes)
    if notes is not None:
        notes.append(f"line {node.lineno}: {ast.unparse(node)} read as its default {default!r}; the "
                     f"environment variable {variable} of the machine that ran it is not known here")
    return default
