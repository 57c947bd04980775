"""The workbench's vLLM general plugin: the one package that reads vLLM internals.

Supported vLLM versions: 0.26 to 0.33 (checked on 0.26.0 CUDA and 0.32.0 CPU). The names read here,
``scheduler.kv_cache_manager.block_pool`` (``blocks``, ``get_num_free_blocks``, ``get_usage``),
``coordinator.single_type_managers[0].req_to_blocks``, ``KVCacheBlock.ref_cnt`` / ``_block_hash`` /
``is_null``, ``scheduler.requests[...].num_computed_tokens``, ``Executor.__init__`` /
``initialize_from_config``, ``EngineCore._initialize_kv_caches`` and the synchronous client's
``utility_results`` / ``_send_input`` / ``outputs_queue``, are the same across that range.

vLLM calls :func:`register` in every one of its processes (entry point group
``vllm.general_plugins``). One concern a module:

- ``kv_methods``: the methods added to ``EngineCore`` that the client calls with
  ``engine_core.call_utility(...)``; they run inside the engine-core process, between steps;
- ``block_tracking``: data descriptors on ``KVCacheBlock`` that record changed blocks, and the mirror
  of what the client was last sent, so a delta costs what changed, not the size of the pool;
- ``utility_call``: the client side: a utility call that does not wait, and waking a ``step()``
  blocked on a dead engine core;
- ``phase_hooks``: engine start phases (weights, profiling, KV allocation) written to a file;
- ``process_life``: engine processes die with the app, even when it is killed;
- ``stat_logger``: the stat logger vLLM feeds each step in the client (the live plots' figures);
- ``memory_figures``: each worker's weights and KV cache bytes, as vLLM measured and allocated them;
- ``cpu_features``: AMX asked for on the CPU build, before vLLM's own kernels use it.
"""
from __future__ import annotations

import multiprocessing
import os

from workbench.engine.vllm_plugin.cpu_features import on_cpu_build, request_amx
from workbench.engine.vllm_plugin.phase_hooks import PHASE_FILE_ENV, report_phase_on
from workbench.engine.vllm_plugin.process_life import OWNER_ENV, die_with_parent

SUPPORTED_VLLM = ((0, 26), (0, 33))  # first and last supported minor release


def register() -> None:
    """Entry point: called by vLLM in each of its processes."""
    parent = multiprocessing.parent_process()
    if parent is not None and os.environ.get(OWNER_ENV):
        die_with_parent(parent.pid)
    if on_cpu_build():
        request_amx()
    try:
        from vllm.v1.engine.core import EngineCore
        from vllm.v1.executor.abstract import Executor
    except ImportError:  # a vLLM outside the supported range: the workbench reports it on start
        return
    from workbench.engine.vllm_plugin import kv_methods, memory_figures

    EngineCore.workbench_kv_delta = kv_methods.kv_delta
    EngineCore.workbench_kv_scan = kv_methods.kv_scan
    EngineCore.workbench_kv_untrack = kv_methods.kv_untrack
    EngineCore.workbench_memory_split = memory_figures.memory_split
    if os.environ.get(PHASE_FILE_ENV) and not getattr(EngineCore, "_workbench_phases", False):
        EngineCore._workbench_phases = True
        report_phase_on(Executor, "__init__", "weights")
        report_phase_on(EngineCore, "_initialize_kv_caches", "profiling")
        report_phase_on(Executor, "initialize_from_config", "kv_alloc")
