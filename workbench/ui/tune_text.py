"""The Tune tab's words for a search's figures: the progress bar's line, a goal's value with its unit,
the verdict as the ratio to vLLM's defaults with its spread."""
from __future__ import annotations

import html
import math

from workbench.tune.values import Goal, TrialResult, TuneProgress, TuneSpec, Verdict
from workbench.tune.verdict import ratio_text
from workbench.ui.tune_table import settings_text

BETTER_COLOUR, WORSE_COLOUR = "#166534", "#9b1c1c"


def duration_text(seconds: float | None) -> str:
    """``95`` -> "1 min 35 s"; ``4000`` -> "1 h 07 min"."""
    if seconds is None:
        return "?"
    seconds = max(0, int(round(seconds)))
    if seconds >= 3600:
        return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
    if seconds >= 60:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds} s"


def search_summary(spec: TuneSpec) -> str:
    """One line for what a search runs: its name, workload, goal, sampler, budget and settings searched."""
    searched = len(spec.space.searched())
    return (f"{spec.name}: {spec.workload.describe()} · {spec.goal.describe()} · {spec.sampler.upper()} · "
            f"budget {duration_text(spec.time_budget_s)} · {searched} setting{'' if searched == 1 else 's'} searched")


def unbroken_units(text: str) -> str:
    """``text`` with "tok/s" held on one line where a label wraps (a word joiner after the slash)."""
    return text.replace("tok/s", "tok/\u2060s")


def goal_value_text(value: float | None, goal: Goal) -> str:
    if value is None:
        return "—"
    if math.isnan(value):  # a rerun that failed
        return "failed"
    if goal.kind == "ttft":
        return f"p99 TTFT {value:.3f} s"
    return f"{value:,.1f} {'goodput ' if goal.kind == 'goodput' else ''}tok/s"


def best_text(best: TrialResult | None, goal: Goal) -> str:
    if best is None:
        return "no trial measured yet"
    return f"best {goal_value_text(best.goal_value, goal)} (trial {best.number})"


def progress_text(progress: TuneProgress, goal: Goal) -> str:
    """The progress bar's line: trials done, time left, the best so far."""
    planned = f" of {progress.num_trials_planned}" if progress.num_trials_planned else ""
    parts = [f"{progress.num_trials_done}{planned} trials done"]
    if progress.phase == "verdict":
        parts[0] = f"{progress.num_trials_done} trials done · verdict"  # the phase line names the rerun
    if progress.time_left_s is not None:
        parts.append(f"{duration_text(progress.time_left_s)} left")
    parts.append(best_text(progress.best, goal))
    return " · ".join(parts)


ENDED = "Ended without a verdict"


def end_text(verdict: Verdict | None, message: str) -> str:
    """The progress bar's word once a search is over: its verdict, the user's Stop, a pause before a device
    call's end (``bench tune --pause-after-s``), or a search that ended by itself without a verdict (no trial
    completed, or none met the goal)."""
    if verdict is not None:
        return "Finished"
    for word in ("Stopped", "Paused"):
        if message.startswith(word):
            return word
    return ENDED


def verdict_colour(verdict: Verdict) -> str:
    """Green where every paired rerun beat the defaults (and the goal was met), red where every one fell
    short of them or no trial met the goal; "" (the text's own colour) where the pairs straddle 1: a
    difference within the measure's own spread (a median of 0.999×, its pairs 0.99–1.00×) is neither a win
    nor a loss."""
    if not verdict.goal_met or verdict.ratio_max < 1.0:
        return WORSE_COLOUR
    return BETTER_COLOUR if verdict.ratio_min > 1.0 else ""


def verdict_html(verdict: Verdict, goal: Goal) -> str:
    """The winner against vLLM's defaults: the ratio's median and its spread over the paired repeats,
    the values each repeat measured and the settings; the search's own words where there is no ratio
    (no rerun pair completed) or where reruns failed."""
    if math.isnan(verdict.ratio_median):
        return f"<b style='color:{WORSE_COLOUR}'>{html.escape(verdict.text)}</b>"
    colour = verdict_colour(verdict)
    repeats = len(verdict.best_values)
    if not verdict.best_params:  # the defaults were best: their reruns measure the noise, not a gain
        headline = (f"<b>No setting beat vLLM's defaults</b> for {html.escape(goal.describe())}: they were the "
                    f"best trial. Rerun against themselves they measured {verdict.ratio_min:.2f}–"
                    f"{verdict.ratio_max:.2f}× (median {verdict.ratio_median:.2f}× of {repeats} "
                    f"pair{'s' if repeats != 1 else ''}), "
                    "the measure's own spread at this workload.")
    else:
        style = f" style='color:{colour}'" if colour else ""
        headline = (f"<b{style}>{ratio_text(verdict.ratio_median, 2)}× the defaults</b> "
                    f"(median of {repeats} paired repeat{'s' if repeats != 1 else ''}, "
                    f"{ratio_text(verdict.ratio_min, 2)}–{ratio_text(verdict.ratio_max, 2)}×; above 1 is better) for "
                    f"{html.escape(goal.describe())}: trial {verdict.best_number}.")
    values = ("Best: " + ", ".join(goal_value_text(v, goal) for v in verdict.best_values)
              + " · defaults: " + ", ".join(goal_value_text(v, goal) for v in verdict.default_values))
    parts = [headline, html.escape(values), "Settings: " + html.escape(settings_text(verdict.best_params))]
    if verdict.notes:
        parts.append(html.escape(verdict.notes))
    return "<br>".join(parts)
