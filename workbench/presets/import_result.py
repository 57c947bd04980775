"""What a command line's import found: the values kept (engine arguments, sampling, the environment, the
options kept for the record), one message per option that needs a word, and the conversions every form
shares (a value as written into the type vLLM's argument takes).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from workbench.presets.checks import check_value
from workbench.presets.command_out import GENERATION_KEYS
from workbench.presets.command_text import Option
from workbench.presets.trust import is_trusted

NON_OPTION, VALUE, CHECK, NOTE, ASK = "not an option", "bad value", "check", "note", "needs a value"
TRUE, FALSE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off"}
SAMPLING_TYPES = {"temperature": float, "top_p": float, "top_k": int, "max_tokens": int, "seed": int}
UNREAD = object()
TRUST_NOTE = "The model's own code runs only once you allow it for this model (asked when you import)."
FROM_GENERATION = {v: k for k, v in GENERATION_KEYS.items()}
# Where an option went (``Became.goes_to``); a refused one is a message of kind NON_OPTION or VALUE.
ENGINE, SERVER, SAMPLING, MODEL, BATCH, KEPT, ENVIRONMENT = (
    "engine argument", "server option (for Serve)", "sampling", "model", "batch input", "kept in [origin]",
    "environment")


@dataclass(frozen=True)
class Became:
    """What one option as written became: ``--tensor-parallel 4`` -> engine argument
    ``tensor_parallel_size = 4``."""

    option: str
    goes_to: str
    detail: str


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
    batch_limit: int | None = None  # the first N rows of batch_input (ms-swift's data.jsonl#N); None: all
    kept: dict = field(default_factory=dict)  # options with no workbench setting: flag -> value as written
    server: dict = field(default_factory=dict)  # the API server's options (host, port, ...), for Serve
    secrets: list[str] = field(default_factory=list)  # tokens named but never kept (HF_TOKEN, --api-key)
    vllm_version: str | None = None  # a container image's tag
    name: str | None = None  # a snippet's own name for the call (its variable)
    outcomes: list[Became] = field(default_factory=list)
    messages: list[ImportMessage] = field(default_factory=list)
    error: str | None = None

    @property
    def visible_devices(self) -> str | None:
        return self.env.get("CUDA_VISIBLE_DEVICES")

    def non_options(self) -> set[str]:
        return {m.flag for m in self.messages if m.kind == NON_OPTION}

    def became(self, option: Option | str, goes_to: str, detail: str) -> None:
        self.outcomes.append(Became(shown(option), goes_to, detail))

    def keep(self, option: Option, key: str, value) -> None:
        self.kept[key] = value
        self.became(option, KEPT, f"{key} = {value}")

    def say(self, option: Option | str, kind: str, reason: str) -> None:
        flag = option.flag if isinstance(option, Option) else option
        self.messages.append(ImportMessage(flag, kind, f"{shown(option)}: {reason}"))


def shown(option: Option | str) -> str:
    if isinstance(option, Option):
        return option.flag if option.value is None else f"{option.flag} {option.value}"
    return option


def engine_args() -> dict:
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


def set_engine(result: ImportedCommand, option: Option, name: str, raw, args: dict, non_option: str = "") -> None:
    """Keeps one engine value. ``non_option``: why this flag does nothing where it was written (kept all the
    same as vLLM's option); whatever else there is to say about the flag joins that one message."""
    arg = args[name]
    value, trouble = engine_value(option, name, raw, arg)
    if trouble is None and name == "trust_remote_code" and value and not is_trusted(result.model or ""):
        trouble = TRUST_NOTE
    if non_option or trouble:
        kind = NON_OPTION if non_option else NOTE if trouble == TRUST_NOTE else VALUE
        result.say(option, kind, " ".join(t for t in (non_option, trouble) if t))
    if value is UNREAD or value is None or (trouble is not None and trouble != TRUST_NOTE):
        return  # None: vLLM's default, which a preset says by leaving the name out
    if isinstance(value, (dict, list)):
        result.engine_tables[name] = value
    else:
        result.engine[name] = value
    result.became(option, ENGINE, f"{name} = {json.dumps(value) if isinstance(value, (dict, list)) else value}")


def engine_value(option: Option, name: str, raw, arg):
    """(value, None), or (UNREAD or the value, what is wrong with it)."""
    if raw is None and bool not in arg.types:
        return UNREAD, (f"{name} needs a value; write {option.flag} VALUE or {option.flag}=VALUE "
                         f"({arg.describe()})")
    try:
        value = True if raw is None else convert(raw, arg)
    except ValueError as exc:
        return UNREAD, f"{name}: {exc}"
    if isinstance(value, (dict, list)) or value is None:
        return value, None
    problem = check_value(name, value, arg)
    return value, problem.message if problem is not None else None


def set_sampling(result: ImportedCommand, option: Option, name: str, raw) -> None:
    kind = SAMPLING_TYPES[name]
    try:
        value = kind(raw) if isinstance(raw, str) else raw
        if kind is int and isinstance(value, float):
            raise ValueError
    except (TypeError, ValueError):
        result.say(option, VALUE, f"{name} takes a {kind.__name__}, not {raw!r}")
        return
    result.sampling[name] = value
    result.became(option, SAMPLING, f"{name} = {value}")


def generation_config(result: ImportedCommand, option: Option, raw) -> None:
    try:
        config = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        result.say(option, VALUE, "expected JSON, e.g. '{\"temperature\": 0.7, \"max_new_tokens\": 256}'")
        return
    for key, value in (config or {}).items():
        if key in FROM_GENERATION:
            set_sampling(result, option, FROM_GENERATION[key], value)
        else:
            result.keep(option, f"{option.flag}.{key}", value)
