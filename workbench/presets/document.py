"""One preset file: a tomlkit document (its comments kept when edited and saved) and its values.

A preset has three tables: ``[preset]`` (name, description), ``[engine]`` (vLLM engine arguments)
and ``[sampling]`` (the settings that seed new conversations); a preset imported from a command line
has a fourth, ``[origin]`` (the command as given, its model, ``CUDA_VISIBLE_DEVICES``, batch input and
the options that are not engine settings: ``presets.command_in``). An engine value is a scalar, the
words ``"auto"`` (vLLM's or the platform's choice) or ``"model max"``, or a table of per-platform
values (``{ cpu = 32, cuda = 16 }``); a table's ``cpu_avx512`` value applies, before its ``cpu`` one, on
a CPU with AVX-512 or AMX (``{ cpu = "auto", cpu_avx512 = "fp8" }``: vLLM's CPU build keeps fp8 KV
blocks only there). A table none of whose keys is a platform's is one value, for the engine arguments
that take a dict (``limit_mm_per_prompt = { image = 5 }``); per platform, it is one platform's value
(``mm_processor_kwargs = { cpu = "auto", cuda = { max_pixels = 1003520 } }``). ``[preset]``'s
``needs_vision_model = true`` says the preset is for a vision-language model: on a text-only one it is
refused. Reading checks the file's structure only; values are checked against vLLM and this machine by
``presets.checks``.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

import tomlkit
from tomlkit.exceptions import ParseError

from workbench.engine.sampling import SamplingSettings
from workbench.presets.machine import CPU_AVX512

PLATFORMS = ("cpu", "cuda")
TABLE_KEYS = ("cpu", CPU_AVX512, "cuda")  # the keys of a per-platform value
SECTIONS = ("preset", "engine", "sampling", "origin")
SAMPLING_TYPES = {f.name: f.type for f in fields(SamplingSettings)}  # annotations as text


class PresetFileError(ValueError):
    """A preset file that cannot be read: which file, which line (0: none), what is wrong."""

    def __init__(self, path: str, message: str, line: int = 0, key: str = ""):
        self.path, self.line, self.key, self.reason = path, line, key, message
        where = f"{path}, line {line}" if line else path
        super().__init__(f"{where}: {message}")


def is_platform_table(value) -> bool:
    """A per-platform value (``{ cpu = 32, cuda = 16 }``), not a table that is one value (``{ image = 5 }``)."""
    return isinstance(value, dict) and bool(value) and all(key in TABLE_KEYS for key in value)


def inline(value):
    """A dict as a TOML inline table (``{ image = 5 }``), nested ones too; other values as they are."""
    if not isinstance(value, dict):
        return value
    table = tomlkit.inline_table()
    for key, item in value.items():
        table[key] = inline(item)
    return table


def plain(value):
    """A tomlkit item as a plain Python value (tables as dicts)."""
    return value.unwrap() if hasattr(value, "unwrap") else value


@dataclass
class PresetDocument:
    """A preset as read: the document itself (for editing with comments) and where it came from."""

    doc: tomlkit.TOMLDocument
    path: str = ""

    @property
    def name(self) -> str:
        return str(plain(self.doc.get("preset", {}).get("name", Path(self.path).stem)))

    @property
    def description(self) -> str:
        return str(plain(self.doc.get("preset", {}).get("description", "")))

    @property
    def gpu_memory_budget(self) -> float | None:
        """The share of each GPU the preset promises its engine stays within (all its processes, as NVML
        counts them), where it makes that promise: vLLM's gpu_memory_utilization sizes the pool, and the
        CUDA context and buffers allocated after it come on top."""
        value = plain(self.doc.get("preset", {}).get("gpu_memory_budget"))
        return float(value) if value is not None else None

    @property
    def needs_vision_model(self) -> bool:
        """The preset is for a vision-language model (its images' settings mean nothing to another)."""
        return plain(self.doc.get("preset", {}).get("needs_vision_model")) is True

    def engine(self) -> dict:
        return plain(self.doc.get("engine", {})) or {}

    def sampling(self) -> dict:
        return plain(self.doc.get("sampling", {})) or {}

    def origin(self) -> dict:
        return plain(self.doc.get("origin", {})) or {}

    def set_engine_value(self, key: str, value) -> None:
        """Sets one engine value (a table inline, as the shipped files write them); the comment lines above
        it stay."""
        if "engine" not in self.doc:
            self.doc["engine"] = tomlkit.table()
        self.doc["engine"][key] = inline(value)

    def set_name(self, name: str) -> None:
        if "preset" not in self.doc:
            self.doc["preset"] = tomlkit.table()
        self.doc["preset"]["name"] = name

    def text(self) -> str:
        return tomlkit.dumps(self.doc)


def parse_preset(data: bytes, path: str) -> PresetDocument:
    """A preset from a file's bytes; raises PresetFileError naming the file, and the line or key."""
    if b"\x00" in data:
        raise PresetFileError(path, "this is not a text file (it holds binary data)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise PresetFileError(path, "this is not UTF-8 text", line) from exc
    if not text.strip():
        raise PresetFileError(path, "the file is empty")
    try:
        doc = tomlkit.parse(text)
    except ParseError as exc:
        raise PresetFileError(path, f"not valid TOML: {exc}", exc.line) from exc
    check_structure(doc, path)
    return PresetDocument(doc, path)


def check_structure(doc, path: str) -> None:
    unknown = [key for key in doc if key not in SECTIONS]
    if unknown:
        raise PresetFileError(path, f"unknown table [{unknown[0]}]: a preset has {', '.join(SECTIONS)}",
                              key=unknown[0])
    for section in SECTIONS:
        if section in doc and not isinstance(plain(doc[section]), dict):
            raise PresetFileError(path, f"'{section}' must be a table ([{section}]), not "
                                        f"{type(plain(doc[section])).__name__}", key=section)
    for key in ("name", "description"):
        value = plain(doc.get("preset", {}).get(key, ""))
        if not isinstance(value, str):
            raise PresetFileError(path, f"preset.{key} must be text, not {type(value).__name__} ({value!r})",
                                  key=f"preset.{key}")
    budget = plain(doc.get("preset", {}).get("gpu_memory_budget"))
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float)) or not 0 < budget <= 1):
        raise PresetFileError(path, f"preset.gpu_memory_budget = {budget!r}: a share of the GPU, a number above 0 "
                                    f"and at most 1 (e.g. 0.5 for half the card)", key="preset.gpu_memory_budget")
    vision = plain(doc.get("preset", {}).get("needs_vision_model", False))
    if not isinstance(vision, bool):
        raise PresetFileError(path, f"preset.needs_vision_model = {vision!r}: true or false",
                              key="preset.needs_vision_model")
    for key, value in plain(doc.get("engine", {})).items():
        if isinstance(value, dict) and any(k in TABLE_KEYS for k in value) and not is_platform_table(value):
            other = sorted(set(value) - set(TABLE_KEYS))[0]
            raise PresetFileError(path, f"engine.{key}: per-platform values take the keys "
                                        f"{', '.join(TABLE_KEYS[:-1])} and {TABLE_KEYS[-1]}, not '{other}' (a table "
                                        "that is one value names no platform)", key=f"engine.{key}")
        if isinstance(value, list):
            raise PresetFileError(path, f"engine.{key} must be a single value, not a list", key=f"engine.{key}")
    check_sampling_types(plain(doc.get("sampling", {})), path)


def check_sampling_types(sampling: dict, path: str) -> None:
    for key, value in sampling.items():
        if key not in SAMPLING_TYPES:
            raise PresetFileError(path, f"sampling.{key} is not a sampling setting; valid: "
                                        f"{', '.join(SAMPLING_TYPES)}", key=f"sampling.{key}")
        wanted = SAMPLING_TYPES[key]
        ok = (isinstance(value, bool) if wanted == "bool" else
              isinstance(value, (int, float)) and not isinstance(value, bool) if wanted == "float" else
              isinstance(value, int) and not isinstance(value, bool))
        if not ok:
            raise PresetFileError(path, f"sampling.{key} = {value!r} has the wrong type: expected "
                                        f"{wanted.replace(' | None', '')}", key=f"sampling.{key}")


def read_preset(path: Path) -> PresetDocument:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PresetFileError(str(path), f"cannot be read: {exc.strerror or exc}") from exc
    return parse_preset(data, str(path))
