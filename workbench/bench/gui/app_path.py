"""Path (d) of ``bench compare``: the app itself, the real window offscreen, on the benchmark's shared engine.

Each run hands the engine to the window's engine thread (``AdoptEngine``), runs the GUI's own event
loop while the requests stream, and takes the engine back (``ReleaseEngine``) so that (a) and (b) can
use it next. Everything the app does runs: the heatmap's 10 Hz timer drawing the pool, the live
plots of vLLM's statistics and the memory panel (its telemetry thread reading at 4 Hz), the visible
conversation rendering its stream in the chat pane (its question typed and sent as a person would,
padded with words so that its prompt is as long as the other paths' prompts; the new chat and the
typing come before the timed part, as a person's come seconds before Send), and the other requests
sent straight to the engine host, as a batch would send them. Storage is on, as in the app: the
window keeps its conversation (the streaming reply's text, its figures) and the engine runs in a
database in a temporary folder, written by the storage thread. Output tokens are counted as the
other paths count them (``BenchSession.recording_arrivals``); the run ends when the window has heard
that every request ended. The client CPU time counts every thread of the process, the GUI's too.

With the process client (``client="process"``) the engine lives in the window's engine-client process:
:meth:`AppPath.open_session` builds the window first and opens the shared engine there
(``bench.client_bench``); the handover is a call in the client, and the client process's CPU time
counts as the client's too.
"""
from __future__ import annotations

import random
import time

from workbench.bench.client_bench import ClientBenchSession
from workbench.bench.compare import CpuClock, RunStats, add_timings, set_tracking
from workbench.bench.engine_bench import BenchSession
from workbench.bench.gui.window_driver import (
    EndedRequests, application, run_until, set_chat_sampling, settle, type_question,
)
from workbench.engine.backend import ChatRequest
from workbench.engine.commands import AdoptEngine, ReleaseEngine, Submit
from workbench.engine.events import EngineState
from workbench.engine.sampling import SamplingSettings
from workbench.model.conversations import Conversation

HANDOVER_TIMEOUT_MS = 60_000
RUN_TIMEOUT_MS = 600_000
SETTLE_MS = 150  # after a new chat and the typing: the window draws them, as in the seconds a person types
WORDS = ("block", "cache", "prefix", "token", "engine", "paged", "attention", "request", "batch", "stream",
         "memory", "layer", "model", "prompt", "reply", "window", "heatmap", "pool", "hash", "evict")


def typed_question(session: BenchSession, system_prompt: str, prompt_len: int, seed: int) -> str:
    """Random words whose chat prompt (system prompt and template included) is ``prompt_len`` tokens
    or just over; fresh words each run, so that only the system prompt can come from the prefix cache."""
    rng = random.Random(seed)
    words = [rng.choice(WORDS) for _ in range(prompt_len)]

    def prompt_tokens(num_words: int) -> int:
        request, _ = Conversation("length").ask(" ".join(words[:num_words]), system_prompt, SamplingSettings())
        return len(session.render_prompt(request))

    low, high = 1, prompt_len  # the fewest words that reach prompt_len: every word is a token or more
    while low < high:
        middle = (low + high) // 2
        low, high = (middle + 1, high) if prompt_tokens(middle) < prompt_len else (low, middle)
    return " ".join(words[:low])


