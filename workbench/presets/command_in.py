"""A command line in any of the forms ``command_out`` writes (``vllm serve``, vLLM's YAML config, a Python
``LLM(...)`` call, ms-swift's ``swift infer`` arguments or a fragment of them), made into a preset.

Each flag that is not an option of vLLM (nor of ms-swift, on a swift line: ``swift_options``) gets exactly
one message, with the nearest real option; everything else is kept: engine arguments go to ``[engine]``,
``--model`` to the model choice, ``--val_dataset`` to the batch input, ``--max_new_tokens``,
``--temperature``... to ``[sampling]``, ``CUDA_VISIBLE_DEVICES`` and the options the workbench has no
setting for to ``[origin]``, with the command as given. ``trust_remote_code`` is kept, and still needs
the user's word for that model (``presets.trust``) before it applies.
"""
from __future__ import annotations

import ast
import difflib
import json
import re
from dataclasses import dataclass, field

import tomlkit

from workbench.presets.checks import NOT_VLLM_OPTIONS, check_tensor_parallel, check_value, non_option_reason
from workbench.presets.command_out import GENERATION_KEYS, PYTHON, SERVE, SWIFT, YAML
from workbench.presets.command_text import (
    CommandTextError, Option, looks_like_python, looks_like_yaml, parse_shell, shell_words, split_blocks,
)
from workbench.presets.document import PresetDocument
from workbench.presets.swift_options import (
    BATCH_INPUT, ENGINE_KWARGS, MODEL, OTHER_BACKEND_ONLY, RENAMED, SAMPLING, SAMPLING_NAMES, SWIFT_OPTIONS,
    VLLM_PREFIXED,
)
from workbench.presets.trust import is_trusted

NON_OPTION, VALUE, CHECK, NOTE = "not an option", "bad value", "check", "note"
TRUE, FALSE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off"}
SAMPLING_TYPES = {"temperature": float, "top_p": float, "top_k": int, "max_tokens": int, "seed": int}
_UNREAD = object()
TRUST_NOTE = "The model's own code runs only once you allow it for this model (asked when you import)."
FROM_GENERATION = {v: k for k, v in GENERATION_KEYS.items()}


@dataclass(frozen=True)
class ImportMessage:
    flag: str  # as written
    kind: str  # NON_OPTION, VALUE, CHECK or NOTE
    text: str

    def __str__(self) -> str:
        return self.text


@dataclass
class ImportedCommand:
    """One command as understood; ``error`` when the text could not be read at all."""

    source: str
    form: str = ""
    model: str | None = None
    engine: dict = field(default_factory=dict)
    engine_tables: dict = field(default_factory=dict)  # dict-valued engine arguments (limit_mm_per_prompt, ...)
    sampling: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    batch_input: str | None = None
    kept: dict = field(default_factory=dict)  # options with no workbench setting: flag -> value as written
    messages: list[ImportMessage] = field(default_factory=list)
    error: str | None = None

    @property
    def visible_devices(self) -> str | None:
        return self.env.get("CUDA_VISIBLE_DEVICES")

    def non_options(self) -> set[str]:
        return {m.flag for m in self.messages if m.kind == NON_OPTION}

    def say(self, option: Option | str, kind: str, reason: str) -> None:
        if isinstance(option, Option):
            shown = option.flag if option.value is None else f"{option.flag} {option.value}"
            self.messages.append(ImportMessage(option.flag, kind, f"{shown}: {reason}"))
        else:
            self.messages.append(ImportMessage(option, kind, f"{option}: {reason}"))


def _args() -> dict:
    from workbench.engine.vllm_plugin.engine_args import engine_arg_types

    return engine_arg_types()


