"""What a search leaves the user: the best settings as a user preset (its ``[origin]`` names the search) and
as a ``vllm serve`` command line."""
from __future__ import annotations

from pathlib import Path

import tomlkit

from workbench.engine.model_source import model_for_command_line
from workbench.engine.spec import EngineConfig
from workbench.presets.command_out import Deployment, differs_from_default, to_serve
from workbench.presets.document import PresetDocument
from workbench.presets.store import save_user_preset
from workbench.tune.space import engine_value
from workbench.tune.values import TrialResult, TuneSpec, Verdict

APP_ONLY = {"model", "disable_log_stats"}  # set by the app for its own reading, not a deployment's choice


def serve_line(config: EngineConfig, on_cpu: bool) -> str:
    """``config`` (a trial's) as ``vllm serve``: the engine arguments that differ from vLLM's defaults."""
    from workbench.engine.vllm_plugin.engine_args import engine_arg_types

    args = engine_arg_types()
    engine = tuple((key, value) for key, value in config.engine_kwargs(on_cpu).items()
                   if key not in APP_ONLY and value is not None and differs_from_default(key, value, args))
    return to_serve(Deployment(model_for_command_line(config.model), engine))


def preset_document(name: str, spec: TuneSpec, best: TrialResult, verdict: Verdict | None) -> PresetDocument:
    """A preset of the best trial's settings; ``[origin]`` says which search found it, for which goal."""
    doc = tomlkit.document()
    summary = verdict.text if verdict is not None else f"trial {best.number} of the search"
    doc["preset"] = {"name": name, "description": f"Found by the search {spec.name!r}: {summary}"}
    engine = tomlkit.table()
    for key, value in best.params.items():
        converted = engine_value(key, value)
        if converted is not None:
            engine[key] = converted
    for key, value in best.batch_limits.items():  # left open in the trial: as `vllm serve` set them, which the
        if key not in engine:                      # app's own engine would not (its defaults differ)
            engine[key] = value
    doc["engine"] = engine
    origin = {"search": spec.name, "trial": best.number, "goal": spec.goal.describe(),
              "workload": spec.workload.describe()}
    if verdict is not None and verdict.ratio_median == verdict.ratio_median:  # not NaN
        origin.update(ratio_median=round(verdict.ratio_median, 4), ratio_min=round(verdict.ratio_min, 4),
                      ratio_max=round(verdict.ratio_max, 4))
    doc["origin"] = origin
    return PresetDocument(doc)


def save_preset(name: str, spec: TuneSpec, best: TrialResult, verdict: Verdict | None) -> Path:
    return save_user_preset(preset_document(name, spec, best, verdict), name)
