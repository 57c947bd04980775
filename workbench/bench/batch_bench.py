"""Benchmarks of the batch path, headless: the app's engine loop, application model and batch run on
this thread, as the window drives them, without the window.

- ``throughput``: one prompt file through the batch path and through ``LLM.generate``, each in a
  process of its own (same engine arguments), taking turns; prints the ratio of output tokens/s.
- ``rss``: the app process's resident memory before and after a large batch (short outputs).
- ``chat-ttft``: a chat reply's TTFT while a batch runs, idle and under each scheduling choice.
"""
from __future__ import annotations

import gc
import json
import random
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

import psutil

from workbench.batch.loader import PromptLoader
from workbench.batch.results import BatchResults
from workbench.batch.run import BatchRun, RunSettings
from workbench.engine.commands import Shutdown
from workbench.engine.loop import EngineLoop
from workbench.engine.sampling import SamplingSettings
from workbench.engine.spec import EngineConfig
from workbench.model.app_model import AppModel
from workbench.model.engine_commands import EngineCommands

WORDS = ("block", "cache", "token", "page", "prefix", "batch", "request", "engine", "scheduler", "memory",
         "attention", "layer", "sequence", "decode", "prefill", "pool", "hash", "evict", "queue", "model")


def write_prompt_file(path: Path, num_prompts: int, num_words: int, seed: int = 7) -> Path:
    """A JSONL prompt file, one ``{"prompt": ...}`` a line, each prompt distinct from its first word."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as stream:
        for i in range(num_prompts):
            words = " ".join(rng.choice(WORDS) for _ in range(num_words))
            stream.write(json.dumps({"prompt": f"Prompt {i}: {words}"}) + "\n")
    return path


def load_prompts(path: Path) -> BatchResults:
    loader = PromptLoader(path, "jsonl", on_problem="stop")
    results = loader.read_all()
    if loader.problems:
        raise SystemExit(f"{path}: {loader.problems[0]}")
    return results


class _ModelListener:
    """The loop's listener here: messages applied to the application model at once, on this thread."""

    def __init__(self, model: AppModel):
        self.model = model
        self.watchers: list[Callable[[object], None]] = []

    def publish(self, event) -> None:
        self.model.apply(event)
        for watch in self.watchers:
            watch(event)

    def snapshot_published(self, snapshot) -> None:
        pass  # the loop still asks for KV snapshots as in the app; nobody draws them here


class HeadlessApp:
    """The app without its window: the engine loop on this thread, the application model, batch runs."""

    def __init__(self, config: EngineConfig, system_prompt: str = ""):
        self.model = AppModel(config, system_prompt)
        self.listener = _ModelListener(self.model)
        self.loop = EngineLoop(self.listener)
        self.commands = EngineCommands(self.model, self.loop.post)  # the window's one owner, headless

    def start(self, config: EngineConfig | None = None) -> None:
        if config is not None:
            self.model.set_config(config)
        start_id = self.commands.start_on(self.model.config)
        self.loop.run_until(lambda: self.model.engine.settled(start_id))
        if not self.model.engine.ready:
            raise SystemExit(f"the engine did not start: {self.model.engine.message}")

    def new_run(self, results: BatchResults, settings: RunSettings) -> BatchRun:
        return self.model.new_batch_run(results, settings)

    def run_until(self, done: Callable[[], bool]) -> None:
        self.loop.run_until(lambda: done() or not self.model.engine.ready)
        if not self.model.engine.ready:
            raise SystemExit(f"the engine stopped: {self.model.engine.message}")

    def run_batch(self, results: BatchResults, settings: RunSettings,
                  every: Callable[[BatchRun], None] | None = None) -> BatchRun:
        run = self.new_run(results, settings)
        run.start()

        def done() -> bool:
            if every is not None:
                every(run)
            return run.state in ("finished", "cancelled")

        self.run_until(done)
        return run

    def shutdown(self) -> None:
        self.loop.post(Shutdown())
        self.loop.run()


