"""A ``vllm serve`` line (or a ``docker run`` of vLLM's image, or a fragment of options) read by vLLM's
own parser, one option at a time so that each gets its own outcome, then all together so that what
vLLM merges (dotted options) is merged as vLLM merges it.

The words come from ``command_text.shell_words``. What each option becomes: an engine argument, a
server option (kept for Serve), sampling (``--override-generation-config``), the model, the
environment, or a message (refused, with vLLM's reason and the fix; or a value the text does not hold).
"""
from __future__ import annotations

import dataclasses
import difflib
import json
import re
from enum import Enum
from pathlib import Path

from workbench.presets.checks import NOT_VLLM_OPTIONS, non_option_reason
from workbench.presets.command_text import ENV, NUMBER, CommandTextError, Option
from workbench.presets.container_line import is_container_line, read_container_line
from workbench.presets.import_result import (
    ASK, ENGINE, ENVIRONMENT, FALSE, MODEL, NON_OPTION, NOTE, SERVER, TRUE, VALUE, ImportedCommand, generation_config,
    set_engine,
)
from workbench.presets.vllm_history import OLD_LIMIT_FORM, removed_note

SECRET = re.compile(r"(TOKEN|SECRET|PASSWORD|API_KEY|ACCESS_KEY)$", re.IGNORECASE)
VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")
PLACEHOLDER = re.compile(r"<[^<>\s]+>")
SECRET_OPTIONS = {"api_key"}
SERVER_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server")


def _parser():
    from workbench.engine.vllm_plugin import serve_parser

    return serve_parser


# ------------------------------------------------------------------ the words around the options
def _env_prefix(words: list[str]) -> tuple[dict[str, str], list[str]]:
    env, index = {}, 0
    while index < len(words) and ENV.match(words[index]):
        name, _, value = words[index].partition("=")
        env[name] = value
        index += 1
    return env, words[index:]


def _after_program(words: list[str]) -> list[str]:
    """The arguments of ``vllm serve ...`` / ``python -m vllm.entrypoints.openai.api_server ...``; a
    fragment (options only) as it is."""
    for index, word in enumerate(words[:4]):
        if word == "serve" or word in SERVER_MODULES:
            return words[index + 1:]
        if word.startswith("-") and word != "-m":
            return words[index:]
    return words[1:] if words and words[0].split("/")[-1] == "vllm" else words


def _take_env(result: ImportedCommand, env: dict[str, str]) -> None:
    for name, value in env.items():
        if SECRET.search(name):
            result.secrets.append(name)
            result.say(f"{name}=…", NOTE, f"{name}'s value is not kept, stored or exported (a secret): vLLM reads "
                                          "it from the environment the app starts in, or huggingface_hub's token "
                                          "file")
        else:
            result.env[name] = value
            result.became(f"{name}={value}", ENVIRONMENT, f"{name}={value}")


def _masked(text: str) -> str:
    """``text`` with each secret's value (``HF_TOKEN=hf_...``, ``--api-key sk-...``) replaced by a
    reference to the environment (``HF_TOKEN=$HF_TOKEN``), so that it is never stored or exported."""
    text = re.sub(r"\b([A-Za-z_][A-Za-z0-9_]*)=(\"[^\"]*\"|'[^']*'|[^\s\"']+)",
                  lambda m: f"{m.group(1)}=${m.group(1)}" if SECRET.search(m.group(1)) else m.group(0), text)
    return re.sub(r"(--api[-_]key[= ]+)(\"[^\"]*\"|'[^']*'|\S+)", r"\1$VLLM_API_KEY", text)


def _expand(word: str, env: dict[str, str]) -> str:
    known = {k: v for k, v in env.items() if not SECRET.search(k) and not VARIABLE.search(v)}
    return VARIABLE.sub(lambda m: known.get(m.group(1), m.group(0)), word)


