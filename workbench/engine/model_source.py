"""Where models come from: the demo model, local folders and the Hugging Face cache.

Every model, the demo one included, is checked and loaded through :func:`resolve_model`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.pt", "*.gguf")
HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")


class ModelNotFoundError(ValueError):
    """The chosen model cannot be loaded; the message names the cause and the fix."""


@dataclass(frozen=True)
class ModelChoice:
    name: str  # what the picker shows
    path: str  # a local folder, or a hub id found in the Hugging Face cache
    origin: str  # "demo", "local" or "hf-cache"


def resolve_model(spec: str, require_weights: bool = True) -> str:
    """Returns a loadable model folder for ``spec`` (a folder or a cached hub id), or raises.

    ``require_weights=False`` accepts a config-only folder (benchmarks with dummy weights)."""
    spec = spec.strip()
    if not spec:
        raise ModelNotFoundError("No model chosen. Pick one with Model > Choose model…, or use the demo model.")
    path = Path(spec).expanduser()
    if path.exists():
        return str(check_model_folder(path, require_weights))
    if HUB_ID.match(spec) and not spec.startswith((".", "/", "~")):
        cached = cached_snapshot(spec)
        if cached is not None:
            return str(check_model_folder(cached))
        raise ModelNotFoundError(
            f"Model '{spec}' is not downloaded yet (it is not in the Hugging Face cache). Get it with Model > Get a "
            "model… (it says first whether it fits), or choose a local folder.")
    raise ModelNotFoundError(
        f"Model folder '{spec}' does not exist. Check the path, or choose a folder with Model > Choose model….")


def model_for_command_line(model: str) -> str:
    """``model`` as a command line run outside the app must name it: a demo's folder (``vllm serve demo`` would
    look for a Hub repository of that name), any other model as the app names it."""
    from workbench.engine.demo_model import demo_model_dir
    from workbench.engine.demo_vl_model import demo_vl_model_dir
    from workbench.engine.spec import DEMO_MODEL, DEMO_VL_MODEL

    demos = {DEMO_MODEL: demo_model_dir, DEMO_VL_MODEL: demo_vl_model_dir}
    return str(demos[model]()) if model in demos else model


def check_model_folder(path: Path, require_weights: bool = True) -> Path:
    if not path.is_dir():
        raise ModelNotFoundError(f"'{path}' is a file, not a model folder. Choose the folder that holds config.json.")
    if not (path / "config.json").exists():
        raise ModelNotFoundError(
            f"'{path}' holds no model: config.json is missing. Choose the folder that holds config.json "
            "and the weights (*.safetensors).")
    if require_weights and not any(any(path.glob(p)) for p in WEIGHT_PATTERNS):
        raise ModelNotFoundError(
            f"'{path}' has a config.json but no weights (*.safetensors or *.bin). Copy the weights into it "
            "or choose another folder.")
    return path


def _cached_model_repos() -> list:
    """The model repos in the Hugging Face cache; none where there is no cache or it cannot be read."""
    try:
        from huggingface_hub import scan_cache_dir

        return [repo for repo in scan_cache_dir().repos if repo.repo_type == "model"]
    except Exception:  # no cache folder yet, or an unreadable one: nothing cached
        return []


def cached_snapshot(repo_id: str) -> Path | None:
    for repo in _cached_model_repos():
        if repo.repo_id == repo_id:
            revisions = sorted(repo.revisions, key=lambda r: r.last_modified, reverse=True)
            return Path(revisions[0].snapshot_path) if revisions else None
    return None


def list_models(extra_folders: list[str] = ()) -> list[ModelChoice]:
    """The demo models (text, and images: ``demo-vl``), the model folders under the data directory and
    ``extra_folders``, and the HF cache."""
    from workbench.engine.demo_model import demo_model_dir
    from workbench.engine.demo_vl_model import demo_vl_model_dir
    from workbench.engine.spec import DEMO_VL_MODEL
    from workbench.paths import data_dir

    demo, demo_vl = demo_model_dir(), demo_vl_model_dir()
    choices = [ModelChoice("Demo model (built on this machine)", str(demo), "demo"),
               ModelChoice("Vision demo model: images (built on this machine)", DEMO_VL_MODEL, "demo")]
    models_root = data_dir() / "models"
    folders = [p for p in sorted(models_root.glob("*")) if p not in (demo, demo_vl)]
    folders += [Path(f) for f in extra_folders]
    for folder in folders:
        if (folder / "config.json").exists():
            choices.append(ModelChoice(folder.name, str(folder), "local"))
    for repo in sorted(_cached_model_repos(), key=lambda r: r.repo_id):
        choices.append(ModelChoice(repo.repo_id, repo.repo_id, "hf-cache"))
    return choices
