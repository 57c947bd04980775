"""ms-swift's ``swift infer`` arguments (or a fragment of them): its own options, its ``--vllm_`` spellings of
vLLM's engine arguments and ``--vllm_engine_kwargs``, and the names earlier releases had.

A line is read for the ms-swift releases its spellings fit (:class:`Era`): an old name (``--dtype``,
``--gpu_memory_utilization``) is imported as today's option with a note naming the release that renamed it,
unless the line also has a spelling that only releases after the last one taking the old name know (then no
release runs the line, and the old name is named as ms-swift would refuse it). ``--max_model_len`` is vLLM's
on a line written for a release before 3.10 and ms-swift's own model length on any other.
"""
from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass

from workbench.presets.checks import NOT_VLLM_OPTIONS, non_option_reason
from workbench.presets.command_text import Option, parse_shell
from workbench.presets.import_result import (
    BATCH, ENGINE, FALSE, MODEL as THE_MODEL, NON_OPTION, NOTE, TRUE, VALUE, ImportedCommand, set_engine,
    set_sampling,
)
from workbench.presets.swift_options import (
    BATCH_INPUT, ENGINE_KWARGS, FIRST_ROWS_SINCE, MODEL, MODEL_LEN_VLLM_UNTIL, NEW_SINCE, OLD_NAMES, OLD_VALUES,
    OTHER_BACKEND_ONLY, PIXEL_VARIABLES, REMOVED, SAMPLING, SAMPLING_NAMES, SWIFT_OPTIONS, V2_LAST, VLLM_PREFIXED,
)


def release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


@dataclass(frozen=True)
class Era:
    """The ms-swift releases a line's spellings fit: from ``earliest`` (the first release taking its newest
    spelling, ``newest``) to ``latest`` (the last release taking its oldest, ``oldest``); None: nothing says."""

    earliest: str | None = None
    newest: str | None = None
    latest: str | None = None
    oldest: str | None = None

    def before(self, version: str) -> bool:
        """Written for a release before ``version``."""
        return self.latest is not None and release(self.latest) < release(version)


@dataclass(frozen=True)
class SwiftLine:
    """What the whole line says that one option's reading needs: its era and its options as written."""

    era: Era = Era()
    options: tuple[Option, ...] = ()

    def value_of(self, name: str) -> str | None:
        """The value a flag has on the line ("true" for a bare flag); None when the line has no such flag."""
        return next(("true" if o.value is None else o.value for o in reversed(self.options) if o.name == name), None)


def last_taken(option: Option) -> str | None:
    """The last release that took this spelling; None while today's ms-swift takes it."""
    if option.name in OLD_NAMES:
        return OLD_NAMES[option.name][2]
    if option.name in REMOVED or (option.name == "model_type" and "-" in (option.value or "")):
        return V2_LAST  # ms-swift 2's model types named one model each: qwen2-72b-instruct
    return None


def line_era(options: list[Option]) -> Era:
    """The releases a line fits. An old name that no release takes together with the line's newest spelling
    (``--use_flash_attn`` beside ``--vllm_max_model_len``) is refused, and does not count."""
    earliest = newest = latest = oldest = None
    for option in options:
        first = NEW_SINCE.get(option.name)
        if first and (earliest is None or release(first) > release(earliest)):
            earliest, newest = first, option.flag
    for option in options:
        last = last_taken(option)
        if last and (earliest is None or release(last) >= release(earliest)) and \
                (latest is None or release(last) < release(latest)):
            latest, oldest = last, option.flag
    return Era(earliest, newest, latest, oldest)


def swift_nearest(name: str) -> str:
    names = list(SWIFT_OPTIONS) + [f"vllm_{n}" for n in VLLM_PREFIXED]
    near = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
    return f" The nearest ms-swift option is --{near[0]}." if near else ""


