"""Where presets live: shipped ones in the package's resources, the user's in the user config folder.

A user preset with a shipped preset's name is that preset as the user edited it; "reset" removes
the user's copy. Names are names, never paths: saving writes only ``<user folder>/<name>.toml``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from workbench.paths import config_dir, resources_dir, write_text_atomically
from workbench.presets.document import PresetDocument, PresetFileError, read_preset

DEFAULT_PRESET = "balanced"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _-]{0,63}$")


class PresetNameError(ValueError):
    pass


def shipped_dir() -> Path:
    return resources_dir() / "presets"


def user_dir() -> Path:
    path = config_dir() / "presets"
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass(frozen=True)
class PresetEntry:
    name: str
    source: str  # "shipped", "user" (a preset of the user's own) or "edited" (a shipped one, changed)
    document: PresetDocument


@dataclass
class PresetCatalog:
    """All presets that could be read, and a PresetFileError for each file that could not."""

    entries: dict[str, PresetEntry] = field(default_factory=dict)
    problems: list[PresetFileError] = field(default_factory=list)

    def names(self) -> list[str]:
        return list(self.entries)


def check_name(name: str) -> str:
    """The name itself when it is a valid preset name; PresetNameError otherwise."""
    if not NAME.match(name or ""):
        raise PresetNameError(f"{name!r} is not a preset name: use 1 to 64 letters, digits, spaces, '-' or '_', "
                              "starting with a letter or digit (a name is not a path)")
    return name


def user_path(name: str) -> Path:
    folder = user_dir().resolve()
    path = (folder / f"{check_name(name)}.toml").resolve()
    if path.parent != folder:  # cannot happen with a valid name; kept as the promise itself
        raise PresetNameError(f"{name!r} would be saved outside {folder}")
    return path


def shipped_names() -> list[str]:
    return sorted(p.stem for p in shipped_dir().glob("*.toml"))


def taken_by(name: str) -> str:
    """What saving as ``name`` would replace: "user" (a preset of the user's, or their edit of a shipped one),
    "shipped" (a shipped preset, shown as the user's edit from then on), or "" (nothing)."""
    if user_path(name).exists():
        return "user"
    return "shipped" if name in shipped_names() else ""


def free_name(base: str) -> str:
    """``base`` where no preset has it, else ``base-2``, ``base-3``…: a suggested name that replaces nothing."""
    check_name(base)
    name, number = base, 1
    while taken_by(name):
        number += 1
        name = f"{base[:64 - len(str(number)) - 1]}-{number}"
    return name


def load_catalog() -> PresetCatalog:
    """Shipped presets first (the default one first of all), then the user's; a broken file is
    reported and the others still load."""
    catalog = PresetCatalog()
    shipped = sorted(shipped_dir().glob("*.toml"), key=lambda p: (p.stem != DEFAULT_PRESET, p.stem))
    for path in shipped:
        catalog.entries[path.stem] = PresetEntry(path.stem, "shipped", read_preset(path))
    for path in sorted(user_dir().glob("*.toml")):
        try:
            document = read_preset(path)
        except PresetFileError as exc:
            catalog.problems.append(exc)
            continue
        source = "edited" if path.stem in catalog.entries else "user"
        catalog.entries[path.stem] = PresetEntry(path.stem, source, document)
    return catalog


def save_user_preset(document: PresetDocument, name: str) -> Path:
    """Writes the preset as ``name`` in the user folder (comments kept); returns the file."""
    path = user_path(name)
    document.set_name(name)
    write_text_atomically(path, document.text())
    document.path = str(path)
    return path


def import_preset(source: Path, may_replace=lambda name: True) -> Path | None:
    """Reads a preset file from anywhere (refused as a whole when broken) and saves it as a user preset
    under its own name, else its file's stem; where that name is taken, only if ``may_replace(name)`` (None
    when not)."""
    document = read_preset(source)
    name = document.name if NAME.match(document.name) else re.sub(r"[^A-Za-z0-9 _-]", "-", source.stem)[:64]
    if taken_by(name) and not may_replace(name):
        return None
    return save_user_preset(document, name)


def export_preset(document: PresetDocument, target: Path) -> Path:
    write_text_atomically(target, document.text())
    return target


def reset_shipped(name: str) -> bool:
    """Removes the user's copy of a shipped preset; True when there was one."""
    if name not in shipped_names():
        raise PresetNameError(f"{name!r} is not a shipped preset: only those can be reset")
    path = user_path(name)
    if path.exists():
        path.unlink()
        return True
    return False