# ------------------------------------------------------------------ values
def convert(raw, arg):
    """A value as written (text, or a YAML/Python value) in the type vLLM's argument takes; ValueError
    naming what was expected."""
    if not isinstance(raw, str):
        return raw
    kinds = arg.types
    if arg.optional and raw.strip().lower() in ("none", "null"):
        return None
    if bool in kinds:
        word = raw.strip().lower()
        if word in TRUE | FALSE:
            return word in TRUE
        raise ValueError(f"expected true or false, not {raw!r}")
    for kind in (int, float):
        if kind in kinds:
            try:
                return kind(raw)
            except ValueError:
                if str not in kinds and dict not in kinds:
                    raise ValueError(f"expected a number ({kind.__name__}), not {raw!r}") from None
    if dict in kinds or list in kinds:
        try:
            return json.loads(raw)
        except ValueError:
            raise ValueError(f"expected JSON, e.g. '{{\"image\": 5}}', not {raw!r}") from None
    return raw


def _set_engine(result: ImportedCommand, option: Option, name: str, raw, args: dict, non_option: str = "") -> None:
    """Keeps one engine value. ``non_option``: why this flag does nothing where it was written (kept all the
    same as vLLM's option); whatever else there is to say about the flag joins that one message."""
    arg = args[name]
    value, trouble = _engine_value(option, name, raw, arg)
    if trouble is None and name == "trust_remote_code" and value and not is_trusted(result.model or ""):
        trouble = TRUST_NOTE
    if non_option or trouble:
        kind = NON_OPTION if non_option else NOTE if trouble == TRUST_NOTE else VALUE
        result.say(option, kind, " ".join(t for t in (non_option, trouble) if t))
    if value is _UNREAD or value is None or (trouble is not None and trouble != TRUST_NOTE):
        return  # None: vLLM's default, which a preset says by leaving the name out
    if isinstance(value, (dict, list)):
        result.engine_tables[name] = value
    else:
        result.engine[name] = value


def _engine_value(option: Option, name: str, raw, arg):
    """(value, None), or (_UNREAD or the value, what is wrong with it)."""
    if raw is None and bool not in arg.types:
        return _UNREAD, (f"{name} needs a value; write {option.flag} VALUE or {option.flag}=VALUE "
                         f"({arg.describe()})")
    try:
        value = True if raw is None else convert(raw, arg)
    except ValueError as exc:
        return _UNREAD, f"{name}: {exc}"
    if isinstance(value, (dict, list)) or value is None:
        return value, None
    problem = check_value(name, value, arg)
    return value, problem.message if problem is not None else None


def _set_sampling(result: ImportedCommand, option: Option, name: str, raw) -> None:
    kind = SAMPLING_TYPES[name]
    try:
        value = kind(raw) if isinstance(raw, str) else raw
        if kind is int and isinstance(value, float):
            raise ValueError
    except (TypeError, ValueError):
        result.say(option, VALUE, f"{name} takes a {kind.__name__}, not {raw!r}")
        return
    result.sampling[name] = value


def _generation_config(result: ImportedCommand, option: Option, raw) -> None:
    try:
        config = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        result.say(option, VALUE, "expected JSON, e.g. '{\"temperature\": 0.7, \"max_new_tokens\": 256}'")
        return
    for key, value in (config or {}).items():
        if key in FROM_GENERATION:
            _set_sampling(result, option, FROM_GENERATION[key], value)
        else:
            result.kept[f"{option.flag}.{key}"] = value


# ------------------------------------------------------------------ vLLM's own forms
def _serve_option(result: ImportedCommand, option: Option, args: dict) -> None:
    from workbench.engine.vllm_plugin.engine_args import cli_spellings, server_options

    name = cli_spellings().get(option.flag, option.name)
    raw = option.value
    if name.startswith("no_") and name[3:] in args and bool in args[name[3:]].types and raw is None:
        name, raw = name[3:], "false"
    if name == "model":
        result.model = raw
    elif name == "override_generation_config":
        _generation_config(result, option, raw)
    elif name in args and name not in NOT_VLLM_OPTIONS:
        _set_engine(result, option, name, raw, args)
    elif name in server_options() or name == "config":
        result.kept[option.flag] = raw
    else:
        result.say(option, NON_OPTION, non_option_reason(name, args))


