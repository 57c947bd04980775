"""A search's settings checked before it starts: each value of the space against vLLM's ``EngineArgs`` and
this machine (the presets' checks), the time budget against one engine start as measured here."""
from __future__ import annotations

import math
from pathlib import Path

from workbench.engine.spec import EngineConfig
from workbench.tune.trial_config import space_problems
from workbench.tune.values import TuneSpec


def budget_problem(budget_s: float, start_s: float | None) -> str:
    """"" when the budget holds at least one engine start (``start_s``, the last one measured; None: none
    measured yet, so any positive budget goes)."""
    if budget_s <= 0:
        return f"The time budget ({budget_s:g} s) must be positive: give the search some minutes."
    if start_s is not None and budget_s < start_s:
        return (f"The time budget ({budget_s:.0f} s) is shorter than one engine start here ({start_s:.0f} s, "
                f"measured at the last start): give at least {math.ceil(2 * start_s)} s, a start and its measure.")
    return ""


def spec_problems(spec: TuneSpec, base: EngineConfig, start_s: float | None) -> list[str]:
    """Every reason the search cannot start as asked, each naming its fix; [] when it can."""
    from workbench.presets.machine import this_machine
    from workbench.presets.model_facts import facts_for

    problems = space_problems(spec.space, this_machine(), facts_for(base.model))
    budget = budget_problem(spec.time_budget_s, start_s)
    if budget:
        problems.append(budget)
    if spec.repeats < 1:
        problems.append(f"The verdict's reruns ({spec.repeats}) must be at least 1; 3 give a spread worth reading.")
    if spec.max_trials is not None and spec.max_trials < 1:
        problems.append("A search needs at least one trial (vLLM's defaults).")
    return problems


def stored_start_s(database: Path | None) -> float | None:
    """The last engine start's length (asked to ready) as the session database keeps it; None for none."""
    if database is None or not Path(database).exists():
        return None
    from workbench.sessions.stored import engine_runs, open_read_only

    connection = open_read_only(database)
    try:
        runs = [run for run in engine_runs(connection) if run.ready_s]
    finally:
        connection.close()
    return runs[-1].ready_s - runs[-1].started_s if runs else None