# ------------------------------------------------------------------ one path of the throughput comparison
def run_path(path: str, config: EngineConfig, prompt_file: Path, sampling: SamplingSettings,
             max_in_flight: int) -> dict:
    """Runs the file through one path ("batch" or "generate") and returns its figures."""
    results = load_prompts(prompt_file)
    if path == "generate":
        return _run_generate(config, [p.prompt for p in results.prompts], sampling)
    app = HeadlessApp(config)
    app.start()
    try:
        settings = RunSettings(sampling=sampling, prompts_as_chat=False, max_in_flight=max_in_flight)
        started = time.perf_counter()
        run = app.run_batch(results, settings)
        elapsed = time.perf_counter() - started
        progress = run.progress()
        return {"path": "batch", "requests": progress.num_rows, "failed": progress.num_failed,
                "output_tokens": progress.num_output_tokens, "elapsed_s": elapsed,
                "max_in_flight": max_in_flight, "scheduling_policy": config.scheduling_policy or "fcfs"}
    finally:
        app.shutdown()


def _run_generate(config: EngineConfig, prompts: list[str], sampling: SamplingSettings) -> dict:
    """``LLM.generate`` over the same prompts, vLLM's defaults where the app sets its own (stats off,
    first come first served)."""
    from vllm import LLM
    from vllm.platforms import current_platform
    from vllm.sampling_params import RequestOutputKind

    from workbench.engine.model_source import resolve_model
    from workbench.engine.sampling_params import to_sampling_params
    from workbench.engine.session import use_spawn_for_engine_processes

    use_spawn_for_engine_processes()
    kwargs = config.engine_kwargs(current_platform.is_cpu())
    for name in ("disable_log_stats", "scheduling_policy"):
        kwargs.pop(name, None)
    kwargs["model"] = resolve_model(config.model, require_weights=config.option("load_format") != "dummy")
    llm = LLM(**kwargs)
    params = to_sampling_params(sampling)
    params.output_kind = RequestOutputKind.FINAL_ONLY
    started = time.perf_counter()
    outputs = llm.generate(prompts, params, use_tqdm=False)
    elapsed = time.perf_counter() - started
    output_tokens = sum(len(o.outputs[0].token_ids) for o in outputs)
    llm.llm_engine.engine_core.shutdown()
    return {"path": "generate", "requests": len(outputs), "failed": 0, "output_tokens": output_tokens,
            "elapsed_s": elapsed}


# ------------------------------------------------------------------ memory after a large batch
def rss_bytes() -> int:
    return psutil.Process().memory_info().rss


def measure_rss_growth(config: EngineConfig, prompt_file: Path, sampling: SamplingSettings, max_in_flight: int,
                       samples_path: Path, sample_every_s: float = 5.0) -> dict:
    """The app process's RSS with the engine ready (before the file is read), after reading it, and
    after the run (and a collection); samples during the run go to ``samples_path`` (CSV)."""
    app = HeadlessApp(config)
    app.start()
    gc.collect()
    figures = {"rss_ready": rss_bytes()}
    results = load_prompts(prompt_file)
    figures["rss_loaded"] = rss_bytes()
    started = last = time.perf_counter()
    with samples_path.open("w", encoding="utf-8") as samples:
        samples.write("elapsed_s,finished,rss_bytes\n")

        def sample(run: BatchRun) -> None:
            nonlocal last
            now = time.perf_counter()
            if now - last >= sample_every_s:
                last = now
                samples.write(f"{now - started:.1f},{run.progress().num_finished},{rss_bytes()}\n")
                samples.flush()

        run = app.run_batch(results, RunSettings(sampling=sampling, prompts_as_chat=False,
                                                 max_in_flight=max_in_flight), every=sample)
    figures["elapsed_s"] = time.perf_counter() - started
    figures["rss_after"] = rss_bytes()
    gc.collect()
    figures["rss_after_gc"] = rss_bytes()
    progress = run.progress()
    figures.update(requests=progress.num_rows, finished=progress.num_finished, failed=progress.num_failed,
                   output_tokens=progress.num_output_tokens, registry_records=len(app.model.requests))
    app.shutdown()
    return figures


def default_sampling(output_len: int) -> SamplingSettings:
    return replace(SamplingSettings(), max_tokens=output_len, ignore_eos=True)