def _unknown_values(words: list[str]) -> list[str]:
    """The shell variables and <placeholders> left in ``words``: values the text does not hold."""
    found = []
    for word in words:
        found += [f"${m.group(1)}" for m in VARIABLE.finditer(word)] + PLACEHOLDER.findall(word)
    return found


def _ask(result: ImportedCommand, option: Option | str, unknown: list[str]) -> None:
    names = ", ".join(dict.fromkeys(unknown))
    result.say(option, ASK, f"{names} is not in the text (a shell variable or a placeholder): write its value "
                            f"in its place, or an 'export NAME=value' line above the command, and the import "
                            "reads it")


# ------------------------------------------------------------------ options
def _groups(words: list[str]) -> tuple[list[str], list[list[str]]]:
    """The positional words before the first option, and each option with the words after it."""
    positional, groups = [], []
    for word in words:
        if word.startswith("-") and not NUMBER.match(word) and word != "-":
            groups.append([word])
        elif groups:
            groups[-1].append(word)
        else:
            positional.append(word)
    return positional, groups


def _as_option(group: list[str]) -> Option:
    flag, _, value = group[0].partition("=")
    value = " ".join(([value] if "=" in group[0] else []) + group[1:]) or None
    return Option(flag, value, flag.lstrip("-").replace("-", "_"))


def _refusal(result: ImportedCommand, option: Option, message: str, args: dict) -> None:
    if message.startswith("unrecognized arguments"):
        dest = option.name.split(".")[0]
        flags = sorted({f.lstrip("-").replace("-", "_") for f in _parser().option_strings()})
        reason = removed_note(dest, result.vllm_version)
        if reason is None:
            reason = non_option_reason(dest, args) if dest in NOT_VLLM_OPTIONS else _nearest(dest, flags)
        result.say(option, NON_OPTION, reason)
    elif "expected one argument" in message or "expected at least one argument" in message:
        result.say(option, VALUE, f"{option.flag} needs a value (vLLM's parser: {message}); write {option.flag} VALUE")
    elif message.startswith("ambiguous option"):
        result.say(option, VALUE, f"vLLM's parser: {message}. Write the option's whole name")
    elif "invalid" in message:
        result.say(option, VALUE, f"vLLM's parser: {message}; write a value of the option's kind (vllm serve "
                                  f"--help={option.name.split('.')[0].replace('_', '-')} describes it)")
    else:
        result.say(option, VALUE, f"vLLM's parser: {message}")


def _nearest(name: str, flags: list[str]) -> str:
    near = difflib.get_close_matches(name, flags, n=3, cutoff=0.6)
    hint = f" Did you mean {' or '.join('--' + n.replace('_', '-') for n in near)}?" if near else ""
    return f"not an option of vllm serve (neither an engine argument nor a server option).{hint}"


def _read_group(result: ImportedCommand, group: list[str], args: dict):
    """(the words vLLM accepts of this option, what it sets), or None when it is refused."""
    parser, option = _parser(), _as_option(group)
    if option.name == "limit_mm_per_prompt" and option.value and OLD_LIMIT_FORM.match(option.value):
        new = json.dumps({k: int(v) for k, v in (p.split("=") for p in option.value.split(","))})
        result.say(option, NOTE, f"older vLLM's key=value form; vLLM today takes JSON only: read as --limit-mm-per-prompt "
                                 f"'{new}'")
        group = [option.flag, new]
    try:
        dests = parser.parse_words(group)
    except parser.ServeLineError as exc:
        _refusal(result, option, str(exc), args)
        return None
    if "model_tag" in dests:  # a word the option does not take (a bare flag's stray value)
        return _stray(result, option, group, dests)
    return group, dests


