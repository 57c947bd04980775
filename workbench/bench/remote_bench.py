"""``vllm-workbench bench remote``: the workbench attached to a server under many concurrent streams.

Headless (no Qt): the engine loop drives the remote backend as the app's engine thread does; it sends
``--streams`` requests at once and measures the client's CPU per output token (this process: the loop,
the network thread, the /metrics reader), whether /metrics was read every interval (gaps between
scrapes), and the parse cost of a scrape. With ``--gui`` the same streams run through the app's real
window (offscreen; needs Qt): its event loop's lateness (p99 stall) while the replies stream and the
plots and server panel update. The server is one this command serves through the workbench's own
"Serve" path (the model, or ``--shape``, with vLLM's engine arguments), or ``--url`` (one running
already, e.g. the GPU kit's API server).

    vllm-workbench bench --shape qwen2.5-0.5b --gpu-memory-utilization 0.4 --max-model-len 4096 \\
        remote --streams 256 --prompt-len 512 --output-len 256 --gui --out DIR
    vllm-workbench bench remote --url http://127.0.0.1:8000 --streams 256 --output-len 256
"""
from __future__ import annotations

import json
import statistics
import threading
import time
from dataclasses import replace
from pathlib import Path

import psutil

RESULT_PREFIX = "RESULT "


def add_parser(sub) -> None:
    remote = sub.add_parser("remote", help="the workbench attached to a server under concurrent streams")
    remote.add_argument("--url", default="", help="a running server's base URL (default: serve one here)")
    remote.add_argument("--streams", type=int, default=256, help="requests sent at once")
    remote.add_argument("--prompt-len", type=int, default=512, help="prompt tokens (token ids, sent as a completion)")
    remote.add_argument("--output-len", type=int, default=256)
    remote.add_argument("--scrape-interval", type=float, default=0.5, help="seconds between /metrics reads")
    remote.add_argument("--gui", action="store_true", help="also run the streams through the app's window (needs Qt)")
    remote.add_argument("--port", type=int, default=0, help="the served server's port (default: a free one)")
    remote.add_argument("--out", default="bench-remote-out")


def serve(config, port: int):
    """The server, through the workbench's "Serve" path; returns the running ServerProcess."""
    from workbench.remote.serve import ServerProcess, free_port
    from workbench.remote.spec import ServeOptions

    process = ServerProcess(ServeOptions(config, port or free_port(), free_port(), free_port()))
    started = time.monotonic()
    process.start()
    process.wait_ready()
    print(f"served {config.model} on {process.base_url} in {time.monotonic() - started:.1f} s "
          f"(log {process.log_path})", flush=True)
    return process


def server_generation_tokens(url: str) -> float:
    """The server's own count of generated tokens (its /metrics, all engines), read here."""
    import httpx

    from workbench.remote.prometheus import parse_metrics

    text = httpx.get(url.rstrip("/") + "/metrics", timeout=30, trust_env=False).text
    return parse_metrics(text).total().counter("generation_tokens")


def requests(num: int, prompt_len: int, output_len: int, vocab: int, tag: str):
    from workbench.engine.backend import ChatRequest
    from workbench.engine.sampling import SamplingSettings

    sampling = SamplingSettings(temperature=0.0, top_p=1.0, max_tokens=output_len, ignore_eos=True)
    return [ChatRequest(f"{tag}-{i}", (), sampling,
                        prompt_token_ids=tuple((i * 7919 + j * 31) % (vocab - 10) + 5 for j in range(prompt_len)))
            for i in range(num)]


class _Collector:
    """The loop's listener for the headless run: counts what ended and the tokens reported."""

    def __init__(self, expected: int):
        self.expected, self.finished, self.failed, self.output_tokens = expected, 0, [], 0
        self.done = threading.Event()
        self.ready = threading.Event()
        self.series = None

    def publish(self, event) -> None:
        from workbench.engine.events import EngineState, RequestFailed, RequestFinished, StateChanged

        if isinstance(event, StateChanged) and event.state in (EngineState.READY, EngineState.FAILED):
            self.ready.set()
        elif isinstance(event, RequestFinished):
            self.finished += 1
            self.output_tokens += event.event.figures.output_tokens if event.event.figures else 0
        elif isinstance(event, RequestFailed):
            self.failed.append(event.message)
        if self.finished + len(self.failed) >= self.expected:
            self.done.set()

    def snapshot_published(self, snapshot) -> None:
        pass

    def stats_published(self, series) -> None:
        self.series = series


def scrape_record(loop) -> tuple[list[float], list[float]]:
    """When each scrape of the attached server finished and how long the server took to answer it, from
    the process that runs the engine loop (``worker.call`` in the engine-client process)."""
    return list(loop.backend.scrape_times), list(loop.backend.scrape_latencies)