def swift_option(result: ImportedCommand, option: Option, args: dict, line: SwiftLine = SwiftLine()) -> None:
    name, raw = option.name, option.value
    if name in OLD_NAMES:
        old_name(result, option, args, line.era)
    elif name in REMOVED:
        removed, now = REMOVED[name]
        result.say(option, NON_OPTION, f"ms-swift {removed} removed this option (ms-swift 2 had it); today: {now}.")
    elif name == "max_model_len":
        model_len(result, option, line)
    elif name.startswith("vllm_") and name[5:] in VLLM_PREFIXED and name[5:] in args:
        set_engine(result, option, name[5:], raw, args)
    elif name == ENGINE_KWARGS:
        engine_kwargs(result, option, args)
    elif name in SWIFT_OPTIONS:
        swift_own(result, option, SWIFT_OPTIONS[name], line)
    elif name in OTHER_BACKEND_ONLY:
        result.say(option, NON_OPTION, f"not a vLLM option; {OTHER_BACKEND_ONLY[name]}.")
    elif name in args and name not in NOT_VLLM_OPTIONS:
        set_engine(result, option, name, raw, args,
                   non_option=f"not an ms-swift option: ms-swift hands vLLM's {name} on only inside --{ENGINE_KWARGS} "
                              f"'{{\"{name}\": ...}}'; the preset keeps it as vLLM's {name}.")
    else:
        reason = non_option_reason(name, args).removeprefix("not a vLLM option; ").removeprefix("not a vLLM option ")
        result.say(option, NON_OPTION, f"not an option of vLLM or ms-swift; {reason}{swift_nearest(name)}")


def engine_kwargs(result: ImportedCommand, option: Option, args: dict) -> None:
    try:
        kwargs = json.loads(option.value or "")
    except ValueError:
        result.say(option, VALUE, "expected JSON, e.g. '{\"enable_chunked_prefill\": true}'")
        return
    for key, value in kwargs.items():
        inner = Option(f"{option.flag}.{key}", None, key)
        if key in args and key not in NOT_VLLM_OPTIONS:
            set_engine(result, inner, key, json.dumps(value) if isinstance(value, (dict, list)) else value, args)
        else:
            result.say(inner, NON_OPTION, non_option_reason(key, args))


# ------------------------------------------------------------------ earlier releases' names
def old_name(result: ImportedCommand, option: Option, args: dict, era: Era) -> None:
    """An earlier release's name: imported as today's option with a note, or, where the line also has a
    spelling no release that took the old name knows, named as ms-swift refuses it."""
    today, renamed, last = OLD_NAMES[option.name]
    taken = f"; ms-swift {renamed} to {last} still took the old name" if release(last) >= release(renamed) else ""
    renamed_it = f"ms-swift {renamed} renamed this option --{today}{taken}"
    value = today_value(option)
    spelled = f"--{today}" if value is None else f"--{today} {value}"
    dropped = value is None and option.value is not None  # the old default, today's when the option is left out
    if era.earliest is not None and release(era.earliest) > release(last):
        write = f"leave it out ({option.value} was the default)" if dropped else f"write {spelled}"
        said = f"{renamed_it}, and no release takes it together with {era.newest} (ms-swift {era.earliest} on): {write}"
        if today.startswith("vllm_") and today[5:] in args:
            set_engine(result, option, today[5:], option.value, args,
                       non_option=f"{said}; the preset keeps it as vLLM's {today[5:]}.")
        else:
            reason = (non_option_reason(option.name, args) or "").removeprefix("not a vLLM option; ")
            result.say(option, NON_OPTION, f"{said}." + (f" Not a vLLM option either: {reason}" if reason else ""))
        return
    if dropped:
        result.say(option, NOTE, f"{renamed_it}; {option.value} was the default, which today's ms-swift has when "
                                 f"--{today} is left out")
        return
    checkpoint = (" (a LoRA checkpoint; a full or merged one is the model itself: then choose "
                  f"{option.value} as the model)") if option.name == "ckpt_dir" else ""
    result.say(option, NOTE, f"{renamed_it}: imported as {spelled}{checkpoint}")
    if option.name in OLD_VALUES:  # spelled otherwise today: kept in today's spelling, shown as written
        result.keep(option, f"--{today}", value)
    else:
        swift_option(result, Option(option.flag, value, today), args)


def today_value(option: Option) -> str | None:
    """The value as today's option spells it; None where the old one meant today's default."""
    if option.value is None or option.name not in OLD_VALUES:
        return option.value
    word = option.value.strip().lower()
    word = "true" if word in TRUE else "false" if word in FALSE else word
    return OLD_VALUES[option.name].get(word, option.value)