def _stray(result: ImportedCommand, option: Option, group: list[str], dests: dict):
    """A switch given a value: ``--enable-chunked-prefill false`` (ms-swift's way) is read as meant, with the
    spelling vLLM takes; any other stray word is named."""
    word = dests.pop("model_tag")
    switch = [d for d, v in dests.items() if isinstance(v, bool)]
    if switch and word.lower() in TRUE | FALSE:
        dest, flag = switch[0], "--" + switch[0].replace("_", "-")
        dests[dest] = word.lower() in TRUE
        result.say(option, NOTE, f"vllm serve takes no value after this switch and would refuse the line; read as "
                                 f"{dest} = {dests[dest]} (vLLM's spelling: {flag if dests[dest] else '--no-' + flag[2:]})")
        return [], dests  # not parsed again with the rest: the value is the one read here
    taken = " ".join(w for w in group if w != word)
    result.say(word, NON_OPTION, f"stands alone after {taken}: each value follows its flag; put it after the flag "
                                 "it belongs to, or remove it")
    return [w for w in group if w != word], dests


def _config_words(result: ImportedCommand, option: Option, base_dir: Path | None) -> list[str]:
    path = Path(option.value or "").expanduser()
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    if not option.value or not path.is_file():
        result.say(option, ASK, f"vLLM reads the rest of this command's options from {option.value or 'a YAML file'}, "
                                "which is not beside the command: open the command's file from the folder that "
                                "holds it (Open file…), or paste the YAML's lines as a command of their own")
        result.keep(option, "--config", option.value)
        return []
    try:
        return _parser().config_file_words(str(path))
    except (OSError, _parser().ServeLineError) as exc:
        result.say(option, VALUE, f"{exc}; fix the file and open the command again")
        return []


def _route(result: ImportedCommand, option: Option, dest: str, value, args: dict) -> None:
    if dest in ("model", "model_tag"):
        result.model = value
        result.became(option, MODEL, str(value))
    elif dest == "override_generation_config":
        generation_config(result, option, value)
    elif dest in args and dest not in NOT_VLLM_OPTIONS and value is None:
        result.became(option, ENGINE, f"{dest}: vLLM's default (a preset says so by leaving it out)")
    elif dest in args and dest not in NOT_VLLM_OPTIONS:
        set_engine(result, option, dest, _plain(_config_leaves(dest, value), args[dest]), args)
    elif dest in SECRET_OPTIONS:
        result.secrets.append(option.flag)
        result.say(option.flag, NOTE, "the API key is not kept, stored or exported; Serve asks for it")
    else:
        value = _plain_server(value)
        result.server[dest] = value
        result.became(option, SERVER, f"{dest} = {json.dumps(value)}")


def _plain_server(value):
    """A server option's value as plain data: vLLM's ``--lora-modules`` action gives ``LoRAModulePath``
    objects, kept as the fields the text set (name, path, and the base model where one is given)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain_server(getattr(value, f.name)) for f in dataclasses.fields(value)
                if getattr(value, f.name) not in (None, f.default)}
    return [_plain_server(item) for item in value] if isinstance(value, list) else value


def _config_leaves(dest: str, value):
    """A config option's JSON with each text leaf in the type vLLM's config class gives it: vLLM's parser
    reads a dotted option's value as JSON or else keeps the text (``-cc.use_inductor_graph_partition=True``
    gives "True"), which ``CompilationConfig``... then reads as the field's type (True)."""
    if not isinstance(value, dict):
        return value
    action = next((a for a in _parser().serve_parser()._actions if a.dest == dest), None)
    read = getattr(getattr(action, "type", None), "__wrapped__", None)  # vLLM's own converter
    if read is None:
        return value
    try:
        config = read(json.dumps(value))
    except Exception:  # noqa: BLE001 (vLLM refuses it: the value is reported as written)
        return value
    return _typed_like(value, config)


def _typed_like(written, config):
    if isinstance(written, dict):
        field = config.get if isinstance(config, dict) else lambda key: getattr(config, key, None)
        return {key: _typed_like(item, field(key)) for key, item in written.items()}
    if not isinstance(written, str) or isinstance(config, Enum):
        return written
    if isinstance(config, bool):
        return written.strip().lower() in TRUE if written.strip().lower() in TRUE | FALSE else written
    if isinstance(config, (int, float)) and NUMBER.match(written.strip()):
        number = float(written)
        return int(number) if isinstance(config, int) and number.is_integer() else number
    return written


