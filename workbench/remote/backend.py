"""A vLLM server as the engine loop's backend: requests streamed through its OpenAI-compatible API,
live statistics from its Prometheus ``/metrics``, a lost connection retried with backoff.

The loop's thread calls the :class:`~workbench.engine.backend.Backend` methods; the network work runs
on an asyncio loop of its own (``io_loop``). New text is joined per request under a lock and taken by
:meth:`RemoteBackend.advance`, which waits at most 20 ms for news, so commands still reach the loop
promptly. The news are frozen values on a queue (the engine's own ``RequestFinished``,
``RequestFailed`` and ``StepStats``, the server's ``ServerStateChanged`` and ``ServerMetricsRead``),
each delivered by a handler of its own. Nothing streamed is dropped: a stream cut off by a lost
connection ends as a failed request with its text kept, and the backend keeps trying the server until
it answers again.
"""
from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections import deque
from dataclasses import replace
from functools import singledispatchmethod
from typing import Callable

from workbench.engine.backend import Backend, Capabilities, ChatRequest, EngineInfo, StreamEvent
from workbench.engine.events import RequestFailed, RequestFinished
from workbench.engine.start_phases import EngineStartError, StartProgress, WholeStart, progress_for
from workbench.engine.stats import StepStats
from workbench.remote.errors import ConnectionLost, MalformedMetrics, NoAnswer, ServerError
from workbench.remote.events import ServerMetricsRead, ServerStateChanged
from workbench.remote.io_loop import IOLoop
from workbench.remote.openai_client import ServerFacts, explain, make_client, read_facts
from workbench.remote.sse_stream import open_stream_session, stream_request
from workbench.remote.prometheus import MetricsFormatError, ServerMetrics, parse_metrics, step_between
from workbench.remote.serve import ServerProcess, ServerStartError, kv_endpoints
from workbench.remote.spec import KVEventsEndpoint, ServerSpec

SCRAPE_INTERVAL_S = 0.5  # /metrics is read twice a second; the plots get one point per scrape
MAX_BACKOFF_S = 10.0
NEWS_WAIT_S = 0.02  # advance() waits this long for news, so the loop still sees its commands


def backoff_s(attempt: int) -> float:
    """Seconds before reconnect attempt ``attempt`` (1, 2, ...): 0.5, 1, 2, 4, 8, then 10."""
    return min(0.5 * 2 ** (attempt - 1), MAX_BACKOFF_S)


ModelForStart = Callable[[str, Callable[[StartProgress], None]], str]