def model_len(result: ImportedCommand, option: Option, line: SwiftLine) -> None:
    """Today's --max_model_len: ms-swift's own model length (the RoPE scaling factor), not vLLM's."""
    if option.value is None:
        result.say(option, VALUE, f"{option.flag} needs a value: write {option.flag} VALUE")
        return
    result.keep(option, option.flag, option.value)
    vllms = "this line's --vllm_max_model_len" if line.value_of("vllm_max_model_len") is not None else \
        f"--vllm_max_model_len {option.value}"
    result.say(option, NOTE, f"ms-swift's own model length (with --rope_scaling, the RoPE scaling factor), kept in "
                             f"[origin]; before ms-swift {MODEL_LEN_VLLM_UNTIL} it was also vLLM's max_model_len, "
                             f"which today is {vllms}")


def old_model_len(result: ImportedCommand, option: Option, args: dict, era: Era) -> None:
    """--max_model_len on a line written for a release that handed it to vLLM."""
    set_engine(result, option, "max_model_len", option.value, args)
    if option.value is None:
        return  # set_engine said it needs a value
    result.say(option, NOTE, f"vLLM's max_model_len on a line written for ms-swift before {MODEL_LEN_VLLM_UNTIL} "
                             f"(its {era.oldest} is an older release's spelling); today write --vllm_max_model_len "
                             f"{option.value} (--max_model_len is now ms-swift's own model length, for RoPE scaling)")


# ------------------------------------------------------------------ ms-swift's own options
def swift_own(result: ImportedCommand, option: Option, goes_to: str, line: SwiftLine) -> None:
    if option.value is None:
        result.say(option, VALUE, f"{option.flag} needs a value: write {option.flag} VALUE")
    elif goes_to == MODEL:
        result.model = option.value
        result.became(option, THE_MODEL, option.value)
    elif goes_to == BATCH_INPUT:
        batch_input(result, option, line)
    elif goes_to == SAMPLING:
        set_sampling(result, option, SAMPLING_NAMES[option.name], option.value)
    elif option.name == "max_length" and option.value.strip() == "-1":
        result.say(option, NOTE, "ms-swift 2 read -1 as no limit; from ms-swift 3.0.0 that is --max_length left out "
                                 "(the model's own length), and -1 is a limit no prompt fits: left out")
    else:
        result.keep(option, f"--{option.name}", option.value)  # today's spelling of an older release's name
        if option.name == "columns":
            column_mapping(result, option)
        if option.name == "infer_backend" and option.value != "vllm":
            result.say(option, NOTE, f"this line runs ms-swift's {option.value} backend, not vLLM; the preset keeps "
                                     "its vLLM settings")
        if option.name == "model_type" and "-" in option.value and \
                line.value_of("model") is None and line.value_of("model_id_or_path") is None:
            result.say(option, NOTE, "ms-swift 2's name of one registered model; ms-swift 3.0.0 names the model "
                                     "by --model <hub id or path> (--model_type is now the model's family, e.g. "
                                     "qwen2): the preset names no model, choose it in the workbench")


PROMPT_NAMES = ("query", "prompt", "instruction", "question")  # ms-swift's preprocessor reads these as the prompt


def column_mapping(result: ImportedCommand, option: Option) -> None:
    """``--columns '{"question": "query"}'``: the dataset's columns renamed for ms-swift's preprocessor. The batch
    reads the file's own names: the column renamed to the prompt is the field to choose there."""
    try:
        mapping = json.loads(option.value)
    except ValueError:
        mapping = None
    if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
        result.say(option, VALUE, "--columns takes a JSON object of the dataset's column names and the names ms-swift "
                                  "reads, e.g. '{\"question\": \"query\", \"answer\": \"response\"}'")
        return
    prompt = next((column for column, name in mapping.items() if name in PROMPT_NAMES), None)
    if prompt is not None:
        result.say(option, NOTE, f"ms-swift reads the dataset's {prompt!r} column as the prompt: in the Batch tab, "
                                 "open the file as \"Records: a prompt field you name\" (a CSV by its column) with "
                                 f"{prompt!r}")


DATASET_SAMPLE = re.compile(r"^(?P<path>.+)#(?P<rows>[^#/]*)$")