def _plain(value, arg):
    """vLLM's parser leaves some values as the text of an enum (``-O3`` -> '3'); a preset keeps the number."""
    int_like = any(isinstance(t, type) and issubclass(t, int) and t is not bool for t in arg.types)
    return int(value) if isinstance(value, str) and value.isdigit() and int_like else value


def _read_options(result: ImportedCommand, words: list[str], args: dict, base_dir: Path | None) -> None:
    positional, groups = _groups(words)
    for index, word in enumerate(positional):
        if unknown := _unknown_values([word]):
            _ask(result, word, unknown)
        elif index == 0:
            result.model = word
            result.became(word, MODEL, word)
        else:
            result.say(word, NON_OPTION, "stands alone: the model is the one word after 'vllm serve'; each other "
                                         "value follows its flag")
    accepted = []
    while groups:
        group = groups.pop(0)
        option = _as_option(group)
        if unknown := _unknown_values(group):
            _ask(result, option, unknown)
        elif option.name == "config":
            groups = _groups(_config_words(result, option, base_dir))[1] + groups
        elif (read := _read_group(result, group, args)) is not None:
            accepted.append((option, *read))
    _apply(result, accepted, args)


def _apply(result: ImportedCommand, accepted: list, args: dict) -> None:
    """All accepted options parsed together (vLLM merges dotted ones), each value routed once."""
    parser = _parser()
    try:
        final = parser.parse_words([word for _, group, _ in accepted for word in group])
    except parser.ServeLineError:  # each alone passed, together not: take them one by one
        final = {}
        for _, _, dests in accepted:
            final.update(dests)
    done = set()
    for option, _, dests in accepted:
        for dest in dests:
            if dest in done:
                merged = isinstance(dests[dest], (dict, list))
                result.became(option, ENGINE if dest in args else SERVER,
                              f"merged into {dest}" if merged else f"{dest} again: vLLM takes the last one given")
                continue
            done.add(dest)
            _route(result, option, dest, final.get(dest, dests[dest]), args)


def read_serve_line(result: ImportedCommand, words: list[str], args: dict, base_dir: Path | None) -> None:
    env, words = _env_prefix(words)
    if is_container_line(words):
        line = read_container_line(words)
        env.update(line.env)
        result.vllm_version = line.vllm_version
        for flag in (f for f in line.flags if not f.startswith(("-e ", "--env "))):  # the env: below
            result.became(_masked(flag), "container", f"{line.runtime}'s own flag, not vLLM's (kept with the command)")
        version = f" (vLLM {line.vllm_version})" if line.vllm_version else ""
        result.became(f"{line.image}:{line.tag or 'latest'}", "container", f"the image{version}")
        words = line.words
    else:
        words = _after_program(words)
    _take_env(result, env)
    _read_options(result, [_expand(word, env) for word in words], args, base_dir)
    result.source = _masked(result.source)


def read_yaml_config(result: ImportedCommand, text: str, args: dict) -> None:
    """vLLM's YAML config (what ``--config`` names), read by vLLM's own loader."""
    import tempfile

    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CommandTextError(f"not a valid YAML config ({exc}); write one 'name: value' a line") from exc
    if not isinstance(data, dict):
        raise CommandTextError("a YAML config is 'name: value' lines; this is not")
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", encoding="utf-8") as file:
        file.write(text)
        file.flush()
        try:
            words = _parser().config_file_words(file.name)
        except _parser().ServeLineError as exc:
            raise CommandTextError(f"{exc}; write one 'name: value' a line") from exc
    if found := re.search(r"CUDA_VISIBLE_DEVICES=(\S+)", text):
        result.env["CUDA_VISIBLE_DEVICES"] = found.group(1)
    _read_options(result, words, args, None)
