"""``bench presets table``: what each shipped preset buys, measured through path (d), the app's real window
offscreen (``app_path.AppPath``), on one model or shape.

For each preset: output tokens/s with ``--requests`` (256) requests at once, TTFT p50 / p99 of those,
single-stream decode speed (each also for plain vLLM stepping the same engine, path (a), run just before:
a slow row then says whether the preset or the app is slow), vLLM's KV blocks, the largest concurrency at ``max_model_len`` (vLLM's own
arithmetic: blocks × block size ÷ max_model_len, at most max_num_seqs), the engine's memory against the
preset's budget; long-context also serves one prompt as long as its ``max_model_len``. Prints a Markdown
table; the rows go to ``OUT/preset-table.jsonl``.

    vllm-workbench bench presets table --requests 16 --output-len 16 --out DIR          (CPU, demo model)
    vllm-workbench bench --shape qwen2.5-7b presets table --out DIR                     (the H200)
"""
from __future__ import annotations

import json
from pathlib import Path

from workbench.bench.compare import single_stream_rate
from workbench.bench.engine_bench import random_prompts, start_session
from workbench.bench.memory import engine_memory
from workbench.bench.preset_bench import ORDER, preset_config
from workbench.engine.metrics import percentile
from workbench.engine.sampling import SamplingSettings
from workbench.presets import store
from workbench.presets.machine import this_machine

LONG_OUTPUT = 16  # the long-context prompt leaves room for this many generated tokens


def budget_bytes(config, machine, stated: float | None = None) -> tuple[int | None, str]:
    """The memory a preset allows the engine: the share of the GPU it states (``gpu_memory_budget``), else
    vLLM's utilisation; on CPU its KV budget in bytes."""
    if machine.on_cpu:
        return config.kv_cache_memory_bytes, "KV budget (kv_cache_memory_bytes)"
    if stated is not None:
        return int(stated * machine.gpu_total_bytes) * max(1, int(config.option("tensor_parallel_size", 1))), \
            f"{stated:.0%} of the GPU (the preset's budget)"
    share = config.gpu_memory_utilization or 0.92  # vLLM's default where the preset leaves it out
    return int(share * machine.gpu_total_bytes) * max(1, int(config.option("tensor_parallel_size", 1))), \
        f"{share:.0%} of the GPU"