def _from_serve(result: ImportedCommand, words: list[str], args: dict) -> None:
    command = parse_shell(words)
    result.env.update(command.env)
    program = command.program
    if "serve" in program and program.index("serve") + 1 < len(program):
        result.model = program[program.index("serve") + 1]
    for option in command.options:
        _serve_option(result, option, args)


def _from_yaml(result: ImportedCommand, text: str, args: dict) -> None:
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
        _serve_option(result, Option(str(key), raw, str(key).replace("-", "_")), args)


def _literal(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise CommandTextError(f"line {node.lineno}: {ast.unparse(node)} is not a literal value; write the value "
                               "itself (a number, text, True/False)") from None


def _from_python(result: ImportedCommand, text: str, args: dict) -> None:
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise CommandTextError(f"line {exc.lineno}: not valid Python ({exc.msg}); paste the whole LLM(...) call")
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript) \
                and "CUDA_VISIBLE_DEVICES" in ast.unparse(node.targets[0]):
            result.env["CUDA_VISIBLE_DEVICES"] = str(_literal(node.value))
        if not isinstance(node, ast.Call):
            continue
        called = ast.unparse(node.func).split(".")[-1]
        if called == "LLM":
            if node.args:
                result.model = _literal(node.args[0])
            for keyword in node.keywords:
                if keyword.arg is None:  # LLM(**settings): the values are not in the text
                    result.say(f"**{ast.unparse(keyword.value)}", VALUE, "not read: write each engine argument "
                                                                          "as name=value in the call")
                    continue
                _serve_option(result, Option(keyword.arg, _literal(keyword.value), keyword.arg), args)
        elif called == "SamplingParams":
            for keyword in node.keywords:
                option = Option(keyword.arg, None, keyword.arg)
                if keyword.arg in SAMPLING_TYPES:
                    _set_sampling(result, option, keyword.arg, _literal(keyword.value))
                else:
                    result.kept[f"SamplingParams.{keyword.arg}"] = _literal(keyword.value)


# ------------------------------------------------------------------ ms-swift
def _swift_nearest(name: str) -> str:
    names = list(SWIFT_OPTIONS) + [f"vllm_{n}" for n in VLLM_PREFIXED]
    if name in RENAMED:
        return f" In ms-swift: {RENAMED[name]}."
    near = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
    return f" The nearest ms-swift option is --{near[0]}." if near else ""


def _swift_option(result: ImportedCommand, option: Option, args: dict) -> None:
    name, raw = option.name, option.value
    if name.startswith("vllm_") and name[5:] in VLLM_PREFIXED and name[5:] in args:
        _set_engine(result, option, name[5:], raw, args)
    elif name == ENGINE_KWARGS:
        try:
            kwargs = json.loads(raw or "")
        except ValueError:
            result.say(option, VALUE, "expected JSON, e.g. '{\"enable_chunked_prefill\": true}'")
            return
        for key, value in kwargs.items():
            inner = Option(f"{option.flag}.{key}", None, key)
            if key in args and key not in NOT_VLLM_OPTIONS:
                _set_engine(result, inner, key, json.dumps(value) if isinstance(value, (dict, list)) else value, args)
            else:
                result.say(inner, NON_OPTION, non_option_reason(key, args))
    elif name in SWIFT_OPTIONS:
        _swift_own(result, option, SWIFT_OPTIONS[name])
    elif name in OTHER_BACKEND_ONLY:
        result.say(option, NON_OPTION, f"not a vLLM option; {OTHER_BACKEND_ONLY[name]}.")
    elif name in args and name not in NOT_VLLM_OPTIONS:
        _set_engine(result, option, name, raw, args,
                    non_option=f"not an ms-swift option: ms-swift hands vLLM's {name} on only inside --{ENGINE_KWARGS} "
                         f"'{{\"{name}\": ...}}'; the preset keeps it as vLLM's {name}.")
    else:
        reason = non_option_reason(name, args).removeprefix("not a vLLM option; ").removeprefix("not a vLLM option ")
        result.say(option, NON_OPTION, f"not an option of vLLM or ms-swift; {reason}{_swift_nearest(name)}")


