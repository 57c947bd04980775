"""What Help > About says: the versions this session runs, the machine, the engine as it stands and
where the app keeps its files, as plain text a person can paste into a bug report. No Qt."""
from __future__ import annotations

from dataclasses import dataclass

from workbench.model.engine_status import EngineStatus

GIB = 1024 ** 3


@dataclass(frozen=True)
class Places:
    """The app's own folders and files, as this run uses them ("" where there is none)."""

    data: str
    config: str
    database: str
    engine_log: str


def about_text(facts: dict, engine: EngineStatus, places: Places) -> str:
    """``facts``: the session's (``machine_facts.session_facts``); ``engine``: the model's engine status."""
    lines = [f"vLLM Workbench {facts.get('app_version') or 'unknown'}", ""]
    lines += [f"vLLM: {_version(facts, 'vllm_version')}",
              f"PyTorch: {_version(facts, 'torch_version')}",
              f"Python: {_version(facts, 'python_version')}",
              f"Qt for Python: {_version(facts, 'pyside_version')}"]
    host = facts.get("host") or {}
    if host:
        lines.append(f"System: {host.get('system', '?')} {host.get('machine', '?')}, {host.get('num_cpus', '?')} CPUs")
    gpus = facts.get("gpus") or []
    for gpu in gpus:
        lines.append(f"GPU {gpu['index']}: {gpu['name']}, {gpu['memory_bytes'] / GIB:.1f} GiB")
    if gpus:
        lines.append(f"NVIDIA driver: {facts.get('driver_version') or 'unknown'}")
    else:
        lines.append("GPU: none seen (no NVIDIA driver answered)")
    lines += ["", *engine_lines(engine), "", "Files:",
              f"  data folder: {places.data}",
              f"  settings: {places.config}",
              f"  database: {places.database or 'none (nothing is kept this run)'}",
              f"  engine log: {places.engine_log or 'none yet (no engine has been started)'}"]
    return "\n".join(lines)


def engine_lines(engine: EngineStatus) -> list[str]:
    """The engine as it stands: its state and message, and while ready its model, device and vLLM."""
    info = engine.info
    if not engine.ready or info is None:  # what the status bar says: why it stopped, failed or died
        return [f"Engine: {engine.state.value}", *(f"  {line}" for line in engine.message.splitlines()[:3])]
    lines = ["Engine: ready", f"  model: {info.model}",
             f"  device: {info.device}, vLLM {info.vllm_version}, context {info.max_model_len:,} tokens"]
    if info.num_kv_blocks:
        lines.append(f"  KV cache: {info.num_kv_blocks:,} blocks")
    return lines


def _version(facts: dict, key: str) -> str:
    return facts.get(key) or "not installed"
