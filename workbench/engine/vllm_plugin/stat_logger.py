"""The stat logger given to vLLM's ``LLMEngine`` (``stat_loggers=``), and switching it on and off.

vLLM 0.26 to 0.33 call ``record(scheduler_stats, iteration_stats, ...)`` on it in the client, inside
``LLMEngine.step()``, on the thread that steps the engine; the trailing arguments differ across that
range (``mm_cache_stats``, ``engine_idx``), so they are taken as they come. Read here: the fields of
``SchedulerStats`` (``num_running_reqs``, ``num_waiting_reqs``, ``num_skipped_waiting_reqs`` where
present, ``kv_cache_usage``, ``prefix_cache_stats.queries`` / ``.hits``) and of ``IterationStats``
(``num_prompt_tokens``, ``num_generation_tokens``, ``num_preempted_reqs``,
``time_to_first_tokens_iter``, ``inter_token_latencies_iter``) and of ``MultiModalCacheStats``
(``queries``, ``hits``: images looked up in the multimodal processor cache, and found; vLLM passes it
only for an engine that has that cache, None otherwise): the same figures vLLM's own Prometheus logger
counts (``vllm:mm_cache_queries`` / ``vllm:mm_cache_hits``). The encoder cache has no figure of its own in
these versions (``SchedulerStats.iteration_details`` counts encoder inputs, and only when iteration
details are logged), so none is read. Switching off takes the logger out of ``LLMEngine.logger_manager.stat_loggers``,
so that stepping runs as vLLM ships it.
"""
from __future__ import annotations

from typing import Callable

from workbench.engine.stats import StepStats


def step_stats(scheduler_stats, iteration_stats, mm_cache_stats=None) -> StepStats:
    """One step's figures in plain numbers; any argument may be None (vLLM passes None for the
    iteration of a step that produced no output, and for the multimodal cache of an engine without one)."""
    running = waiting = queries = hits = 0
    usage = 0.0
    if scheduler_stats is not None:
        running = scheduler_stats.num_running_reqs
        waiting = scheduler_stats.num_waiting_reqs + getattr(scheduler_stats, "num_skipped_waiting_reqs", 0)
        usage = scheduler_stats.kv_cache_usage
        prefix = scheduler_stats.prefix_cache_stats
        queries, hits = prefix.queries, prefix.hits
    mm = {} if mm_cache_stats is None else {"mm_cache_reported": True, "mm_queries": mm_cache_stats.queries,
                                            "mm_hits": mm_cache_stats.hits}
    if iteration_stats is None:
        return StepStats(running, waiting, usage, queries, hits, 0, 0, 0, **mm)
    return StepStats(running, waiting, usage, queries, hits, iteration_stats.num_prompt_tokens,
                     iteration_stats.num_generation_tokens, iteration_stats.num_preempted_reqs,
                     tuple(iteration_stats.time_to_first_tokens_iter),
                     tuple(iteration_stats.inter_token_latencies_iter), **mm)


def make_stat_logger_factory(deliver: Callable[[StepStats], None]):
    """A per-engine stat logger factory for ``LLMEngine.from_engine_args(stat_loggers=[...])``; each
    step's :class:`StepStats` goes to ``deliver``. The logger made is kept on the factory (``.made``)."""
    from vllm.v1.metrics.loggers import StatLoggerBase

    class WorkbenchStatLogger(StatLoggerBase):
        def __init__(self, vllm_config=None, engine_index: int = 0):
            self.engine_index = engine_index

        def record(self, scheduler_stats, iteration_stats, *args, **kwargs):
            deliver(step_stats(scheduler_stats, iteration_stats, _mm_cache_stats(args, kwargs)))

        def log_engine_initialized(self):
            pass

    def factory(vllm_config, engine_index: int = 0):
        factory.made = WorkbenchStatLogger(vllm_config, engine_index)
        return factory.made

    factory.made = None
    return factory


def _mm_cache_stats(args: tuple, kwargs: dict):
    """The multimodal cache's stats among ``record``'s trailing arguments: by name where vLLM names it,
    else the first positional one that has queries and hits (not ``engine_idx``)."""
    if "mm_cache_stats" in kwargs:
        return kwargs["mm_cache_stats"]
    return next((arg for arg in args if hasattr(arg, "queries") and hasattr(arg, "hits")), None)


class StatLoggerSwitch:
    """Takes the workbench's logger out of the engine's list of stat loggers and puts it back."""

    def __init__(self, engine, factory):
        manager = getattr(engine, "logger_manager", None)
        loggers = getattr(manager, "stat_loggers", None)
        self._loggers = loggers if isinstance(loggers, list) else None
        self._entry = None
        if self._loggers is not None and factory.made is not None:
            self._entry = next((entry for entry in self._loggers if _holds(entry, factory.made)), None)
        self.on = True

    @property
    def switchable(self) -> bool:
        return self._entry is not None

    def set(self, on: bool) -> None:
        if on == self.on or self._entry is None:
            return
        if on:
            self._loggers.append(self._entry)
        else:
            self._loggers.remove(self._entry)
        self.on = on


def _holds(entry, logger) -> bool:
    """vLLM wraps a per-engine logger in an adapter that keeps it in ``per_engine_stat_loggers``."""
    if entry is logger:
        return True
    inner = getattr(entry, "per_engine_stat_loggers", None)
    return isinstance(inner, dict) and any(value is logger for value in inner.values())