def batch_input(result: ImportedCommand, option: Option, line: SwiftLine) -> None:
    """``--val_dataset data.jsonl#2000`` (``repo:subset#N`` too): the path, and the first N rows."""
    first, *others = option.value.split()
    if others:
        result.say(option, NOTE, f"names {len(others) + 1} datasets; the workbench's batch reads one: the preset "
                                 f"keeps {first} (left out: {', '.join(others)})")
    match = DATASET_SAMPLE.match(first)
    path, rows = (match["path"], match["rows"]) if match else (first, None)
    result.batch_input = path
    if rows is None:
        result.became(option, BATCH, path)
        return
    if not rows.isdigit() or int(rows) == 0:
        result.became(option, BATCH, f"{path}, all rows")
        result.say(option, VALUE, f"after # comes how many rows to take, a whole number above 0, not {rows!r}: "
                                  f"e.g. {path}#2000; the preset takes all rows of {path}")
        return
    result.batch_limit = int(rows)
    result.became(option, BATCH, f"{path}, the first {int(rows):,} rows")
    random = random_sample(option, line)
    if random:
        result.say(option, NOTE, f"{random} takes {int(rows):,} rows of {path} at random; the preset's batch "
                                 f"takes the first {int(rows):,}")


def random_sample(option: Option, line: SwiftLine) -> str | None:
    """Who would sample the rows at random rather than take the first ones (None: nobody)."""
    shuffle = "val_dataset_shuffle" if option.name == "val_dataset" else "dataset_shuffle"
    said = line.value_of(shuffle)
    said = None if said is None else said.strip().lower()
    if said in TRUE or (said is None and option.name == "dataset"):
        return f"ms-swift (--{shuffle} {'true' if said else 'true by default'})"
    if said is None and line.era.before(FIRST_ROWS_SINCE):
        return f"ms-swift before {FIRST_ROWS_SINCE} (this line's {line.era.oldest} is an older release's spelling)"
    return None


# ------------------------------------------------------------------ ms-swift's image environment
def image_pixels(result: ImportedCommand) -> None:
    """``MAX_PIXELS=1003520`` (``MIN_PIXELS``) before the command or on an ``export`` line: ms-swift resizes
    each image to at most (at least) that many pixels before vLLM sees it; the preset gives vLLM's
    processor the same bound, ``mm_processor_kwargs``' ``max_pixels`` (``min_pixels``). Where the line's
    ``--vllm_engine_kwargs`` sets it too, the tighter of the two is what the images get."""
    kwargs = dict(result.engine_tables.get("mm_processor_kwargs") or {})
    for variable, key in PIXEL_VARIABLES.items():
        written = result.env.get(variable)
        if written is None:
            continue
        shown = f"{variable}={written}"
        if not written.strip().isdigit() or int(written) == 0:
            result.say(shown, VALUE, f"a whole number of pixels above 0, e.g. {variable}=1003520 (1,280 tokens an "
                                     f"image on Qwen2.5-VL); the preset leaves {key} to the model's processor")
            continue
        pixels = int(written)
        if key in kwargs and kwargs[key] != pixels:
            tighter = min if key == "max_pixels" else max
            result.say(shown, NOTE, f"--{ENGINE_KWARGS} gives vLLM's processor {key} {kwargs[key]}, and ms-swift "
                                    f"resizes to {pixels} first: the preset keeps {tighter(pixels, kwargs[key])}")
            pixels = tighter(pixels, kwargs[key])
        kwargs[key] = pixels
        result.became(shown, ENGINE, f"mm_processor_kwargs.{key} = {pixels} (ms-swift resizes each image to "
                                     f"{'at most' if key == 'max_pixels' else 'at least'} that many pixels; "
                                     "vLLM's processor, given it, does the same)")
    if kwargs:
        result.engine_tables["mm_processor_kwargs"] = kwargs


def from_swift(result: ImportedCommand, words: list[str], args: dict) -> None:
    command = parse_shell(words)
    result.env.update(command.env)
    line = SwiftLine(line_era(command.options), tuple(command.options))
    vllm_len = line.value_of("vllm_max_model_len") is not None
    for option in command.options:
        if option.name == "max_model_len" and line.era.before(MODEL_LEN_VLLM_UNTIL) and not vllm_len:
            old_model_len(result, option, args, line.era)
        else:
            swift_option(result, option, args, line)
    image_pixels(result)
