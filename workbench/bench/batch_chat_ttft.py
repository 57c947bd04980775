"""A chat reply's TTFT while a batch runs, headless: idle, and with a batch under each scheduling choice.

Each condition sends ``num_chats`` chat messages, one at a time, through the application model as the
chat pane does (system prompt, conversation, priority 0), while a batch keeps the engine busy. Two
TTFTs per reply: vLLM's (the request's arrival in the engine to its first token) and the user's (the
message sent to its first text in the application model, through the loop's ~50 ms text flushes).
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path

from workbench.batch.run import RunSettings, default_max_in_flight
from workbench.bench.batch_bench import HeadlessApp, load_prompts
from workbench.engine.commands import Submit
from workbench.engine.events import TextFlushed
from workbench.engine.metrics import percentile
from workbench.engine.sampling import SamplingSettings
from workbench.engine.spec import EngineConfig

CHAT_SAMPLING = SamplingSettings(max_tokens=32)


@dataclass(frozen=True)
class Condition:
    name: str
    batch: bool
    scheduling_policy: str | None  # "priority" or None (vLLM's default, first come first served)
    bounded: bool  # the batch keeps at most max_num_seqs - 4 requests in the engine; else all its rows


CONDITIONS = (
    Condition("idle (no batch)", False, "priority", True),
    Condition("batch: priority scheduling + bound (the app)", True, "priority", True),
    Condition("batch: bound only (first come first served)", True, None, True),
    Condition("batch: priority only (every row in the engine)", True, "priority", False),
    Condition("batch: neither (every row in the engine, first come first served)", True, None, False),
)


@dataclass
class ChatTTFT:
    condition: str
    vllm_ttft_s: list[float]
    user_ttft_s: list[float]
    batch_in_flight: list[int]

    def row(self) -> str:
        def stats(values: list[float]) -> str:
            if not values:
                return "–"
            return f"{statistics.median(values) * 1e3:,.0f} / {percentile(values, 90) * 1e3:,.0f} / " \
                   f"{max(values) * 1e3:,.0f}"

        in_flight = f"{statistics.median(self.batch_in_flight):,.0f}" if self.batch_in_flight else "0"
        return f"| {self.condition} | {len(self.user_ttft_s)} | {stats(self.vllm_ttft_s)} | " \
               f"{stats(self.user_ttft_s)} | {in_flight} |"


def _ask_and_wait(app: HeadlessApp, conversation_id: str) -> tuple[float | None, float | None]:
    """One chat message; returns (vLLM's TTFT, the user's TTFT)."""
    first_text: dict[str, float] = {}
    request = app.model.ask(conversation_id, "What is a KV cache?", CHAT_SAMPLING)

    def watch(event) -> None:
        if isinstance(event, TextFlushed) and request.request_id in event.chunks:
            first_text.setdefault(request.request_id, time.perf_counter())

    app.listener.watchers.append(watch)
    sent = time.perf_counter()
    app.loop.post(Submit(request))
    reply = app.model.conversations[conversation_id].messages[-1]
    try:
        app.run_until(lambda: reply.status != "streaming")
    finally:
        app.listener.watchers.remove(watch)
    user = first_text[request.request_id] - sent if request.request_id in first_text else None
    return (reply.figures.ttft_s if reply.figures else None), user


def measure_condition(app: HeadlessApp, condition: Condition, prompt_file: Path, batch_sampling: SamplingSettings,
                      num_chats: int, gap_s: float) -> ChatTTFT:
    max_num_seqs = app.model.config.max_num_seqs
    results = load_prompts(prompt_file)
    bound = default_max_in_flight(max_num_seqs) if condition.bounded else results.num_rows
    run = app.new_run(results, RunSettings(sampling=batch_sampling, prompts_as_chat=False, max_in_flight=bound))
    figures = ChatTTFT(condition.name, [], [], [])
    if condition.batch:
        run.start()
        warm = min(bound, max_num_seqs)
        app.run_until(lambda: run.progress().num_finished >= warm or run.state != "running")
    conversation = app.model.new_conversation()
    for _ in range(num_chats):
        pause_until = time.perf_counter() + gap_s
        app.run_until(lambda: time.perf_counter() >= pause_until)
        if condition.batch and run.state != "running":
            break  # the batch ran out: later samples would be idle ones
        figures.batch_in_flight.append(run.progress().num_in_flight)
        vllm_ttft, user_ttft = _ask_and_wait(app, conversation.conversation_id)
        if vllm_ttft is not None and user_ttft is not None:
            figures.vllm_ttft_s.append(vllm_ttft)
            figures.user_ttft_s.append(user_ttft)
    run.cancel()
    app.run_until(lambda: run.progress().num_in_flight == 0)
    return figures


def measure_chat_ttft(config: EngineConfig, prompt_file: Path, batch_sampling: SamplingSettings, num_chats: int,
                      gap_s: float, system_prompt: str, names: tuple[str, ...] = ()) -> list[ChatTTFT]:
    app = HeadlessApp(config, system_prompt)
    measured: list[ChatTTFT] = []
    try:
        for condition in CONDITIONS:
            if names and not any(name in condition.name for name in names):
                continue
            wanted = replace(config, scheduling_policy=condition.scheduling_policy)
            if not app.model.engine.ready or app.model.config != wanted:
                app.start(wanted)
            print(f"  {condition.name} …", flush=True)
            measured.append(measure_condition(app, condition, prompt_file, batch_sampling, num_chats, gap_s))
            print("  " + measured[-1].row(), flush=True)
    finally:
        app.shutdown()
    return measured


def measure_presets(base: EngineConfig, presets: tuple[str, ...], prompt_file: Path, batch_sampling: SamplingSettings,
                    num_chats: int, gap_s: float, system_prompt: str) -> list[ChatTTFT]:
    """What an interactive preset is for: each shipped preset (resolved for this machine on ``base``'s model,
    with the app's priority scheduling) under the app's condition, a bounded batch at priority 1 and chat
    replies at priority 0 beside it."""
    from workbench.bench.preset_bench import preset_config

    the_app = next(c for c in CONDITIONS if c.batch and c.bounded and c.scheduling_policy == "priority")
    app = HeadlessApp(base, system_prompt)
    measured: list[ChatTTFT] = []
    try:
        for name in presets:
            app.start(preset_config(name, replace(base, scheduling_policy="priority")))
            print(f"  {name} (max_num_seqs {app.model.config.max_num_seqs}) …", flush=True)
            figures = measure_condition(app, the_app, prompt_file, batch_sampling, num_chats, gap_s)
            figures.condition = f"{name}: {the_app.name}"
            measured.append(figures)
            print("  " + figures.row(), flush=True)
    finally:
        app.shutdown()
    return measured


TABLE_HEADER = ("| condition | chat replies | vLLM TTFT ms p50 / p90 / max | user TTFT ms p50 / p90 / max | "
                "batch requests in the engine (median) |\n|---|---|---|---|---|")
