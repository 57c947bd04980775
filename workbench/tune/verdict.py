"""The best trial, and the verdict: the best settings against vLLM's defaults, each rerun alternately, as a
ratio with its spread; or, for a goal no trial met, the closest trial named."""
from __future__ import annotations

import math
import statistics
from dataclasses import replace

from workbench.tune.measure import better
from workbench.tune.values import Goal, TrialResult, Verdict

DEFAULTS_ROLE, BEST_ROLE = "defaults", "best"


def best_trial(results: list[TrialResult], goal: Goal) -> TrialResult | None:
    """The completed trial with the best goal value (the earlier of equals); None before any completed."""
    best = None
    for result in results:
        if result.state != "complete" or result.goal_value is None:
            continue
        if best is None or better(result.goal_value, best.goal_value, goal):
            best = result
    return best


def goal_unmet(results: list[TrialResult], goal: Goal) -> str:
    """For goodput: when no trial served a single request within the limits, the message naming the
    closest trial (the lowest p99 TTFT); "" when the goal was met or has no limits."""
    if goal.kind != "goodput":
        return ""
    done = [r for r in results if r.state == "complete"]
    if not done or any(r.figures.goodput_tokens_per_s > 0 for r in done):
        return ""
    closest = min(done, key=lambda r: (r.ttft_p99_s if r.ttft_p99_s is not None else float("inf"),
                                       r.itl_p99_ms if r.itl_p99_ms is not None else float("inf")))
    itl = f", p99 TPOT {closest.itl_p99_ms:.1f} ms" if closest.itl_p99_ms is not None else ""
    ttft = f"p99 TTFT {closest.ttft_p99_s:.2f} s" if closest.ttft_p99_s is not None else "no TTFT measured"
    return (f"No setting met the goal ({goal.describe()}): not one request of any trial was within the limits. "
            f"The closest was trial {closest.number} ({ttft}{itl}; settings {closest.params or 'vLLM defaults'}). "
            "Loosen the limits, lower the workload's rate, or widen the search space.")


def verdict_plan(repeats: int) -> list[str]:
    """The reruns in order: defaults and best alternately, ``repeats`` of each."""
    return [DEFAULTS_ROLE, BEST_ROLE] * repeats


def _ratio(best: float, defaults: float, goal: Goal) -> float | None:
    """Above 1: the best did better. Where the defaults got nothing of a figure to maximise (no request within
    a goodput goal's limits) and the best did, infinitely better; None where neither got anything."""
    if goal.maximise:
        if defaults > 0:
            return best / defaults
        return math.inf if best > 0 else None
    return defaults / best if best > 0 else None


def ratio_text(ratio: float, digits: int = 3) -> str:
    return "∞" if math.isinf(ratio) else f"{ratio:.{digits}f}"


NONE_WITHIN = "vLLM's defaults served no request within the goal's limits"


def make_verdict(best: TrialResult, runs: list[dict], goal: Goal) -> Verdict:
    """``runs``: the reruns in order, each {"role", "value" (None where it failed), "error"}; pairs are
    taken in order (the i-th defaults run with the i-th best run)."""
    defaults = [r["value"] for r in runs if r["role"] == DEFAULTS_ROLE]
    bests = [r["value"] for r in runs if r["role"] == BEST_ROLE]
    ratios = [ratio for d, b in zip(defaults, bests)
              if d is not None and b is not None and (ratio := _ratio(b, d, goal)) is not None]
    unit = goal.value_unit if goal.kind == "ttft" else "tok/s"  # goodput and output both read as tok/s
    failed = sum(r["value"] is None for r in runs)
    if not ratios:
        text = (f"Trial {best.number} was best, but no rerun pair completed ({failed} reruns failed), so there is "
                "no ratio to the defaults.")
        return Verdict(best.number, dict(best.params), _values(bests), _values(defaults), float("nan"),
                       float("nan"), float("nan"), text)
    median, low, high = statistics.median(ratios), min(ratios), max(ratios)
    if not best.params:  # the defaults won: their reruns against themselves measure the measure's noise
        pairs = f"{len(ratios)} pair{'s' if len(ratios) != 1 else ''}"
        text = (f"No setting beat vLLM's defaults on {goal.describe()}: they were the best trial. Rerun against "
                f"themselves, they measured {low:.3f}–{high:.3f}× (median {median:.3f}× of {pairs}): "
                f"differences within that spread are noise at this workload (the two sets of reruns averaged "
                f"{_mean_text(bests, unit)} and {_mean_text(defaults, unit)} {unit}).")
    else:
        text = (f"trial {best.number} ({_params_text(best.params)}): {ratio_text(median)}× vLLM's defaults on "
                f"{goal.describe()} (median of {len(ratios)} paired rerun{'s' if len(ratios) != 1 else ''}, "
                f"{ratio_text(low)}–{ratio_text(high)}); "
                f"best {_mean_text(bests, unit)} against {_mean_text(defaults, unit)} {unit}.")
    notes = []
    nothing = sum(d == 0 for d in defaults if d is not None)
    if best.params and goal.maximise and nothing:
        notes.append(f"{NONE_WITHIN} in {nothing} of {len(defaults)} reruns.")
    if failed:
        notes.append(f"{failed} rerun{'s' if failed != 1 else ''} failed and {'were' if failed != 1 else 'was'} "
                     "left out.")
    notes_text = " ".join(notes)
    text = f"{text} {notes_text}" if notes_text else text
    return Verdict(best.number, dict(best.params), _values(bests), _values(defaults), median, low, high, text,
                   notes=notes_text)


def with_note(verdict: Verdict, note: str) -> Verdict:
    """``verdict`` with one more note (its text ending with it too); itself for no note."""
    if not note:
        return verdict
    return replace(verdict, text=f"{verdict.text} {note}", notes=f"{verdict.notes} {note}".strip())


def _values(values: list) -> tuple[float, ...]:
    return tuple(float("nan") if v is None else float(v) for v in values)


def _mean_text(values: list, unit: str) -> str:
    kept = [v for v in values if v is not None]
    if not kept:
        return "nothing"
    mean = statistics.fmean(kept)
    return f"{mean:,.1f}" if unit == "tok/s" else f"{mean:.3g}"


def _params_text(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())
