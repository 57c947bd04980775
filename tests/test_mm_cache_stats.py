"""vLLM's multimodal cache statistics without an engine: the stat logger reads vLLM's own
``MultiModalCacheStats`` as it is passed to it, the recorder bins the hit rate, a server's
``vllm:mm_cache_*`` counters are read, and the plot is laid out only where the engine reports the cache."""
from __future__ import annotations

from types import MappingProxyType

import numpy as np
from vllm.v1.metrics.stats import MultiModalCacheStats, SchedulerStats

from workbench.engine.ring_buffer import Series
from workbench.engine.stats import COLUMNS, StatsRecorder, StatsSeries, StatsTotals
from workbench.engine.vllm_plugin.stat_logger import make_stat_logger_factory
from workbench.remote.prometheus import parse_metrics, step_between
from workbench.ui.stats_plots import StatsPlotsView


def _logged(*args, **kwargs):
    """What the workbench's stat logger delivers for one ``record`` call, as vLLM makes it."""
    delivered = []
    logger = make_stat_logger_factory(delivered.append)(None)
    logger.record(SchedulerStats(), None, *args, **kwargs)
    return delivered[0]


def test_the_stat_logger_reads_vllms_multimodal_cache_stats_by_name_or_position():
    mm = MultiModalCacheStats()
    mm.record(3, 1)  # a request of three images, one found in the cache
    step = _logged(mm_cache_stats=mm, engine_idx=0)
    assert (step.mm_cache_reported, step.mm_queries, step.mm_hits) == (True, 3, 1)
    assert _logged(mm, 0).mm_queries == 3
    text_only = _logged(mm_cache_stats=None, engine_idx=0)
    assert (text_only.mm_cache_reported, text_only.mm_queries) == (False, 0)


def test_the_recorder_bins_the_hit_rate_and_counts_the_steps_that_reported_it():
    recorder = StatsRecorder(0.0)
    recorder.add(_logged(mm_cache_stats=_stats(4, 3)))
    recorder.add(_logged(mm_cache_stats=_stats(0, 0)))
    recorder.tick(0.3)
    recorder.add(_logged(mm_cache_stats=_stats(0, 0)))
    recorder.tick(0.6)
    published = recorder.publish()
    assert published.series["mm_cache_hit_pct"][0] == 75.0
    assert np.isnan(published.series["mm_cache_hit_pct"][1]), "no image looked up: no point, not 0 %"
    totals = published.totals
    assert (totals.mm_queries, totals.mm_hits, totals.mm_cache_reports) == (4, 3, 3)


def _stats(queries: int, hits: int) -> MultiModalCacheStats:
    stats = MultiModalCacheStats()
    if queries:
        stats.record(queries, hits)
    return stats


def _scrape(queries: float, hits: float) -> str:
    """The lines of vLLM's /metrics that count the multimodal cache, as its Prometheus logger writes them."""
    lines = ["# TYPE vllm:num_requests_running gauge", 'vllm:num_requests_running{engine="0"} 1']
    for name, value in (("vllm:mm_cache_queries", queries), ("vllm:mm_cache_hits", hits)):
        lines += [f"# HELP {name}_total Multi-modal cache {name[15:]}.", f"# TYPE {name}_total counter",
                  f'{name}_total{{engine="0",model_name="m"}} {value}']
    return "\n".join(lines) + "\n"


def test_a_servers_multimodal_cache_counters_are_read():
    step = step_between(parse_metrics(_scrape(2, 0)), parse_metrics(_scrape(6, 3)))
    assert (step.mm_cache_reported, step.mm_queries, step.mm_hits) == (True, 4, 3)
    none_yet = step_between(parse_metrics(_scrape(0, 0)), parse_metrics(_scrape(0, 0)))
    assert not none_yet.mm_cache_reported, "a server that looked up no image has no cache to plot"


def _series(mm_cache_reports: int, mm_values: float, version: int = 20) -> StatsSeries:
    columns = {name: np.linspace(0, 50, 20) for name in COLUMNS}
    columns["t"] = 0.25 * np.arange(20)
    columns["mm_cache_hit_pct"] = np.full(20, mm_values)
    return StatsSeries(Series(version, MappingProxyType(columns)),
                       StatsTotals(mm_cache_reports=mm_cache_reports, mm_queries=5, mm_hits=3))


def _draw_all(view: StatsPlotsView, stats: StatsSeries) -> None:
    while view.show_stats(stats):
        pass


def test_the_multimodal_cache_plot_is_laid_out_only_where_the_engine_reports_it(qtbot):
    view = StatsPlotsView(0.0)
    qtbot.addWidget(view)
    view.resize(900, 700)
    view.show()
    _draw_all(view, _series(0, np.nan))
    assert "mm_cache" not in view.plots, "an engine without the cache: no empty plot"
    assert view.pause.shown_version == 20, "the plots shown all drew the series"
    assert "images" not in view.totals.text()
    _draw_all(view, _series(5, 50.0, version=21))
    assert "mm_cache" in view.plots and view.all_plots["mm_cache"] in view.graphics.ci.items
    x, y = view.curves["mm_cache_hit_pct"].getData()
    assert len(x) == 20 and np.all(y == 50.0)
    assert "5 images looked up (3 in the multimodal cache)" in view.totals.text()
    names = list(view.plots)
    assert names.index("mm_cache") == names.index("prefix") + 1, "beside the prefix cache's plot"
    view.clear()
    assert "mm_cache" not in view.plots and view.all_plots["mm_cache"] not in view.graphics.ci.items
