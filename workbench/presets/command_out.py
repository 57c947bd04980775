"""A preset as the command lines people deploy with: ``vllm serve``, vLLM's YAML config file (what
``vllm serve --config`` reads), a Python ``LLM(...)`` call and ms-swift's ``swift infer`` arguments.

Only engine arguments that differ from vLLM's own defaults (read from ``EngineArgs``) are written.
Values resolved for this machine (a per-platform value, ``auto``, ``"model max"``, the CPU KV budget)
are marked: a comment in YAML and Python, a trailing comment after the shell forms. The sampling
settings go where each form takes them: vLLM's ``--override-generation-config`` (the server's default
sampling), ``SamplingParams``, ms-swift's ``--max_new_tokens``/``--temperature``/... .
"""
from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from workbench.engine.model_source import model_for_command_line
from workbench.engine.spec import EngineConfig
from workbench.presets.document import PresetDocument
from workbench.presets.machine import Machine
from workbench.presets.model_facts import ModelFacts
from workbench.presets.resolve import resolve_preset
from workbench.presets.swift_options import ENGINE_KWARGS, PIXEL_VARIABLES, SAMPLING_NAMES, VLLM_PREFIXED

SERVE, YAML, PYTHON, SWIFT = "vllm serve", "YAML config", "Python LLM(...)", "ms-swift"
FORMS = (SERVE, YAML, PYTHON, SWIFT)
# The workbench's sampling names -> vLLM's generation-config keys (vLLM reads max_new_tokens as max_tokens).
GENERATION_KEYS = {"temperature": "temperature", "top_p": "top_p", "top_k": "top_k", "max_tokens": "max_new_tokens"}
SWIFT_SAMPLING = {v: k for k, v in SAMPLING_NAMES.items()}


@dataclass(frozen=True)
class Deployment:
    """What a command line carries: the model, the engine arguments that differ from vLLM's defaults,
    the sampling settings, the GPUs it runs on and the batch input it names (with how many of its first rows).
    ``notes`` says, by engine argument, why a value was resolved for this machine."""

    model: str
    engine: tuple[tuple[str, object], ...]
    sampling: tuple[tuple[str, object], ...] = ()
    visible_devices: str | None = None
    batch_input: str | None = None
    batch_limit: int | None = None  # the first N rows of batch_input; None: all
    notes: tuple[tuple[str, str], ...] = ()

    def same_as(self, other: "Deployment") -> bool:
        """The same configuration (notes aside): what a round trip through a command line must keep."""
        return (self.model, dict(self.engine), dict(self.sampling), self.visible_devices) == \
            (other.model, dict(other.engine), dict(other.sampling), other.visible_devices)


def differs_from_default(key: str, value, args: dict) -> bool:
    from workbench.engine.vllm_plugin.engine_args import has_default

    arg = args.get(key)
    return arg is None or not has_default(arg) or arg.default != value


def deployment_of(document: PresetDocument, machine: Machine, model: str, facts: ModelFacts | None) -> Deployment:
    """The preset resolved for ``machine`` on ``model`` (an imported preset's own model comes first)."""
    from workbench.engine.vllm_plugin.engine_args import engine_arg_types

    args = engine_arg_types()
    origin = document.origin()
    model = model_for_command_line(origin.get("model") or model)
    resolved = resolve_preset(document, EngineConfig(model=model), machine, facts)
    engine, notes = [], []
    for item in resolved.values:
        if item.value is None or not differs_from_default(item.key, item.value, args):
            continue
        engine.append((item.key, item.value))
        if item.note:
            notes.append((item.key, item.note))
    # dict-valued arguments (limit_mm_per_prompt, ...) an imported command carried: kept for the next export
    engine += [(k, json.loads(v) if isinstance(v, str) else v) for k, v in origin.get("engine_tables", {}).items()]
    sampling = [(k, v) for k, v in document.sampling().items() if not (k == "seed" and v < 0)]
    return Deployment(model, tuple(engine), tuple(sampling), origin.get("visible_devices"),
                      origin.get("batch_input"), origin.get("batch_limit"), tuple(notes))


def _generation_config(deployment: Deployment) -> dict:
    return {GENERATION_KEYS[k]: v for k, v in deployment.sampling if k in GENERATION_KEYS}


def _shell_value(value) -> str:
    if isinstance(value, (dict, list)):
        return shlex.quote(json.dumps(value))
    return shlex.quote(str(value))


def _env_prefix(deployment: Deployment) -> list[str]:
    return [f"CUDA_VISIBLE_DEVICES={deployment.visible_devices}"] if deployment.visible_devices is not None else []


def _note_lines(deployment: Deployment, spell) -> list[str]:
    """The trailing note of a shell form: each value resolved for this machine, spelled as written."""
    values = dict(deployment.engine)
    return [f"# {spell(key, values[key])}: resolved for this machine ({note})" for key, note in deployment.notes]


