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

import json
from pathlib import Path

import tomlkit

from workbench.presets.checks import check_tensor_parallel
from workbench.presets.command_out import PYTHON, SERVE, SWIFT, YAML
from workbench.presets.command_text import CommandTextError, looks_like_python, looks_like_yaml, shell_words, split_blocks
from workbench.presets.document import PresetDocument, inline
from workbench.presets.import_result import (  # noqa: F401 (the kinds, for the dialog and the tests)
    ASK, CHECK, NON_OPTION, NOTE, VALUE, ImportedCommand, ImportMessage, engine_args,
)
from workbench.presets.python_import import from_python
from workbench.presets.serve_import import from_serve, from_yaml
from workbench.presets.swift_import import from_swift


def detect_form(text: str, words: list[str] | None) -> str:
    if looks_like_python(text):
        return PYTHON
    if words is None:
        return YAML
    if "swift" in words or any(w.startswith("--vllm_") for w in words):
        return SWIFT
    return SERVE


def import_block(block: str, base_dir: Path | None = None) -> ImportedCommand:
    """One command (of a Python snippet, its first ``LLM(...)`` call). ``base_dir``: the folder a file
    named by the command (``--config x.yaml``) is looked for in."""
    return import_commands(block, base_dir)[0]


def import_commands(block: str, base_dir: Path | None = None) -> list[ImportedCommand]:
    """The commands of one block: one, or one per ``LLM(...)`` call of a Python snippet; a text that cannot
    be read gives an ImportedCommand with ``error`` set."""
    result = ImportedCommand(block)
    results = [result]
    try:
        args = engine_args()
        if looks_like_python(block):
            result.form = PYTHON
            results = from_python(result, block, args)
        elif looks_like_yaml(block):
            result.form = YAML
            from_yaml(result, block, args)
        else:
            words = shell_words(block)
            result.form = detect_form(block, words)
            if result.form == SWIFT:
                from_swift(result, words, args)
            else:
                from_serve(result, words, args, base_dir)
    except CommandTextError as exc:
        result.error = str(exc)
    for each in results:
        check_devices(each)
    return results


def check_devices(result: ImportedCommand) -> None:
    if result.visible_devices is not None and "tensor_parallel_size" in result.engine:
        from workbench.presets.machine import Machine

        roomy = Machine("cuda", 1 << 10, 0, 0, 0)  # the command's own GPUs, whatever this machine has
        problem = check_tensor_parallel(result.engine["tensor_parallel_size"], roomy, result.visible_devices)
        if problem is not None:
            result.say("CUDA_VISIBLE_DEVICES", CHECK, problem.message)


def import_text(text: str, base_dir: Path | None = None) -> list[ImportedCommand]:
    """Each command of a paste or a file (commands separated by blank lines; each LLM(...) call of a Python
    snippet); CommandTextError when there is none at all."""
    if not text.strip():
        raise CommandTextError("nothing to import: paste a command line (vllm serve ..., swift infer ..., an "
                               "LLM(...) call or a YAML config) or open a file that holds one")
    blocks = [text] if looks_like_python(text) or looks_like_yaml(text) else split_blocks(text)
    if not blocks:
        raise CommandTextError("only comments: there is no command to import")
    return [result for block in blocks for result in import_commands(block, base_dir)]


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
    tables = engine_tables_of(imported)
    for key, value in tables.items():
        doc["engine"][key] = inline(value)
    if reads_images(tables):
        preset["needs_vision_model"] = True
    doc["sampling"] = tomlkit.table()
    for key, value in imported.sampling.items():
        doc["sampling"][key] = value
    origin = tomlkit.table()
    origin["form"] = imported.form
    origin["command"] = tomlkit.string(imported.source, multiline=True)
    for key, value in (("model", imported.model), ("visible_devices", imported.visible_devices),
                       ("batch_input", imported.batch_input), ("batch_limit", imported.batch_limit),
                       ("vllm_version", imported.vllm_version)):
        if value is not None:
            origin[key] = value
    others = {k: v for k, v in imported.engine_tables.items() if k not in tables}  # lists, config objects
    for key, table in (("env", imported.env), ("kept", imported.kept), ("engine_tables", others),
                       ("server", imported.server)):
        if table:
            origin[key] = {k: (json.dumps(v) if v is None else v) for k, v in table.items()}
    doc["origin"] = origin
    return PresetDocument(doc)


def engine_tables_of(imported: ImportedCommand) -> dict:
    """The dict-valued engine arguments a preset's [engine] holds: those vLLM's EngineArgs types as a dict
    (limit_mm_per_prompt, mm_processor_kwargs, ...); the others (lists, vLLM's config objects given as
    JSON) stay in [origin] for the next export."""
    args = engine_args()
    return {key: value for key, value in imported.engine_tables.items()
            if isinstance(value, dict) and value and key in args and dict in args[key].types}


def reads_images(tables: dict) -> bool:
    """The command is for a vision-language model: it lets prompts hold images, or sizes them."""
    limit = (tables.get("limit_mm_per_prompt") or {}).get("image")
    count = limit.get("count", 1) if isinstance(limit, dict) else limit
    pixels = set(tables.get("mm_processor_kwargs") or {}) & {"max_pixels", "min_pixels"}
    return bool(pixels) or (isinstance(count, int) and count > 0)

