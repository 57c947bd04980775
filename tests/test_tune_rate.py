"""The rate search of ``bench tune --find-rate``: its bracketing, and a run on the real vLLM CPU engine (the
demo model) whose probes, rates and result agree with the rule, on one engine."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from workbench.tune.rate import RatePlan, RateProbe, found_rate, next_rate, probes_table

PLAN = RatePlan(limit_s=2.0, start_per_s=4.0, growth=2.0, tolerance=0.1, max_probes=10)


def run_rule(ttft_at) -> list[RateProbe]:
    """The probes the rule asks for when the engine's p99 TTFT at each rate is ``ttft_at(rate)``."""
    probes = []
    while (rate := next_rate(probes, PLAN)) is not None:
        probes.append(RateProbe(rate, ttft_at(rate)))
    return probes


def test_the_rate_goes_up_until_past_the_limit_then_halves_the_bracket_to_the_tolerance():
    probes = run_rule(lambda rate: 0.5 if rate < 11.0 else 3.0)  # the knee at 11 requests/s
    rates = [p.rate_per_s for p in probes]
    assert rates[:3] == [4.0, 8.0, 16.0] and rates[3:] == [12.0, 10.0, 11.0]
    assert found_rate(probes, PLAN) == 11.0  # 10 within, 11 past: within 10 % of each other
    assert "Rate found: 11.000 requests/s." in probes_table(probes, PLAN)


def test_a_first_rate_already_past_the_limit_is_lowered_and_failed_probes_count_as_past():
    probes = run_rule(lambda rate: None if rate > 3.0 else 0.1)  # above 3/s every request fails
    rates = [p.rate_per_s for p in probes]
    assert rates[:2] == [4.0, 2.0] and all(r <= 4.0 for r in rates)
    assert found_rate(probes, PLAN) is None  # failed probes bracket the rate but measured no TTFT past it
    assert "No rate found" in probes_table(probes, PLAN)


def test_the_probes_are_spent_before_the_bracket_closes_on_an_engine_that_never_passes():
    probes = run_rule(lambda rate: 0.2)
    assert len(probes) == PLAN.max_probes and found_rate(probes, PLAN) is None
    with pytest.raises(ValueError):
        RatePlan(limit_s=0.0, start_per_s=1.0)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_bench_tune_finds_the_rate_on_one_engine_of_the_real_cpu_engine(tmp_path, demo_model_path):
    out = tmp_path / "rate"
    command = [sys.executable, "-m", "workbench", "bench", "--model", demo_model_path, "--max-model-len", "512",
               "tune", "--find-rate", "--rate-only", "--ttft-limit-s", "0.25", "--rate", "10", "--rate-probes", "6",
               "--rate-growth", "2", "--requests", "32", "--prompt-len", "400", "--output-len", "4", "--params", "performance_mode",
               "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1100)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    kept = json.loads((out / "rate.json").read_text())
    plan = RatePlan(**kept["plan"])
    assert (plan.growth, plan.tolerance, plan.max_probes) == (2.0, 0.05, 6)  # as the command asked
    probes = [RateProbe(**p) for p in kept["probes"]]
    assert probes and all(p.error == "" and p.ttft_p99_s is not None for p in probes), probes
    replayed: list[RateProbe] = []
    for probe in probes:  # each rate is the one the rule asked for after the probes before it
        assert probe.rate_per_s == pytest.approx(next_rate(replayed, plan))
        replayed.append(probe)
    assert next_rate(probes, plan) is None  # the search ended by the rule: bracketed, or the probes spent
    assert kept["rate_per_s"] == found_rate(probes, plan) and (done.returncode == 0) == (kept["rate_per_s"] is not None)
    assert all(p.duration_s > 0 and p.output_tokens_per_s > 0 for p in probes)
    assert done.stdout.count("Rate probe") == 0 and done.stdout.count("rate probe ") == len(probes)
    assert (out / "tune.md").read_text().startswith("Rate search:")
