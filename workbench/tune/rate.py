"""The arrival rate at which vLLM's defaults first pass a p99 TTFT limit: the rate a goodput search is run at
(the tune benchmark's W1: "Poisson arrivals at the rate where the defaults' p99 TTFT first passes 2 s").

The rates are probed on one engine, already started on the defaults, each probe the whole workload at one
rate (its own seed, so no probe's prompts are in the prefix cache from another's): up by ``growth`` until a
probe passes the limit, then halved between the highest rate within it and the lowest past it, until they
are within ``tolerance`` of each other. The rate found is the lowest probed past the limit."""
from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class RateProbe:
    rate_per_s: float
    ttft_p99_s: float | None  # None: nothing measured (the probe failed)
    output_tokens_per_s: float = 0.0
    duration_s: float = 0.0
    error: str = ""

    def past(self, limit_s: float) -> bool:
        """Past the limit: its p99 TTFT over it, or no figure at all (requests failed)."""
        return self.ttft_p99_s is None or self.ttft_p99_s > limit_s


@dataclass(frozen=True)
class RatePlan:
    limit_s: float  # the p99 TTFT the rate is sought for
    start_per_s: float  # the first rate probed
    growth: float = 1.5  # each rate up (or down) from the last, until the limit is crossed
    tolerance: float = 0.05  # the search ends when the bracket is this narrow, relative to its top
    max_probes: int = 12

    def __post_init__(self):
        if self.limit_s <= 0 or self.start_per_s <= 0 or self.growth <= 1 or not 0 < self.tolerance < 1:
            raise ValueError("the limit and the first rate are positive, growth above 1, tolerance in (0, 1)")


def next_rate(probes: list[RateProbe], plan: RatePlan) -> float | None:
    """The next rate to probe, or None when the rate is found (or the probes are spent)."""
    if not probes:
        return plan.start_per_s
    if len(probes) >= plan.max_probes:
        return None
    within = [p.rate_per_s for p in probes if not p.past(plan.limit_s)]
    past = [p.rate_per_s for p in probes if p.past(plan.limit_s)]
    if not past:
        return max(within) * plan.growth
    top = min(past)
    below = [rate for rate in within if rate < top]
    if not below:
        return top / plan.growth
    bottom = max(below)
    if (top - bottom) / top <= plan.tolerance:
        return None
    return (bottom + top) / 2


def found_rate(probes: list[RateProbe], plan: RatePlan) -> float | None:
    """The lowest rate probed past the limit with one within it below (None: not bracketed)."""
    past = [p.rate_per_s for p in probes if p.past(plan.limit_s) and p.ttft_p99_s is not None]
    if not past:
        return None
    top = min(past)
    return top if any(not p.past(plan.limit_s) and p.rate_per_s < top for p in probes) else None


def probe_workload(workload_spec, rate_per_s: float, number: int):
    """The workload spec of probe ``number``: the rate set, the seed its own."""
    return replace(workload_spec, rate_per_s=rate_per_s, seed=workload_spec.seed + 1000 + number)


def probes_table(probes: list[RateProbe], plan: RatePlan) -> str:
    """The probes as a Markdown table (``bench tune --find-rate`` prints it and keeps it in tune.md)."""
    lines = [f"Rate search: the arrival rate where vLLM's defaults' p99 TTFT first passes {plan.limit_s:g} s.", "",
             "| probe | rate /s | p99 TTFT s | output tok/s | duration s | past the limit |",
             "|---|---|---|---|---|---|"]
    for number, probe in enumerate(probes):
        ttft = f"{probe.ttft_p99_s:.3f}" if probe.ttft_p99_s is not None else "-"
        error = f" ({probe.error})" if probe.error else ""
        lines.append(f"| {number} | {probe.rate_per_s:.3f} | {ttft} | {probe.output_tokens_per_s:.1f} | "
                     f"{probe.duration_s:.1f} | {'yes' if probe.past(plan.limit_s) else 'no'}{error} |")
    rate = found_rate(probes, plan)
    lines += ["", f"Rate found: {rate:.3f} requests/s." if rate is not None else
              "No rate found: the probes did not bracket the limit (widen the start rate or allow more probes)."]
    return "\n".join(lines)
