"""The local engine session: one vLLM ``LLMEngine`` whose EngineCore runs in its own process.

No Qt here: the same session runs under the GUI's worker thread, in the benchmarks and on a GPU
machine without PySide6. It renders chat prompts, streams DELTA outputs, aborts, pulls KV deltas
and shuts the engine down so that every byte of its memory comes back.
"""
from __future__ import annotations

import gc
import os
import time
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from workbench.engine.backend import (
    Backend, Capabilities, ChatRequest, EngineGoneError, EngineInfo, ImagesRefusedError, PromptTooLongError,
    StreamEvent, VisionInfo, WorkerMemory,
)
from workbench.engine.image_prompts import image_prompt
from workbench.engine.images import ImageSpan
from workbench.engine.demo_model import model_for_start
from workbench.engine.engine_log import EngineLogCapture, new_log_path, read_log
from workbench.engine.kv_probe import LocalKVProbe
from workbench.engine.metrics import figures_from_output
from workbench.engine.model_source import resolve_model
from workbench.engine.placement import place_engine_core
from workbench.engine.process_guard import EngineWatchdog, child_pids, describe_exit, kill_processes, mark_owner
from workbench.engine.run_folder import environment_for_start, new_run_folder, remove_run_folder, vllm_env
from workbench.engine.sampling import SamplingSettings
from workbench.engine.sampling_params import to_sampling_params
from workbench.engine.spec import DEMO_MODEL, DEMO_VL_MODEL, EngineConfig
from workbench.engine.start_failure import explain_start_failure
from workbench.engine.start_phases import EngineStartError, PhaseWatcher, StartProgress, WholeStart, progress_for
from workbench.engine.stats import StepStats
from workbench.engine.vllm_plugin import PHASE_FILE_ENV, SUPPORTED_VLLM
from workbench.engine.vllm_plugin.engine_args import usage_context
from workbench.engine.vllm_plugin.stat_logger import StatLoggerSwitch, make_stat_logger_factory
from workbench.engine.vllm_plugin.utility_call import is_engine_dead, wake_blocked_step

# vLLM forks its engine-core process unless told otherwise, and only switches to spawn when torch
# says CUDA is initialised. Anything that merely asked torch about CUDA before (the demo model's
# training, transformers, an earlier engine) leaves a process whose forked child cannot use CUDA:
# "Cannot re-initialize CUDA in forked subprocess". Spawned engine processes start clean whatever
# ran here before.
MULTIPROC_METHOD_ENV = "VLLM_WORKER_MULTIPROC_METHOD"
PARAMS_KEPT = 64  # SamplingParams kept for reuse: distinct settings and budgets, then all dropped
LOG_DRAIN_S = 2.0  # how long an ended engine's last output is given to reach its log
SPANS_KEPT = 1024  # finished requests whose image spans are kept (their blocks may still be drawn)


def use_spawn_for_engine_processes() -> None:
    """Makes vLLM spawn, never fork, its engine processes (set before vLLM reads its settings)."""
    os.environ[MULTIPROC_METHOD_ENV] = "spawn"


def check_vllm_version() -> str:
    import vllm

    parts = tuple(int(p) for p in vllm.__version__.split(".")[:2] if p.isdigit())
    if not SUPPORTED_VLLM[0] <= parts <= SUPPORTED_VLLM[1]:
        raise EngineStartError(
            f"vLLM {vllm.__version__} is installed; the workbench supports "
            f"{'.'.join(map(str, SUPPORTED_VLLM[0]))} to {'.'.join(map(str, SUPPORTED_VLLM[1]))}. "
            "Run the installer again (python3 packaging/install.py --reinstall).")
    return vllm.__version__


@dataclass
class _Live:
    """Book-keeping for one running request."""

    submitted: float
    first: float = 0.0
    last: float = 0.0
    num_tokens: int = 0
    gaps: list[float] | None = None  # kept only where the request asked (ChatRequest.record_gaps)


def _refused(exc: Exception, request: ChatRequest) -> ValueError:
    """vLLM's words on a request with images it would not take, with the fix."""
    from workbench.engine.vllm_plugin.mm_requests import is_too_long

    if is_too_long(exc):  # the template's text alone (0.32), or with the images where vLLM renders inside
        return PromptTooLongError(f"{exc} Send fewer or smaller images, start a new chat, or raise max_model_len "
                                  "in the engine settings.")
    names = ", ".join(image.ref.name for m in request.messages for image in m.images)
    return ImagesRefusedError(f"vLLM's processor refused this request's images ({names}): {exc}. Check the images "
                              "(attach them again, or other copies), or the engine's mm_processor_kwargs.")