def _joined(lines: list[str]) -> str:
    return " \\\n  ".join(lines)


def to_serve(deployment: Deployment) -> str:
    def spell(key, value) -> str:
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            return flag if value else "--no-" + key.replace("_", "-")
        return f"{flag} {_shell_value(value)}"

    parts = _env_prefix(deployment) + [f"vllm serve {shlex.quote(deployment.model)}"]
    parts += [spell(key, value) for key, value in deployment.engine]
    if generation := _generation_config(deployment):
        parts.append(spell("override_generation_config", generation))
    return "\n".join([_joined(parts)] + _note_lines(deployment, spell)) + "\n"


def to_yaml(deployment: Deployment) -> str:
    notes = dict(deployment.notes)
    env = "".join(f"{e} " for e in _env_prefix(deployment))
    lines = [f"# Run with: {env}vllm serve --config <this file>", f"model: {json.dumps(deployment.model)}"]
    values = list(deployment.engine)
    if generation := _generation_config(deployment):
        values.append(("override_generation_config", generation))
    for key, value in values:
        text = json.dumps(json.dumps(value)) if isinstance(value, (dict, list)) else json.dumps(value)
        note = f"  # resolved for this machine: {notes[key]}" if key in notes else ""
        lines.append(f"{key.replace('_', '-')}: {text}{note}")
    return "\n".join(lines) + "\n"


def to_python(deployment: Deployment) -> str:
    notes = dict(deployment.notes)
    lines = []
    if deployment.visible_devices is not None:
        lines += ["import os", "", f"os.environ[\"CUDA_VISIBLE_DEVICES\"] = {deployment.visible_devices!r}", ""]
    lines += ["from vllm import LLM, SamplingParams", "", "llm = LLM(", f"    model={deployment.model!r},"]
    for key, value in deployment.engine:
        note = f"  # resolved for this machine: {notes[key]}" if key in notes else ""
        lines.append(f"    {key}={value!r},{note}")
    lines.append(")")
    sampling = ", ".join(f"{k}={v!r}" for k, v in deployment.sampling)
    lines.append(f"sampling_params = SamplingParams({sampling})")
    return "\n".join(lines) + "\n"


def swift_pixels(kwargs: dict) -> tuple[list[str], dict]:
    """mm_processor_kwargs as ms-swift takes them: the pixel bounds as its environment variables
    (``MAX_PIXELS=1003520``, which its templates resize each image to before vLLM sees it), the rest."""
    keys = {key: variable for variable, key in PIXEL_VARIABLES.items()}
    env = [f"{keys[k]}={v}" for k, v in kwargs.items() if k in keys]
    return env, {k: v for k, v in kwargs.items() if k not in keys}


def to_swift(deployment: Deployment) -> str:
    """ms-swift passes vLLM the options it has a ``--vllm_`` spelling for; the image size bounds go in
    front as its MAX_PIXELS / MIN_PIXELS; the others in ``--vllm_engine_kwargs`` (JSON)."""
    def spell(key, value) -> str:
        shown = str(value).lower() if isinstance(value, bool) else _shell_value(value)
        if key == "mm_processor_kwargs" and swift_pixels(value)[0]:
            return " ".join(swift_pixels(value)[0])
        prefixed = key in VLLM_PREFIXED
        return f"--vllm_{key} {shown}" if prefixed else f"{key}={value!r} in --{ENGINE_KWARGS}"

    engine = dict(deployment.engine)
    pixels, rest = swift_pixels(engine.pop("mm_processor_kwargs", None) or {})
    if rest:
        engine["mm_processor_kwargs"] = rest
    parts = _env_prefix(deployment) + pixels + ["swift infer", f"--model {shlex.quote(deployment.model)}",
                                                "--infer_backend vllm"]
    kwargs = {}
    for key, value in engine.items():
        if key in VLLM_PREFIXED:
            parts.append(spell(key, value))
        else:
            kwargs[key] = value
    if kwargs:
        parts.append(f"--{ENGINE_KWARGS} {_shell_value(kwargs)}")
    if deployment.batch_input:
        rows = f"#{deployment.batch_limit}" if deployment.batch_limit else ""  # ms-swift: the first N rows
        parts.append(f"--val_dataset {shlex.quote(deployment.batch_input + rows)}")
    for key, value in deployment.sampling:
        if key in SWIFT_SAMPLING:
            parts.append(f"--{SWIFT_SAMPLING[key]} {_shell_value(value)}")
    return "\n".join([_joined(parts)] + _note_lines(deployment, spell)) + "\n"


WRITERS = {SERVE: to_serve, YAML: to_yaml, PYTHON: to_python, SWIFT: to_swift}


def export_command(deployment: Deployment, form: str) -> str:
    return WRITERS[form](deployment)