def measure_preset(app, session, name: str, config, vocab: int, requests: int, prompt_len: int,
                   output_len: int) -> dict:
    """The preset's engine (``session``, started on ``config``) through the app, and plain vLLM stepping the
    same engine beside it: the same prompts, (a) then (d), so that a slow row tells the preset from the app."""
    from workbench.bench.client_bench import ClientBenchSession, InClientPath
    from workbench.bench.compare import VARIANTS
    from workbench.bench.preset_bench import session_facts, session_facts_in_client

    in_client = isinstance(session, ClientBenchSession)
    plain = InClientPath("a") if in_client else VARIANTS["a"][1]
    machine = this_machine()
    sampling = SamplingSettings(temperature=0.0, max_tokens=output_len, ignore_eos=True)
    app(session, random_prompts(4, prompt_len, vocab, seed=7), sampling)  # warm-up, not counted
    prompts, one = random_prompts(requests, prompt_len, vocab, seed=11), random_prompts(1, prompt_len, vocab, seed=13)
    plain_run = plain(session, prompts, sampling)
    run = app(session, prompts, sampling)
    plain_single, single = plain(session, one, sampling), app(session, one, sampling)
    facts = session.host.call(session_facts_in_client) if in_client else session_facts(session)
    blocks, block_size = facts["num_kv_blocks"], facts["block_size"]
    row = dict(preset=name, requests=requests, tokens_per_s=run.tokens_per_s,
               ttft_p50_ms=percentile(run.ttft_s, 50) * 1e3, ttft_p99_ms=percentile(run.ttft_s, 99) * 1e3,
               single_stream_tok_s=single_stream_rate(single), plain_tokens_per_s=plain_run.tokens_per_s,
               plain_ttft_p50_ms=percentile(plain_run.ttft_s, 50) * 1e3,
               plain_ttft_p99_ms=percentile(plain_run.ttft_s, 99) * 1e3,
               plain_single_stream_tok_s=single_stream_rate(plain_single), num_kv_blocks=blocks,
               max_model_len=config.max_model_len, max_num_seqs=config.max_num_seqs,
               max_concurrency=min(config.max_num_seqs, blocks * block_size // config.max_model_len),
               quantization=config.option("quantization"))
    if name == "long-context":
        long = SamplingSettings(temperature=0.0, max_tokens=LONG_OUTPUT, ignore_eos=True)
        prompt = random_prompts(1, config.max_model_len - LONG_OUTPUT, vocab, seed=17)
        served = app(session, prompt, long)
        row.update(long_prompt_tokens=len(prompt[0]), long_output_tokens=served.output_tokens,
                   long_ttft_ms=served.ttft_s[0] * 1e3 if served.ttft_s else None)
    used, scope = engine_memory(session.engine_pids)
    kv_bytes = facts["kv_cache_bytes"]
    budget, what = budget_bytes(config, machine, store.load_catalog().entries[name].document.gpu_memory_budget)
    measured = kv_bytes if machine.on_cpu else used
    row.update(memory_bytes=used, memory_scope=scope, kv_cache_bytes=kv_bytes, budget_bytes=budget,
               budget_kind=what, fits_budget=bool(budget) and measured <= budget)
    print(json.dumps(row), flush=True)
    return row


def print_table(rows: list[dict]) -> None:
    gib = 1 << 30
    print("\n| preset | tok/s at " + f"{rows[0]['requests']} requests, app (plain vLLM) | TTFT p50 / p99 ms, app "
          "(plain) | single stream tok/s, app (plain) | KV blocks | largest concurrency at max_model_len | "
          "memory / budget | long prompt |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        long = f"{r['long_prompt_tokens']:,} + {r['long_output_tokens']} tokens served" if "long_prompt_tokens" in r else ""
        fits = "fits" if r["fits_budget"] else "OVER"
        budget = f"{(r['budget_bytes'] or 0) / gib:.2f} GiB {r['budget_kind']}"
        shown = r["kv_cache_bytes"] if "KV" in r["budget_kind"] else r["memory_bytes"]
        name = r["preset"] + (f" ({r['quantization']} weights)" if r.get("quantization") else "")
        print(f"| {name} | {r['tokens_per_s']:,.0f} ({r['plain_tokens_per_s']:,.0f}) | {r['ttft_p50_ms']:,.1f} / "
              f"{r['ttft_p99_ms']:,.1f} ({r['plain_ttft_p50_ms']:,.1f} / {r['plain_ttft_p99_ms']:,.1f}) | "
              f"{r['single_stream_tok_s']:,.0f} ({r['plain_single_stream_tok_s']:,.0f}) | {r['num_kv_blocks']:,} | "
              f"{r['max_concurrency']:,} "
              f"(max_num_seqs {r['max_num_seqs']}, max_model_len {r['max_model_len']:,}) | "
              f"{shown / gib:.2f} GiB / {budget}: {fits} | {long} |")


def run_table(base, vocab: int, requests: int, prompt_len: int, output_len: int, out: Path,
              presets: list[str] | None = None) -> list[dict]:
    from workbench.bench.gui.app_path import AppPath

    from workbench.engine.client_wire import engine_client_kind

    app, rows = AppPath(), []
    try:
        for name in presets or ORDER:
            config = preset_config(name, base)
            # With the process client the engine lives in the window's engine-client process.
            session = app.open_session(config) if engine_client_kind(None) == "process" else start_session(config)
            try:
                rows.append(measure_preset(app, session, name, config, vocab, requests, prompt_len, output_len))
            finally:
                session.shutdown()
    finally:
        app.close()
    out.mkdir(parents=True, exist_ok=True)
    (out / "preset-table.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    print_table(rows)
    return rows
