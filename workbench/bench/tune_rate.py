"""``bench tune --find-rate``: before the search, the arrival rate at which vLLM's defaults' p99 TTFT first
passes the goal's limit (:mod:`workbench.tune.rate`), probed on one engine started on the defaults through
the app's own engine path; the search then runs its workload at that rate."""
from __future__ import annotations

from workbench.tune.rate import RatePlan, RateProbe, next_rate, probe_workload
from workbench.tune.trial import TrialRun
from workbench.tune.values import Goal, WorkloadSpec
from workbench.tune.workload import build_workload


def find_rate(app, config, workload_spec: WorkloadSpec, plan: RatePlan, report=print) -> list[RateProbe]:
    """Starts ``config`` (the defaults) on ``app`` (a HeadlessApp) and probes rates until :func:`next_rate`
    has none left; each probe's row goes to ``report`` as it ends."""
    app.start(config)
    goal = Goal("goodput", ttft_p99_limit_s=plan.limit_s)
    probes: list[RateProbe] = []
    while (rate := next_rate(probes, plan)) is not None:
        number = len(probes)
        workload = build_workload(probe_workload(workload_spec, rate, number), goal, config.max_model_len, None)
        ended = []
        probe = TrialRun(app.model, app.commands, config, workload, f"rate-{number}", f"Rate probe {number}",
                         goal, ended.append)
        app.model.add_request_sink("tune", probe)
        app.model.engine_changed.connect(probe.engine_changed)
        try:
            probe.measure_now()
            app.loop.run_until(lambda: bool(ended))
        finally:
            app.model.engine_changed.disconnect(probe.engine_changed)
        outcome = ended[0]
        figures = outcome.figures
        measured = figures is not None and not outcome.error
        probes.append(RateProbe(rate, figures.ttft_p99_s if measured else None,
                                figures.output_tokens_per_s if figures else 0.0,
                                figures.duration_s if figures else 0.0, outcome.error))
        if number == 0:
            report(f"  vLLM's defaults as `vllm serve` runs them: {outcome.batch_limits}")
        tpot = f", p99 TPOT {figures.itl_p99_ms:.1f} ms" if measured and figures.itl_p99_ms is not None else ""
        output = f", {figures.output_tokens_per_s:.0f} output tok/s" if measured else ""
        report(f"  rate probe {number}: {rate:.3f}/s, p99 TTFT "
               f"{probes[-1].ttft_p99_s if probes[-1].ttft_p99_s is not None else '-'} s{tpot}{output} "
               f"{outcome.error}".rstrip())
        if not app.model.engine.ready:
            break
    return probes
