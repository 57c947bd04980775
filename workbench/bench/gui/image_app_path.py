"""``bench images``: image requests through the app, its window offscreen, against plain vLLM on one engine.

The shared engine lives where the app puts vLLM's client loop (the engine-client process by default);
(a) steps it there, as vLLM ships (``image_compare.run_plain_in_client``), and (d) hands it to the
window, whose engine path sends the same kind of requests (``Message.images``) while the heatmap, the
live plots and the memory panel run. A 5 ms probe timer measures the GUI's stalls during each (d) run.
The order alternates each repeat (a d, d a, ...), each repeat with fresh pictures for both paths.
"""
from __future__ import annotations

import time

from PySide6.QtCore import QTimer

from workbench.bench.client_bench import ClientBenchSession
from workbench.bench.compare import CpuClock, RunStats, add_timings
from workbench.bench.gui.app_path import RUN_TIMEOUT_MS, AppPath
from workbench.bench.gui.gui_stall import PROBE_INTERVAL_MS, Probe, _stall_figures
from workbench.bench.gui.window_driver import EndedRequests, run_until, settle
from workbench.bench.image_compare import (
    ImageComparison, ImageWorkload, image_requests, run_plain_images, run_plain_in_client,
)
from workbench.engine.commands import AdoptEngine, ReleaseEngine, SubmitAll
from workbench.engine.events import EngineState, RequestFinished
from workbench.engine.metrics import percentile
from workbench.engine.sampling import SamplingSettings


class _Ended(EndedRequests):
    """Ended requests, and the image tokens of the requests that finished."""

    def __init__(self, expected: int):
        super().__init__(expected)
        self.image_tokens: list[int] = []

    def __call__(self, event) -> bool:
        if isinstance(event, RequestFinished) and event.event.figures is not None:
            self.image_tokens.append(getattr(event.event.figures, "num_image_tokens", 0))
        return super().__call__(event)


class ImageAppPath(AppPath):
    """(d) for image requests: the requests go to the window's engine host as a batch's would."""

    def __init__(self, client: str | None = None):
        super().__init__(client=client)
        self.ticks: list[float] = []
        self.image_tokens = 0

    def run(self, session, requests, sampling: SamplingSettings) -> tuple[RunStats, dict]:
        in_client = isinstance(session, ClientBenchSession)
        window = self._window(session.config)
        host, model = window.engine.host, window.model
        calls = []
        adopt = ((lambda: calls.append(session.post_adopt(model.next_start_id()))) if in_client
                 else (lambda: host.post(AdoptEngine(session, model.next_start_id()))))
        self._hand_over(adopt, lambda: model.engine.ready and model.engine.settled(model.latest_start_id))
        if calls:
            host.wait_reply(calls[0], timeout_s=10.0)
        settle(200)
        ended, stats, probe = _Ended(len(requests)), RunStats("d"), Probe()
        frames_before = window.heatmap.num_frames_drawn
        timer = QTimer(interval=PROBE_INTERVAL_MS)
        timer.timeout.connect(probe.on_tick)
        timer.start()
        with session.recording_arrivals() as arrivals:
            cpu = CpuClock(session.engine_pids, getattr(session, "client_pids", ()))
            started = time.perf_counter()
            all_ended = run_until(host, ended, RUN_TIMEOUT_MS, lambda: host.post(SubmitAll(tuple(requests))))
            stats.elapsed_s = time.perf_counter() - started
            cpu.stop(stats)
        timer.stop()
        self._hand_over(lambda: host.post(ReleaseEngine()), lambda: model.engine.state is EngineState.STOPPED)
        if not all_ended or ended.failures:
            raise RuntimeError(f"(d): {ended.finished} of {len(requests)} requests finished; failed: {ended.failures[:3]}")
        stats.heatmap_frames = window.heatmap.num_frames_drawn - frames_before
        stats.output_tokens = sum(count for request in arrivals.values() for _, count in request)
        add_timings(stats, started, arrivals.values())
        self.ticks.extend(probe.ticks)
        self.image_tokens = max(ended.image_tokens, default=0)
        stall = _stall_figures(probe.ticks, stats.elapsed_s) | {"heatmap_frames": stats.heatmap_frames}
        return stats, stall


def run_image_comparison(config, workload: ImageWorkload, client: str | None = None,
                         progress=lambda label: print(label, flush=True)) -> ImageComparison:
    app = ImageAppPath(client)
    in_client = client != "thread"
    if in_client:
        session = app.open_session(config)
        plain = lambda requests, sampling: session.host.call(run_plain_in_client, requests, sampling, timeout_s=1200.0)
    else:
        from workbench.bench.engine_bench import start_session

        session = start_session(config)
        plain = lambda requests, sampling: run_plain_images(session, requests, sampling)
    sampling = SamplingSettings(temperature=0.0, max_tokens=workload.output_len, ignore_eos=True)
    result = ImageComparison(workload, environment={"vllm": session.vllm_version,
                                                    "device": "cpu" if session.on_cpu else "cuda"})
    all_stalls: list[float] = []
    try:
        warm = ImageWorkload(min(8, workload.num_requests), workload.output_len, workload.width, workload.height)
        progress("warm-up: (a) and (d), 8 requests each")
        plain(image_requests(warm, 999, "warm-a", sampling), sampling)
        app.run(session, image_requests(warm, 998, "warm-d", sampling), sampling)
        for rep in range(workload.repeats):
            order = ("a", "d") if rep % 2 == 0 else ("d", "a")
            for key in order:
                requests = image_requests(workload, rep * 2 + (key == "d") + 1, f"{key}{rep}", sampling)
                progress(f"repeat {rep + 1}/{workload.repeats}: ({key}) {len(requests)} image requests")
                if key == "a":
                    result.runs["a"].append(plain(requests, sampling))
                else:
                    ticks_before = len(app.ticks)
                    stats, stall = app.run(session, requests, sampling)
                    result.runs["d"].append(stats)
                    result.stalls.append(stall)
                    ticks = app.ticks[ticks_before:]
                    all_stalls += [max(0.0, (b - a) * 1e3 - PROBE_INTERVAL_MS) for a, b in zip(ticks, ticks[1:])]
                print(f"  ({key}) {result.runs[key][-1].tokens_per_s:,.0f} output tok/s", flush=True)
    finally:
        app.close()
        session.shutdown()
    result.image_tokens = app.image_tokens
    result.environment["stall_p99_all"] = percentile(all_stalls, 99) if all_stalls else float("nan")
    return result