class EngineSession(Backend):
    """The local engine: vLLM's ``LLMEngine`` in this process, its EngineCore in a process of its own."""

    capabilities = Capabilities(kv_blocks="physical", memory="nvml",
                                stats=frozenset({"ttft", "decode_rate", "cached_tokens", "queue_time"}),
                                live_stats="stat-logger")

    def __init__(self, config: EngineConfig):
        self.config = config
        self.engine = None
        self.tokenizer = None
        self._params: dict[tuple, object] = {}  # (settings, max tokens) -> vLLM's SamplingParams
        self.engine_pids: list[int] = []
        self.probe = LocalKVProbe(self)
        self.live: dict[str, _Live] = {}
        self.id_map: dict[str, str] = {}  # engine-internal id -> the caller's id
        self.vllm_version = ""
        self.model_path = config.model
        self.watchdog: EngineWatchdog | None = None
        self.gone = False  # the watchdog saw the engine core exit
        self.on_cpu = True
        self.log_path: Path | None = None  # the engine's own log of its latest start
        self.run_folder: Path | None = None  # the files the engine makes while it runs (run_folder)
        self._log_capture: EngineLogCapture | None = None  # copies the engine's output into log_path
        self.stats_logging = True  # vLLM's per-step statistics reach the events (set_stats_logging)
        self._stats_switch: StatLoggerSwitch | None = None
        self.workers: tuple[WorkerMemory, ...] = ()
        self.engine_core_cores: tuple[int, ...] = ()  # where the engine core was moved (placement)
        self.vision: VisionInfo | None = None  # what the running model takes in images (None: text only)
        # Where each request's images sit in its prompt (the caller's id); read into the KV snapshots.
        self.image_spans: dict[str, tuple[ImageSpan, ...]] = {}
        self._spans_finished: deque[str] = deque()

    # -------------------------------------------------------------- life cycle
    def start(self, report: Callable[[StartProgress], None]) -> None:
        report = WholeStart(report)  # one bar over the demo model's build and the engine's start
        self.gone = False
        mark_owner()
        use_spawn_for_engine_processes()
        if self.config.model in (DEMO_MODEL, DEMO_VL_MODEL):
            self.model_path = model_for_start(self.config.model, report)
        self.log_path = new_log_path()
        capture = self._log_capture = EngineLogCapture(self.log_path)
        if not capture.attach():  # the engine processes inherit it: their whole output lands in the log
            self.log_path = None
        try:
            self._start_engine(report, capture)
        finally:
            capture.detach_parent()
        engine = self.engine
        try:
            self.watchdog = EngineWatchdog(self.engine_pids, lambda: self._on_engine_gone(engine))
            skip_tokenizer = self.config.option("skip_tokenizer_init", False)
            self.tokenizer = None if skip_tokenizer else self.engine.get_tokenizer()
            self._params.clear()  # built for the engine before
        except Exception as exc:  # the engine runs but is unusable: it must not outlive this start
            self.shutdown()
            raise EngineStartError(f"The engine started but its tokenizer could not be loaded: "
                                   f"{type(exc).__name__}: {exc}. Check the model folder's tokenizer files.",
                                   self._log_name()) from exc
        report(progress_for("ready"))

    def _log_name(self) -> str | None:
        return str(self.log_path) if self.log_path is not None else None

    def _start_engine(self, report: Callable[[StartProgress], None], capture: EngineLogCapture) -> None:
        report(progress_for("import"))
        self.vllm_version = check_vllm_version()
        from vllm.engine.arg_utils import EngineArgs
        from vllm.platforms import current_platform
        from vllm.v1.engine.llm_engine import LLMEngine

        self.on_cpu = current_platform.is_cpu()
        dummy_weights = self.config.option("load_format") == "dummy"
        self.model_path = resolve_model(self.model_path, require_weights=not dummy_weights)
        args = EngineArgs(**{**self.config.engine_kwargs(self.on_cpu), "model": self.model_path})
        self.run_folder = new_run_folder()  # vLLM's sockets and the phase file: gone as the engine stops
        phase_file = self.run_folder / "phases.log"
        before = child_pids()
        report(progress_for("process"))
        stat_logger = make_stat_logger_factory(self._deliver_stats)
        with (environment_for_start({PHASE_FILE_ENV: str(phase_file), **vllm_env(self.run_folder)}),
              PhaseWatcher(phase_file, report) as watcher):
            try:
                self.engine = LLMEngine.from_engine_args(args, usage_context=usage_context(self.config.usage_context),
                                                         stat_loggers=[stat_logger])
            except Exception as exc:
                self.engine_pids = sorted(child_pids(vllm_only=True) - before)
                capture.detach_parent()
                run_folder, self.run_folder = self.run_folder, None  # its phase file is read first
                self.shutdown()
                capture.wait_closed(timeout_s=5.0)  # the engine processes' last lines reach the log
                watcher.catch_up()  # the phase the start failed in, as the engine core wrote it
                remove_run_folder(run_folder)
                message, retry = explain_start_failure(exc, capture.text(), self.model_path,
                                                       self.config.max_model_len, watcher.error,
                                                       self.config.gpu_memory_utilization)
                raise EngineStartError(message, self._log_name(), retry) from exc
        self.engine_pids = sorted(child_pids(vllm_only=True) - before)
        self._stats_switch = StatLoggerSwitch(self.engine, stat_logger)
        self._stats_switch.set(self.stats_logging)
        self.workers = self._read_memory_split()
        self.vision = self._read_vision()
        if self.on_cpu:
            self.engine_core_cores = place_engine_core(self.engine_pids, [w.pid for w in self.workers])
            if self.engine_core_cores:  # into the engine's log, beside vLLM's own lines on its cores
                print(f"workbench: vLLM's engine core moved to CPU {list(self.engine_core_cores)}, the model "
                      "worker's, leaving the spare core to the window and the client", flush=True)

    def _read_vision(self) -> VisionInfo | None:
        from workbench.engine.vllm_plugin.mm_requests import vision_info

        return vision_info(self.engine, self.model_path)

    def _read_memory_split(self) -> tuple[WorkerMemory, ...]:
        """Each worker's weights and KV cache, as vLLM measured and allocated them; () where the
        engine cannot tell (the memory panel then shows what it can without the split)."""
        try:
            split = self.engine.engine_core.call_utility("workbench_memory_split")
        except Exception:  # an engine without the plugin's method: no split, never a failed start
            return ()
        kv_bytes = int(split["kv_cache_bytes_per_worker"])
        workers = tuple(WorkerMemory(int(w["pid"]), w["device"], w["device_index"], int(w["weights_bytes"]),
                                     w["weights_source"], kv_bytes) for w in split["workers"])
        return workers

    # -------------------------------------------------------------- statistics
    def _deliver_stats(self, step: StepStats) -> None:
        """Called by vLLM inside ``engine.step()`` with the step's statistics."""
        events = getattr(self, "events", None)
        if self.stats_logging and events is not None:
            events.stats_recorded(step)

    def set_stats_logging(self, on: bool) -> None:
        """Switches the workbench's stat logger on or off; off, it is out of vLLM's list of loggers,
        so stepping runs as plain vLLM does (the benchmarks' path (a))."""
        self.stats_logging = on
        if self._stats_switch is not None:
            self._stats_switch.set(on)

    def shutdown(self) -> None:
        if self.watchdog is not None:
            self.watchdog.stop()
            self.watchdog = None
        engine, self.engine = self.engine, None
        if engine is not None:
            try:
                engine.engine_core.shutdown()
            except Exception:  # a dead engine core cannot be shut down politely
                pass
            del engine
        gc.collect()
        kill_processes(self.engine_pids)
        remove_run_folder(self.run_folder)
        self.run_folder = None
        self.engine_pids = []
        self._stats_switch, self.workers, self.vision = None, (), None
        self.image_spans.clear()
        self._spans_finished.clear()
        self.live.clear()
        self.id_map.clear()
        self.probe.reset()

    @property
    def running(self) -> bool:
        return self.engine is not None

    def info(self) -> EngineInfo:
        return EngineInfo(
            model=self.model_path, vllm_version=self.vllm_version, device="cpu" if self.on_cpu else "cuda",
            max_model_len=self.config.max_model_len, chat_template=self.chat_template(),
            engine_pids=tuple(self.engine_pids), workers=self.workers, num_kv_blocks=self.num_kv_blocks,
            resolved=self.resolved_settings(), vision=self.vision,
        )

    def resolved_settings(self) -> dict[str, object]:
        """vLLM's resolved engine arguments of the running engine ({} with none)."""
        from workbench.engine.vllm_plugin.engine_args import resolved_settings

        return resolved_settings(self.engine) if self.engine is not None else {}

    @property
    def num_kv_blocks(self) -> int | None:
        """vLLM's own count of the KV pool, as its engine core reported it at the start."""
        from workbench.engine.vllm_plugin.engine_args import real_pool

        return real_pool(self.engine)[0] if self.engine is not None else None

    # -------------------------------------------------------------- requests
    def chat_template(self) -> str | None:
        return getattr(self.tokenizer, "chat_template", None)

    def render_prompt(self, request: ChatRequest) -> list[int]:
        if self.tokenizer is None:
            raise PromptTooLongError("This engine runs without a tokenizer: send token ids.")
        if request.prompt is not None:  # a completion: the text as it is, no template
            return list(self.tokenizer.encode(request.prompt))
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        template = request.chat_template or self.chat_template()
        if template:
            ids = self.tokenizer.apply_chat_template(messages, chat_template=template, add_generation_prompt=True,
                                                     tokenize=True)
            if isinstance(ids, dict) or hasattr(ids, "input_ids"):
                ids = ids["input_ids"]
        else:  # a base model without a template: a plain transcript
            text = "".join(f"{m['role'].capitalize()}: {m['content']}\n" for m in messages) + "Assistant:"
            ids = self.tokenizer.encode(text)
        return list(ids)

    def submit(self, request: ChatRequest) -> None:
        if request.prompt_token_ids is None and any(m.images for m in request.messages):
            return self._submit_with_images(request)
        prompt_ids = request.prompt_token_ids or self.render_prompt(request)
        limit = self.config.max_model_len
        if len(prompt_ids) >= limit:
            raise PromptTooLongError(
                f"The prompt is {len(prompt_ids)} tokens (system prompt and conversation), but the engine's "
                f"max_model_len is {limit}. Shorten the system prompt or the message, start a new chat, "
                f"or raise max_model_len in the engine settings.")
        params = self._sampling_params(request.sampling, limit - len(prompt_ids))
        # vLLM refuses a priority other than 0 where it schedules first come, first served
        priority = request.priority if self.config.schedules_by_priority else 0
        internal = self._add_request(request.request_id, {"prompt_token_ids": prompt_ids}, params, priority)
        self.live[request.request_id] = _Live(time.monotonic(), gaps=[] if request.record_gaps else None)
        self.id_map[internal] = request.request_id

    def _submit_with_images(self, request: ChatRequest) -> None:
        """A request with images: the template's text and the pictures, processed by vLLM's own input
        processor (its HF processor expands each image's placeholder); each image's place is kept."""
        from workbench.engine.vllm_plugin.mm_requests import process_request

        prompt = image_prompt(self, request)  # refuses a text-only model, too many or unreadable images
        params = self._sampling_params(request.sampling, self.config.max_model_len)
        priority = request.priority if self.config.schedules_by_priority else 0
        try:
            processed, spans = process_request(self.engine, request.request_id, prompt, params, priority,
                                               self._check_image_prompt_length)
        except PromptTooLongError:
            raise
        except Exception as exc:  # vLLM's checks and its HF processor's: ValueError, VLLMValidationError, ...
            raise _refused(exc, request) from exc
        internal = self._add_request(request.request_id, processed, params, priority)
        self.image_spans[request.request_id] = spans
        self.live[request.request_id] = _Live(time.monotonic(), gaps=[] if request.record_gaps else None)
        self.id_map[internal] = request.request_id

    def _add_request(self, request_id: str, prompt, params, priority: int) -> str:
        """vLLM's ``add_request``; its id for the request (vLLM 0.26 returns none: the caller's)."""
        try:
            internal = self.engine.add_request(request_id, prompt, params, priority=priority)
        except Exception as exc:
            if is_engine_dead(exc):
                raise EngineGoneError(str(exc)) from exc
            raise
        return internal if isinstance(internal, str) else request_id

    def _check_image_prompt_length(self, length: int, image_tokens: int) -> None:
        limit = self.config.max_model_len
        if length >= limit:
            raise PromptTooLongError(
                f"The prompt is {length} tokens with its images ({image_tokens} of them image tokens), but the "
                f"engine's max_model_len is {limit}. Send fewer or smaller images (the processor's max_pixels sets "
                "their tokens), start a new chat, or raise max_model_len in the engine settings.")

    def _forget_spans(self, request_id: str) -> int:
        """A finished request's image tokens; its spans stay a while, for the blocks still drawn."""
        spans = self.image_spans.get(request_id)
        if not spans:
            return 0
        self._spans_finished.append(request_id)
        while len(self._spans_finished) > SPANS_KEPT:
            self.image_spans.pop(self._spans_finished.popleft(), None)
        return sum(span.length for span in spans)

    def _sampling_params(self, sampling: SamplingSettings, room: int):
        """One ``SamplingParams`` per settings and token budget, shared by the requests that ask the
        same (64 streams, a batch's rows): vLLM copies it for each request (``params.clone()`` in its
        input processor), and building and validating a new one costs each request 10-60 µs."""
        key = (sampling, min(sampling.max_tokens, room))
        params = self._params.get(key)
        if params is None:
            if len(self._params) >= PARAMS_KEPT:
                self._params.clear()
            params = self._params[key] = to_sampling_params(sampling, room, self.tokenizer is not None)
        return params

    def abort(self, request_id: str) -> None:
        """vLLM gives no final output for an abort in ``LLMEngine``: the session makes it."""
        live = self.live.pop(request_id, None)
        if live is None:
            return
        self.engine.abort_request([request_id])
        if self.image_spans:
            self._forget_spans(request_id)
        self.events.request_finished(StreamEvent(request_id, "", finished=True, finish_reason="aborted"))

    def _on_engine_gone(self, engine) -> None:
        """The watchdog saw the engine core exit (its thread). A step already waiting for output is woken with
        vLLM's ``EngineDeadError``; an idle engine has work from now on, so that the loop steps it, the step
        raises that error, and the death is reported at once, not at the next request."""
        self.gone = True
        wake_blocked_step(engine)

    def has_work(self) -> bool:
        return bool(self.live) or self.gone

    def advance(self) -> None:
        texts, finished = self.step()
        events = self.events
        if texts:
            events.texts_arrived(texts)
        for event in finished:
            events.request_finished(event)

    def step(self) -> tuple[dict[str, str], list[StreamEvent]]:
        """One engine step: new text per request, and a final event for each request that ended."""
        now = time.monotonic()
        return self._stream_events(self.engine.step(), now)

    def _stream_events(self, outputs, now: float) -> tuple[dict[str, str], list[StreamEvent]]:
        """What one step's outputs mean for each live request; ``now`` is the step's start.

        Runs once per output per step (256 outputs a step at full batch), so it creates no object
        per token: text goes into one dict, and events are made only for finished requests."""
        texts: dict[str, str] = {}
        finished: list[StreamEvent] = []
        live_requests = self.live
        for out in outputs:
            live = live_requests.get(out.request_id)
            if live is None or not out.outputs:
                continue  # aborted between steps
            completion = out.outputs[0]
            num_new = len(completion.token_ids)
            if num_new:
                if not live.first:
                    live.first = now
                elif live.gaps is not None:
                    live.gaps.extend([(now - live.last) / num_new] * num_new)
                live.last = now
                live.num_tokens += num_new
            if completion.text:
                texts[out.request_id] = completion.text
            if out.finished:
                del live_requests[out.request_id]
                figures = figures_from_output(out, live.num_tokens, (live.submitted, live.first, live.last))
                if self.image_spans:
                    figures = replace(figures, num_image_tokens=self._forget_spans(out.request_id))
                finished.append(StreamEvent(out.request_id, "", True, completion.finish_reason, figures,
                                            tuple(live.gaps) if live.gaps else ()))
        return texts, finished

    # -------------------------------------------------------------- KV cache
    def kv_probe(self) -> LocalKVProbe:
        return self.probe

    def describe_end(self) -> str:
        """How the engine's processes ended: the signal, and what is known of who sent it."""
        return describe_exit(self.engine_pids, self.watchdog, self._drained_log)

    def _drained_log(self) -> str:
        """The engine's log once the copying thread has written what the ended processes printed
        (it ends when they have all exited; a moment at most where one still holds the pipe)."""
        if self.log_path is None:
            return ""
        if self._log_capture is not None:
            self._log_capture.wait_closed(LOG_DRAIN_S)
        return read_log(self.log_path)