def run_headless(spec, args, vocab: int) -> dict:
    """The loop and the remote backend alone: client CPU per token and the scrape interval."""
    from workbench.bench.scrape_intervals import scrape_interval_held
    from workbench.engine.commands import Shutdown, StartEngine, Submit
    from workbench.engine.loop import EngineLoop
    from workbench.remote.backend import RemoteBackend

    collector = _Collector(args.streams)
    loop = EngineLoop(collector, backend_factory=lambda s: RemoteBackend(s, args.scrape_interval))
    thread = threading.Thread(target=loop.run, name="engine-loop")
    thread.start()
    loop.post(StartEngine(spec, 1))
    collector.ready.wait(120)
    backend = loop.backend
    if backend is None:
        loop.post(Shutdown())
        thread.join()
        raise RuntimeError("could not attach to the server")
    process = psutil.Process()
    cpu_before, started = process.cpu_times(), time.monotonic()
    parse_before, scrapes_before = backend.scrape_cpu_s, len(backend.scrape_times)
    for request in requests(args.streams, args.prompt_len, args.output_len, vocab, "headless"):
        loop.post(Submit(request))
    collector.done.wait(3600)
    elapsed = time.monotonic() - started
    cpu_after = process.cpu_times()
    times = list(backend.scrape_times)[scrapes_before:]
    latencies = list(backend.scrape_latencies)[scrapes_before:]
    num_scrapes = max(1, len(times))
    parse_ms = (backend.scrape_cpu_s - parse_before) / num_scrapes * 1e3
    loop.post(Shutdown())
    thread.join()
    cpu_s = (cpu_after.user - cpu_before.user) + (cpu_after.system - cpu_before.system)
    tokens = collector.output_tokens
    return {"path": "headless", "streams": args.streams, "finished": collector.finished,
            "failed": len(collector.failed), "first_failure": collector.failed[0][:200] if collector.failed else "",
            "output_tokens": tokens, "elapsed_s": elapsed, "output_tok_per_s": tokens / elapsed if elapsed else 0.0,
            "client_cpu_s": cpu_s, "client_cpu_us_per_token": cpu_s / tokens * 1e6 if tokens else float("nan"),
            "scrape_parse_ms_mean": parse_ms, "scrape_interval_s": args.scrape_interval,
            **scrape_interval_held(times, args.scrape_interval, latencies)}


def cmd_remote(args, config) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from workbench.remote.spec import ServerSpec

    process = None
    if not args.url:
        config = replace(config, max_num_seqs=max(config.max_num_seqs, args.streams))
        process = serve(config, args.port)
    url = args.url or process.base_url
    try:
        vocab = _vocab(config.model) if not args.url else 1000
        spec = ServerSpec(url)
        results = [run_headless(spec, args, vocab)]
        _print(results[-1])
        if args.gui:
            from workbench.bench.gui.remote_stall import run_remote_gui_stall

            results.append(run_remote_gui_stall(spec, args, requests(args.streams, args.prompt_len,
                                                                     args.output_len, vocab, "gui")))
            _print(results[-1])
    finally:
        if process is not None:
            process.stop()
            print(f"server stopped; still running: {process.running()}", flush=True)
    (out / "remote.json").write_text(json.dumps(results, indent=2))
    _table(results)
    return 0


def _vocab(model: str) -> int:
    return json.loads((Path(model) / "config.json").read_text())["vocab_size"]


def _print(result: dict) -> None:
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def _table(results: list[dict]) -> None:
    print("\n| path | streams | finished | output tok | tok/s | client CPU µs / token | scrapes | gap p50 / p99 s "
          "| late scrapes | /metrics answer s p50 / max | parse ms | GUI stall p99 / max ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        stall = (f"{r['stall_ms_p99']:.1f} / {r['stall_ms_max']:.1f}" if "stall_ms_p99" in r else "—")
        print(f"| {r['path']} | {r['streams']} | {r['finished']} | {r['output_tokens']:,} | {r['output_tok_per_s']:,.0f} | "
              f"{r['client_cpu_us_per_token']:.1f} | {r['num_scrapes']} | {r['gap_s_p50']:.3f} / {r['gap_s_p99']:.3f} | "
              f"{r['late_fraction']:.1%} | {r['answer_s_p50']:.3f} / {r['answer_s_max']:.3f} | "
              f"{r['scrape_parse_ms_mean']:.2f} | {stall} |")
    if results:
        print(f"\nmedian client CPU µs / token: "
              f"{statistics.median(r['client_cpu_us_per_token'] for r in results):.1f}")
