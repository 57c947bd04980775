"""Presets: named, validated TOML files that say how vLLM runs. No Qt here.

- ``store``: the shipped presets (package resources) and the user's (the user config folder);
  reading them, saving, import, export, reset; names that never become paths elsewhere;
- ``document``: one preset file as a tomlkit document (comments kept) and its values;
- ``checks``: unknown keys and invalid values refused against vLLM's own ``EngineArgs``, and the
  values that this machine or the model cannot take;
- ``resolve``: a preset made concrete for this machine and model: an ``EngineConfig`` plus the
  sampling settings that seed new conversations;
- ``model_facts`` and ``capacity``: what a model's files say, and the capacity planner;
- ``trust``: the user's per-model permission to run a model's own code.
"""