class RemoteBackend(Backend):
    """A server, attached (``spec.serve`` None) or started here first ("Serve").

    ``model_for_start``: what a served configuration's model becomes on the start's thread before the
    server is started (the app's builds the demo model there, its progress part of the start's); None:
    the model as given."""

    def __init__(self, spec: ServerSpec, scrape_interval_s: float = SCRAPE_INTERVAL_S,
                 model_for_start: ModelForStart | None = None):
        self.spec = spec
        self.model_for_start = model_for_start
        self.server: ServerProcess | None = ServerProcess(spec.serve) if spec.serve is not None else None
        self.kv_events_endpoints: tuple[KVEventsEndpoint, ...] = (
            spec.kv_events_endpoints or (kv_endpoints(spec.serve) if spec.serve is not None else ()))
        # No physical block layout over the network: the KV view is the prefix cache as vLLM's KV
        # events describe it (blocks stored and removed), where the server publishes them.
        self.capabilities = Capabilities(kv_blocks="prefix-events" if self.kv_events_endpoints else "none",
                                         memory="none", stats=frozenset({"ttft", "decode_rate"}),
                                         live_stats="prometheus")
        self.scrape_interval_s = scrape_interval_s
        self.stats_bin_s = 0.9 * scrape_interval_s  # one point per scrape (the loop ticks on each)
        self.log_path = None  # the served server's log (the loop announces it: Engine > Show engine log)
        self.model_name = spec.model_name
        self.facts: ServerFacts | None = None
        self.state = "connecting"
        self.latest_metrics: ServerMetrics | None = None
        self.metrics_problem = ""
        self.scrape_times: deque[float] = deque(maxlen=100_000)  # when each scrape finished (benchmarks)
        self.scrape_cpu_s = 0.0  # CPU spent parsing scrapes (thread time)
        self.scrape_latencies: deque[float] = deque(maxlen=100_000)  # the server's answer time of each scrape
        self._io: IOLoop | None = None
        self._client = None  # httpx: the model list, /metrics
        self._session = None  # aiohttp: the streams (sse_stream)
        self._texts: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._news: queue.SimpleQueue = queue.SimpleQueue()
        self._wake = threading.Event()
        self._streams: dict[str, object] = {}  # request id -> its task's future
        self._aborted: set[str] = set()  # ended here already: a late end from the stream is dropped
        self._reconnecting = False

    # -------------------------------------------------------------- life cycle
    def start(self, report: Callable[[StartProgress], None]) -> None:
        report = WholeStart(report)  # one bar over a model built first and the server's start
        if self.server is not None:
            self._serve(report)
        report(progress_for("process", f"Connecting to {self.spec.api_root}", 0.9))
        self._io = IOLoop()
        self._client = self._io.call(self._new_client())
        self._session = self._io.call(self._new_session())
        try:
            self.facts = self._io.call(read_facts(self._client, self.spec))
        except ServerError as exc:
            self.shutdown()
            raise EngineStartError(str(exc), str(self.log_path) if self.log_path else None) from exc
        self.model_name = self.spec.model_name or self.facts.models[0]
        try:
            self.latest_metrics = self._io.call(self._scrape())  # the baseline the plots count from
        except MalformedMetrics as exc:
            self.metrics_problem = str(exc)
        except ServerError:
            pass  # the poller reports it
        self.state = "connected"
        self._report_state()
        if self.latest_metrics is not None:
            self._news.put(ServerMetricsRead(self.latest_metrics))
        self._io.submit(self._poll_metrics())
        report(progress_for("ready", f"Attached to {self.spec.api_root}"))

    def _serve(self, report: Callable[[StartProgress], None]) -> None:
        self._prepare_model(report)
        report(progress_for("process", f"Starting vLLM's API server on port {self.spec.serve.port}"))
        self.server.start()
        self.log_path = self.server.log_path
        try:
            self.server.wait_ready(on_wait=lambda s: report(progress_for(
                "weights", f"vLLM's API server is loading the model ({s:.0f} s)", min(0.85, 0.2 + s / 120))))
        except ServerStartError as exc:
            self.server.stop()
            raise EngineStartError(str(exc), str(self.log_path)) from exc

    def _prepare_model(self, report: Callable[[StartProgress], None]) -> None:
        """The served model as ``model_for_start`` makes it, before the server is started on it."""
        config = self.spec.serve.config
        model = self.model_for_start(config.model, report) if self.model_for_start is not None else config.model
        if model != config.model:
            options = replace(self.spec.serve, config=replace(config, model=model))
            self.spec = replace(self.spec, serve=options)
            self.server.options = options

    async def _new_client(self):
        return make_client(self.spec)

    async def _new_session(self):
        return open_stream_session(self.spec)

    def shutdown(self) -> None:
        io, self._io = self._io, None
        if io is not None:
            for close in (self._client and self._client.aclose, self._session and self._session.close):
                if close is None:
                    continue
                try:
                    io.call(close(), timeout_s=5)
                except Exception:  # a client that will not close is dropped with the loop
                    pass
            io.stop()
        self._client = self._session = None
        self._streams.clear()
        if self.server is not None:
            self.server.stop()
        self.state = "closed"

    @property
    def running(self) -> bool:
        return self._io is not None

    def info(self) -> EngineInfo:
        facts = self.facts
        pids = (self.server.pid,) if self.server is not None and self.server.pid else ()
        return EngineInfo(model=self.model_name, vllm_version=(facts.vllm_version if facts else "") or "unknown",
                          device="server", max_model_len=facts.max_model_len if facts else 0,
                          chat_template=None, engine_pids=pids)

    def describe_end(self) -> str:
        if self.server is not None and not self.server.running():
            return f"the served vLLM process exited (its log: {self.log_path})"
        return f"the connection to {self.spec.api_root} was closed"

    # -------------------------------------------------------------- requests
    def submit(self, request: ChatRequest) -> None:
        if self.state != "connected":
            self._news.put(RequestFailed(request.request_id, self._not_connected_message()))
            self._wake.set()
            return
        priority = self.spec.serve is not None and self.spec.serve.config.schedules_by_priority
        future = self._io.submit(self._stream(request, priority))
        self._streams[request.request_id] = future
        # Forgotten when done, also where the stream ended before it was stored (the callback runs at once)
        future.add_done_callback(lambda done, request_id=request.request_id: self._forget_stream(request_id, done))

    def _forget_stream(self, request_id: str, future) -> None:
        if self._streams.get(request_id) is future:
            self._streams.pop(request_id, None)

    def _not_connected_message(self) -> str:
        return (f"The server at {self.spec.api_root} is not reachable now; the workbench is reconnecting "
                "(see the server panel). Your message is kept: send it again (Regenerate) once it says "
                "connected.")

    async def _stream(self, request: ChatRequest, send_priority: bool) -> None:
        request_id = request.request_id
        lock, wake = self._lock, self._wake

        def on_text(text: str) -> None:
            with lock:
                parts = self._texts.get(request_id)
                if parts is None:
                    self._texts[request_id] = [text]
                else:
                    parts.append(text)
            wake.set()

        try:
            tally = await stream_request(self._session, self.spec, request, self.model_name, on_text, send_priority)
        except asyncio.CancelledError:
            raise
        except ConnectionLost as exc:
            self._news.put(RequestFailed(request_id, str(exc)))
            self._connection_lost(str(exc))
        except ServerError as exc:
            self._news.put(RequestFailed(request_id, str(exc)))
        except Exception as exc:  # anything else still ends the request, with its text kept
            self._news.put(RequestFailed(request_id, str(explain(exc, self.spec.api_root, self.spec, True))))
        else:
            self._news.put(RequestFinished(StreamEvent(request_id, "", True, tally.finish_reason, tally.figures())))
        finally:
            wake.set()

    def abort(self, request_id: str) -> None:
        """Closes the request's stream (vLLM aborts a request whose client went away)."""
        future = self._streams.pop(request_id, None)
        if future is None:
            return
        future.cancel()
        self._aborted.add(request_id)
        with self._lock:
            parts = self._texts.pop(request_id, None)
        if parts:
            self.events.texts_arrived({request_id: "".join(parts)})
        self.events.request_finished(StreamEvent(request_id, "", finished=True, finish_reason="aborted"))

    def has_work(self) -> bool:
        return self._io is not None  # the server's statistics arrive even when no request of ours runs

    def advance(self) -> None:
        if self.server is not None and not self.server.running():
            raise RuntimeError(f"vLLM's API server exited with code {self.server.process.returncode}")
        self._wake.wait(NEWS_WAIT_S)
        self._wake.clear()
        news = []
        while True:  # the news first, then the text: a request's last text came before its end
            try:
                news.append(self._news.get_nowait())
            except queue.Empty:
                break
        with self._lock:
            texts, self._texts = self._texts, {}
        events = self.events
        if texts:
            events.texts_arrived({rid: "".join(parts) for rid, parts in texts.items()})
        for item in news:
            self._deliver(item, events)

    @singledispatchmethod
    def _deliver(self, news, events) -> None:
        raise TypeError(f"the server backend has no handler for {type(news).__name__}")

    @_deliver.register
    def _(self, news: RequestFinished, events) -> None:
        if not self._ended_here(news.event.request_id):
            events.request_finished(news.event)

    @_deliver.register
    def _(self, news: RequestFailed, events) -> None:
        if not self._ended_here(news.request_id):
            events.request_failed(news.request_id, news.message)

    @_deliver.register
    def _(self, news: StepStats, events) -> None:
        events.stats_recorded(news)

    @_deliver.register(ServerStateChanged)
    @_deliver.register(ServerMetricsRead)
    def _(self, news, events) -> None:  # for the application model, where the loop's events pass it on
        reported = getattr(events, "backend_reported", None)
        if reported is not None:
            reported(news)

    def _ended_here(self, request_id: str) -> bool:
        """True once for a request aborted here: the stream's own late end is dropped."""
        if request_id in self._aborted:
            self._aborted.discard(request_id)
            return True
        return False

    # -------------------------------------------------------------- metrics and the connection
    async def _scrape(self) -> ServerMetrics:
        try:
            response = await self._client.get(self.spec.metrics_url)
        except Exception as exc:
            raise explain(exc, self.spec.api_root, self.spec) from exc
        if response.status_code != 200:
            raise MalformedMetrics(self.spec.metrics_url, f"GET /metrics gave HTTP {response.status_code}")
        started = time.thread_time()
        try:
            metrics = parse_metrics(response.text)
        except MetricsFormatError as exc:
            raise MalformedMetrics(self.spec.metrics_url, str(exc)) from exc
        finally:
            self.scrape_cpu_s += time.thread_time() - started
        return metrics

    async def _poll_metrics(self) -> None:
        due = time.monotonic()
        while True:
            due += self.scrape_interval_s
            if self.state == "connected":
                try:
                    await self._scrape_once()
                except Exception as exc:  # the poller must outlive any one bad scrape
                    self.metrics_problem = f"Reading {self.spec.metrics_url} failed: {type(exc).__name__}: {exc}"
                    self._report_state()
            delay = due - time.monotonic()
            if delay < 0:  # a scrape overran its interval: the next one starts now, not in a burst
                due, delay = time.monotonic(), 0.0
            await asyncio.sleep(delay)

    async def _scrape_once(self) -> None:
        asked = time.monotonic()
        try:
            metrics = await self._scrape()
        except (MalformedMetrics, NoAnswer) as exc:  # a slow /metrics under load is no lost connection
            if str(exc) != self.metrics_problem:
                self.metrics_problem = str(exc)
                self._report_state()
            return
        except ServerError as exc:
            self._connection_lost(str(exc))
            return
        self.scrape_times.append(time.monotonic())
        self.scrape_latencies.append(self.scrape_times[-1] - asked)
        if self.metrics_problem:
            self.metrics_problem = ""
            self._report_state()
        before, self.latest_metrics = self.latest_metrics, metrics
        if before is not None:
            self._news.put(step_between(before, metrics))
        self._news.put(ServerMetricsRead(metrics))
        self._wake.set()

    def _connection_lost(self, detail: str) -> None:
        """On the io loop: the first sign of a lost server starts one reconnecting task."""
        if self._reconnecting or self._io is None:
            return
        self._reconnecting = True
        self.state = "reconnecting"
        self._io.submit(self._reconnect(detail))

    async def _reconnect(self, detail: str) -> None:
        attempt = 0
        try:
            while True:
                attempt += 1
                delay = backoff_s(attempt)
                self._report_state(detail, attempt, delay)
                await asyncio.sleep(delay)
                old, self._client = self._client, make_client(self.spec)  # no pooled socket to the dead server
                await old.aclose()
                old_session, self._session = self._session, open_stream_session(self.spec)
                await old_session.close()
                try:
                    self.facts = await read_facts(self._client, self.spec)
                except ServerError as exc:
                    detail = str(exc)
                    continue
                self.state = "connected"
                self._report_state(f"Reconnected after {attempt} attempt{'s' if attempt > 1 else ''}.")
                return
        finally:
            self._reconnecting = False

    def _report_state(self, message: str = "", attempt: int = 0, retry_in_s: float | None = None) -> None:
        self._news.put(ServerStateChanged(
            self.state, self.spec.api_root, message, attempt, retry_in_s, served=self.server is not None,
            log_path=str(self.log_path) if self.log_path else None,
            kv_events_endpoints=self.kv_events_endpoints, metrics_problem=self.metrics_problem))
        self._wake.set()

