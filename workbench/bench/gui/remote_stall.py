"""The app's window attached to a server while many streams run: how late the GUI's event loop gets.

The real window runs offscreen, attached through Server > Connect (with the app's own engine client: in
the engine-client process by default, whose CPU counts as the client's); 16 conversations stream through
the chat pane (their text rendered) and the rest go to the engine host as a batch would. A probe
timer asks for a tick every 5 ms; a stall is how late a tick comes (as ``bench gui-stall``).
"""
from __future__ import annotations

import time

import psutil
from PySide6.QtCore import QTimer

from workbench.bench.gui.gui_stall import PROBE_INTERVAL_MS, Probe, _stall_figures
from workbench.bench.gui.window_driver import EndedRequests, application, run_until, type_and_send

TIMEOUT_MS = 3_600_000
NUM_CHAT = 16


def run_remote_gui_stall(spec, args, requests: list) -> dict:
    from workbench.app import build_window, demo_engine_config
    from workbench.bench.remote_bench import scrape_record, server_generation_tokens
    from workbench.bench.scrape_intervals import scrape_interval_held
    from workbench.engine.commands import Submit
    from workbench.engine.sampling import SamplingSettings

    application()
    # The app's own client (WORKBENCH_ENGINE_CLIENT): with the process client the server's streams and
    # scrapes run in the engine-client process, and its CPU counts as the client's too.
    window, engine = build_window(demo_engine_config(), start_engine=False, keep=False)
    window.resize(1500, 900)
    window.show()
    model = window.model
    run_until(engine.host, lambda event: model.engine.settled(model.latest_start_id), 120_000,
              lambda: window.server.connect(spec))
    if not model.engine.ready:
        window.close()
        raise RuntimeError(f"could not attach: {model.engine.message}")
    host = engine.host
    in_client = getattr(host, "client_pid", None) is not None

    def scrapes() -> tuple[list[float], list[float]]:
        return host.call(scrape_record) if in_client else scrape_record(host.loop)

    def cpu_s() -> float:
        processes = [psutil.Process()] + ([psutil.Process(host.client_pid)] if in_client else [])
        return sum(t.user + t.system for t in (p.cpu_times() for p in processes))
    num_chat = min(NUM_CHAT, len(requests))
    chat = window.chat
    chat.sampling.form.set_settings(SamplingSettings(max_tokens=args.output_len, ignore_eos=True))
    probe, ended = Probe(), EndedRequests(len(requests))
    timer = QTimer()
    timer.setInterval(PROBE_INTERVAL_MS)
    timer.timeout.connect(probe.on_tick)
    timer.start()
    cpu_before, scrapes_before = cpu_s(), len(scrapes()[0])
    drawn_before = window.plots.num_draws
    tokens_before = server_generation_tokens(spec.api_root)
    started = time.perf_counter()

    def send() -> None:
        for i in range(num_chat):
            type_and_send(chat, f"Question {i}: what is a KV cache?")
        for request in requests[num_chat:]:
            engine.host.post(Submit(request))

    run_until(engine.host, ended, TIMEOUT_MS, send)
    elapsed = time.perf_counter() - started
    timer.stop()
    cpu_after = cpu_s()
    times, latencies = (values[scrapes_before:] for values in scrapes())
    tokens = int(server_generation_tokens(spec.api_root) - tokens_before)  # the server's own count
    replies = [c.messages[-1] for c in model.conversations.values() if c.messages]
    plots_drawn = window.plots.num_draws - drawn_before
    window.close()
    used_s = cpu_after - cpu_before
    return {"path": "gui", "streams": len(requests), "finished": ended.finished, "failed": len(ended.failures),
            "first_failure": ended.failures[0][:200] if ended.failures else "",
            "chat_replies_done": sum(r.status == "done" for r in replies),
            "output_tokens": tokens, "elapsed_s": elapsed, "output_tok_per_s": tokens / elapsed if elapsed else 0.0,
            "client": "process" if in_client else "thread",
            "client_cpu_s": used_s, "client_cpu_us_per_token": used_s / tokens * 1e6 if tokens else float("nan"),
            "scrape_parse_ms_mean": float("nan"), "scrape_interval_s": args.scrape_interval,
            "ticks": len(probe.ticks), "plots_drawn": plots_drawn,
            **scrape_interval_held(times, args.scrape_interval, latencies), **_stall_figures(probe.ticks, elapsed)}