class AppPath:
    """The window, built on first use and kept for every run; ``close`` before the engine shuts down."""

    def __init__(self, without: frozenset[str] = frozenset(), client: str | None = None):
        self.window = None
        self.client = client  # "process" or "thread" (None: the app's default)
        self.without = without  # attribution runs: "heatmap" (its timer stopped), "chat" (nothing rendered),
        # "storage" (nothing kept), "plots" (the live plots and the memory panel not drawn)

    def __call__(self, session: BenchSession, prompts: list[list[int]], sampling: SamplingSettings) -> RunStats:
        in_client = isinstance(session, ClientBenchSession)
        if not in_client:  # in the client, adopt_for_app does both
            set_tracking(session, True)  # the pool in sync, as after the window's own start (not timed)
            session.set_stats_logging(True)  # the plots' statistics, as in the app
        window = self._window(session.config)
        set_chat_sampling(window.chat, sampling)
        question = typed_question(session, window.chat.sampling.system_prompt(), len(prompts[0]), prompts[0][0])
        host = window.engine.host
        calls = []
        adopt = ((lambda: calls.append(session.post_adopt(window.model.next_start_id()))) if in_client
                 else (lambda: host.post(AdoptEngine(session, window.model.next_start_id()))))
        self._hand_over(adopt, lambda: window.model.engine.ready and window.model.engine.settled(window.model.latest_start_id))
        if calls:
            host.wait_reply(calls[0], timeout_s=10.0)
        ended, stats = EndedRequests(len(prompts)), RunStats("d")
        frames_before = window.heatmap.num_frames_drawn
        if "heatmap" in self.without:
            window.heatmap_timer.stop()
        window.draw_plots = "plots" not in self.without
        if "chat" not in self.without:  # a new chat and the question typed, before Send is pressed
            type_question(window.chat, question)
            settle(SETTLE_MS)
        with session.recording_arrivals() as arrivals:
            cpu = CpuClock(session.engine_pids, getattr(session, "client_pids", ()))
            started = time.perf_counter()

            def send() -> None:
                if "chat" in self.without:
                    host.post(Submit(ChatRequest(f"d-{started}-chat", (), sampling, prompt_token_ids=tuple(prompts[0]))))
                else:
                    window.chat.send()
                for i, prompt in enumerate(prompts[1:]):
                    host.post(Submit(ChatRequest(f"d-{started}-{i}", (), sampling, prompt_token_ids=tuple(prompt))))

            all_ended = run_until(host, ended, RUN_TIMEOUT_MS, send)
            stats.elapsed_s = time.perf_counter() - started
            cpu.stop(stats)
        window.heatmap_timer.start()
        self._hand_over(lambda: host.post(ReleaseEngine()), lambda: window.model.engine.state is EngineState.STOPPED)
        if not all_ended or ended.failures:
            raise RuntimeError(f"(d): {ended.finished} of {len(prompts)} requests finished; failed: {ended.failures[:3]}")
        stats.heatmap_frames = window.heatmap.num_frames_drawn - frames_before
        stats.output_tokens = sum(count for request in arrivals.values() for _, count in request)
        add_timings(stats, started, arrivals.values())
        return stats

    def open_session(self, config) -> ClientBenchSession:
        """The shared engine in the window's engine-client process (``run_comparison``'s ``open_session``)."""
        return ClientBenchSession(self._window(config).engine.host, config)

    def _window(self, config):
        if self.window is None:
            import tempfile
            from pathlib import Path

            from workbench.app import build_window
            from workbench.storage.store import Storage

            application()
            storage = None
            if "storage" not in self.without:
                storage = Storage.open(Path(tempfile.mkdtemp(prefix="workbench-bench-d-")) / "workbench.db")
                print(f"(d) keeps its conversation in {storage.path}", flush=True)
            self.window, _ = build_window(config, start_engine=False, storage=storage,
                                          keep=storage is not None, client=self.client)
            self.window.resize(1400, 860)
            self.window.show()
        return self.window

    def _hand_over(self, post, done) -> None:
        """Posts AdoptEngine or ReleaseEngine and runs the event loop until the window has heard the result."""
        if not run_until(self.window.engine.host, lambda event: done(), HANDOVER_TIMEOUT_MS, post):
            raise RuntimeError(f"(d): the engine thread did not answer in time ({self.window.model.engine.message})")

    def close(self) -> None:
        """Closes the window, which stops its engine thread; the engine it released runs on."""
        if self.window is not None:
            storage, writer = self.window.storage, self.window.storage and self.window.storage.writer
            self.window.close()
            self.window = None
            if writer is not None:
                print(f"(d) storage thread: {writer.num_records:,} records, {writer.num_commits:,} commits, "
                      f"{writer.cpu_s * 1e3:.1f} ms of CPU in all; {storage.path}", flush=True)