def _swift_own(result: ImportedCommand, option: Option, goes_to: str) -> None:
    if option.value is None:
        result.say(option, VALUE, f"{option.flag} needs a value: write {option.flag} VALUE")
    elif goes_to == MODEL:
        result.model = option.value
    elif goes_to == BATCH_INPUT:
        result.batch_input = option.value
    elif goes_to == SAMPLING:
        _set_sampling(result, option, SAMPLING_NAMES[option.name], option.value)
    else:
        result.kept[option.flag] = option.value
        if option.name == "infer_backend" and option.value != "vllm":
            result.say(option, NOTE, f"this line runs ms-swift's {option.value} backend, not vLLM; the preset keeps "
                                     "its vLLM settings")


def _from_swift(result: ImportedCommand, words: list[str], args: dict) -> None:
    command = parse_shell(words)
    result.env.update(command.env)
    for option in command.options:
        _swift_option(result, option, args)


# ------------------------------------------------------------------ the whole
def detect_form(text: str, words: list[str] | None) -> str:
    if looks_like_python(text):
        return PYTHON
    if words is None:
        return YAML
    if "swift" in words or any(w.startswith("--vllm_") for w in words):
        return SWIFT
    return SERVE


def import_block(block: str) -> ImportedCommand:
    """One command; a text that cannot be read gives an ImportedCommand with ``error`` set."""
    result = ImportedCommand(block)
    try:
        args = _args()
        if looks_like_python(block):
            result.form = PYTHON
            _from_python(result, block, args)
        elif looks_like_yaml(block):
            result.form = YAML
            _from_yaml(result, block, args)
        else:
            words = shell_words(block)
            result.form = detect_form(block, words)
            (_from_swift if result.form == SWIFT else _from_serve)(result, words, args)
    except CommandTextError as exc:
        result.error = str(exc)
    if result.visible_devices is not None and "tensor_parallel_size" in result.engine:
        from workbench.presets.machine import Machine

        roomy = Machine("cuda", 1 << 10, 0, 0, 0)  # the command's own GPUs, whatever this machine has
        problem = check_tensor_parallel(result.engine["tensor_parallel_size"], roomy, result.visible_devices)
        if problem is not None:
            result.say("CUDA_VISIBLE_DEVICES", CHECK, problem.message)
    return result


def import_text(text: str) -> list[ImportedCommand]:
    """Each command of a paste or a file (commands separated by blank lines); CommandTextError when there
    is none at all."""
    if not text.strip():
        raise CommandTextError("nothing to import: paste a command line (vllm serve ..., swift infer ..., an "
                               "LLM(...) call or a YAML config) or open a file that holds one")
    blocks = [text] if looks_like_python(text) or looks_like_yaml(text) else split_blocks(text)
    if not blocks:
        raise CommandTextError("only comments: there is no command to import")
    return [import_block(block) for block in blocks]


def to_document(imported: ImportedCommand, name: str) -> PresetDocument:
    """The preset an imported command becomes (a user preset once saved); the command is kept verbatim."""
    doc = tomlkit.document()
    doc.add(tomlkit.comment(f"Imported from a {imported.form} command line; [origin] keeps the command as given."))
    preset = tomlkit.table()
    preset["name"] = name
    preset["description"] = f"Imported from a {imported.form} command line."
    doc["preset"] = preset
    doc["engine"] = tomlkit.table()
    for key, value in imported.engine.items():
        doc["engine"][key] = value
    doc["sampling"] = tomlkit.table()
    for key, value in imported.sampling.items():
        doc["sampling"][key] = value
    origin = tomlkit.table()
    origin["form"] = imported.form
    origin["command"] = tomlkit.string(imported.source, multiline=True)
    for key, value in (("model", imported.model), ("visible_devices", imported.visible_devices),
                       ("batch_input", imported.batch_input)):
        if value is not None:
            origin[key] = value
    for key, table in (("env", imported.env), ("kept", imported.kept), ("engine_tables", imported.engine_tables)):
        if table:
            origin[key] = {k: (json.dumps(v) if v is None else v) for k, v in table.items()}
    doc["origin"] = origin
    return PresetDocument(doc)
