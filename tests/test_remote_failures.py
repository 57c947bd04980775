"""Each way a server can fail gets its own message, tested against small stand-in servers on
127.0.0.1 (plain ``http.server`` / ``socketserver``, short timeouts; no vLLM): a wrong API key, a URL
that is not a vLLM server, a server that never answers, malformed metrics, nothing listening. Also
the Prometheus reading of a data-parallel server, vLLM's older metric names, the command line that
"Serve" runs, and the recent-servers list, which never holds a key."""
from __future__ import annotations

import json
import socketserver
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from workbench.engine.start_phases import EngineStartError
from workbench.engine.stats import StatsRecorder
from workbench.remote.backend import RemoteBackend, backoff_s
from workbench.remote.prometheus import MetricsFormatError, parse_metrics, step_between
from workbench.remote.spec import ServerSpec, needs_plain_http_confirmation

MODELS = json.dumps({"object": "list", "data": [{"id": "stand-in", "object": "model", "max_model_len": 512}]})


def scrape(engines: dict[str, tuple[float, float, float]], prefix: str = "vllm:kv_cache_usage_perc") -> str:
    """A scrape as vLLM writes one (each family's samples together): per engine, generation tokens,
    running requests and KV usage, and a TTFT histogram."""
    def labels(engine: str) -> str:
        return f'engine="{engine}",model_name="m"'

    lines = ["# HELP vllm:generation_tokens_total Generation tokens.", "# TYPE vllm:generation_tokens_total counter"]
    lines += [f"vllm:generation_tokens_total{{{labels(e)}}} {t}" for e, (t, _, _) in engines.items()]
    lines += ["# HELP vllm:num_requests_running Running.", "# TYPE vllm:num_requests_running gauge"]
    lines += [f"vllm:num_requests_running{{{labels(e)}}} {r}" for e, (_, r, _) in engines.items()]
    lines += [f"# HELP {prefix} KV usage.", f"# TYPE {prefix} gauge"]
    lines += [f"{prefix}{{{labels(e)}}} {kv}" for e, (_, _, kv) in engines.items()]
    lines += ["# HELP vllm:time_to_first_token_seconds TTFT.", "# TYPE vllm:time_to_first_token_seconds histogram"]
    for engine, (tokens, _, _) in engines.items():
        for le, count in (("0.01", tokens // 4), ("0.1", tokens // 2), ("+Inf", tokens // 2)):
            lines.append(f'vllm:time_to_first_token_seconds_bucket{{{labels(engine)},le="{le}"}} {count}')
        lines += [f"vllm:time_to_first_token_seconds_count{{{labels(engine)}}} {tokens // 2}",
                  f"vllm:time_to_first_token_seconds_sum{{{labels(engine)}}} 1.0"]
    return "\n".join(lines) + "\n"


class StandIn:
    """An HTTP server on 127.0.0.1 whose answers the test sets: path -> (status, body)."""

    def __init__(self, routes: dict[str, tuple[int, str]]):
        routes_ = routes

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                status, body = routes_.get(self.path, (404, "<html>not found</html>"))
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_POST = do_GET

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stand_in():
    servers = []

    def make(routes):
        servers.append(StandIn(routes))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def start_error(spec: ServerSpec) -> str:
    backend = RemoteBackend(spec)
    with pytest.raises(EngineStartError) as caught:
        backend.start(lambda progress: None)
    assert not backend.running
    return str(caught.value)


def test_a_wrong_api_key_is_named(stand_in):
    server = stand_in({"/v1/models": (401, '{"error": "Unauthorized"}')})
    message = start_error(ServerSpec(server.url, api_key="wrong", timeout_s=2))
    assert "refused the API key (HTTP 401)" in message and "--api-key" in message
    assert "wrong" not in message


def test_a_url_that_is_not_a_vllm_server_is_named(stand_in):
    server = stand_in({"/": (200, "<html>a web page</html>")})
    message = start_error(ServerSpec(server.url, timeout_s=2))
    assert "not as a vLLM server" in message and "HTTP 404" in message and "base URL" in message
    server = stand_in({"/v1/models": (200, "<html>a web page</html>")})
    assert "gave no OpenAI model list" in start_error(ServerSpec(server.url, timeout_s=2))


def test_a_server_that_never_answers_is_named():
    release = threading.Event()

    class Silent(socketserver.BaseRequestHandler):
        def handle(self):
            release.wait(10)  # accepts the connection, reads nothing, says nothing

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Silent)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        message = start_error(ServerSpec(f"http://127.0.0.1:{server.server_address[1]}", timeout_s=0.5))
        assert "sent no answer within 0.5 s" in message and "still be loading" in message
    finally:
        release.set()
        server.shutdown()
        server.server_close()


def test_nothing_listening_is_named():
    from workbench.remote.serve import free_port

    message = start_error(ServerSpec(f"http://127.0.0.1:{free_port()}", timeout_s=2))
    assert "Nothing answers at" in message and "--host 0.0.0.0" in message


def test_malformed_metrics_are_named_and_chat_stays_usable(stand_in):
    server = stand_in({"/v1/models": (200, MODELS), "/metrics": (200, "vllm:num_requests_running{engine= 12 oops\n")})
    backend = RemoteBackend(ServerSpec(server.url, timeout_s=2))
    backend.start(lambda progress: None)
    try:
        assert backend.running and backend.state == "connected"
        assert "could not be read as Prometheus text" in backend.metrics_problem
        assert "chat and batch still work" in backend.metrics_problem
        assert backend.info().model == "stand-in" and backend.info().max_model_len == 512
    finally:
        backend.shutdown()
    with pytest.raises(MetricsFormatError, match="none of vLLM's metrics"):
        parse_metrics("# TYPE other_total counter\nother_total 3\n")
    with pytest.raises(MetricsFormatError, match="none of vLLM's metrics"):
        parse_metrics("<html><body>Grafana</body></html>")


def test_a_data_parallel_server_is_read_per_engine_and_summed():
    before = parse_metrics(scrape({"0": (100, 2, 0.25), "1": (40, 1, 0.75)}))
    after = parse_metrics(scrape({"0": (180, 3, 0.5), "1": (60, 0, 0.25)}))
    assert [e.engine for e in after.engines] == ["0", "1"]
    assert after.engines[1].counter("generation_tokens") == 60 and after.engines[1].gauges["num_running"] == 0
    total = after.total()
    assert total.counter("generation_tokens") == 240 and total.gauges["num_running"] == 3
    assert total.gauges["kv_usage"] == pytest.approx(0.375)  # the mean of the engines' usage
    step = step_between(before, after)
    assert step.generation_tokens == 100 and step.num_running == 3
    # TTFT observations between the scrapes, by bucket (cumulative 35/70/70 before, 60/120/120 after):
    # 25 at most 0.01 s, 25 more at most 0.1 s, none above.
    assert dict(zip(step.ttfts_s, step.ttft_counts)) == {0.01: 25, 0.1: 25}
    recorder = StatsRecorder(0.0, bin_s=0.5)
    recorder.add(step)
    assert recorder.tick(0.5)
    published = recorder.publish()
    series = published.series.columns
    assert series["generation_tokens_per_s"][-1] == pytest.approx(200.0) and published.totals.num_ttft == 50
    assert 10 <= series["ttft_ms_p50"][-1] <= 10.8 and 100 <= series["ttft_ms_p99"][-1] <= 108  # to 7 %


def test_older_metric_names_are_read_and_a_restarted_server_counts_from_zero():
    old = parse_metrics(scrape({"0": (50, 1, 0.5)}, prefix="vllm:gpu_cache_usage_perc"))
    assert old.engines[0].gauges["kv_usage"] == 0.5
    restarted = parse_metrics(scrape({"0": (8, 0, 0.0)}))
    step = step_between(old, restarted)
    assert step.generation_tokens == 8 and sum(step.ttft_counts) == 4


def test_serve_runs_vllms_api_server_with_the_preset_metrics_and_kv_events():
    from workbench.app import demo_engine_config
    from workbench.remote.serve import serve_argv
    from workbench.remote.spec import ServeOptions

    argv = serve_argv(ServeOptions(demo_engine_config("/models/demo"), 8123, 5557, 5558), python="py", on_cpu=True)
    assert argv[:3] == ["py", "-m", "vllm.entrypoints.openai.api_server"]
    pairs = dict(zip(argv, argv[1:]))
    assert pairs["--model"] == "/models/demo" and pairs["--port"] == "8123" and pairs["--host"] == "127.0.0.1"
    assert pairs["--scheduling-policy"] == "priority" and pairs["--max-num-seqs"] == "64"
    assert pairs["--max-model-len"] == "2048" and "--kv-cache-memory-bytes" in argv
    assert pairs["--block-size"] == "32" and "--enforce-eager" in argv and "--enable-prefix-caching" in argv
    events = json.loads(pairs["--kv-events-config"])
    assert events == {"enable_kv_cache_events": True, "publisher": "zmq", "endpoint": "tcp://127.0.0.1:5557",
                      "replay_endpoint": "tcp://127.0.0.1:5558"}
    assert "--disable-log-stats" not in argv  # Prometheus metrics stay on


def test_recent_servers_never_hold_the_key_and_plain_http_elsewhere_asks_first(tmp_path, monkeypatch):
    from workbench.remote.recent import recent_path, recent_servers, remember

    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path))
    remember(ServerSpec("https://gpu-box.example:8000/v1", api_key="sk-secret-123", verify_tls=False))
    remember(ServerSpec("http://127.0.0.1:8000", api_key="sk-other"))
    assert "sk-" not in recent_path().read_text()
    servers = recent_servers()
    assert [s.api_root for s in servers] == ["http://127.0.0.1:8000", "https://gpu-box.example:8000"]
    assert servers[1].verify_tls is False and all(s.api_key == "" for s in servers)
    assert "sk-secret" not in repr(ServerSpec("http://x", api_key="sk-secret"))
    assert needs_plain_http_confirmation("http://gpu-box.example:8000")
    assert not needs_plain_http_confirmation("http://127.0.0.1:8000")
    assert not needs_plain_http_confirmation("http://localhost:8000")
    assert not needs_plain_http_confirmation("https://gpu-box.example")


def test_reconnect_backoff_doubles_up_to_ten_seconds():
    assert [backoff_s(n) for n in range(1, 8)] == [0.5, 1, 2, 4, 8, 10, 10]


def stream_error(url: str, api_key: str = "") -> str:
    """What one streamed request through the stream reader (``sse_stream``) raises against ``url``."""
    import asyncio

    from workbench.engine.backend import ChatRequest
    from workbench.engine.sampling import SamplingSettings
    from workbench.remote.errors import ServerError
    from workbench.remote.sse_stream import open_stream_session, stream_request

    spec = ServerSpec(url, api_key=api_key, timeout_s=2.0)

    async def one() -> str:
        session = open_stream_session(spec)
        try:
            await stream_request(session, spec, ChatRequest("r1", (), SamplingSettings(), prompt="hi"), "stand-in",
                                 lambda text: None)
        except ServerError as exc:
            return str(exc)
        finally:
            await session.close()
        return "no error"

    return asyncio.run(one())


def test_a_stream_refused_or_not_json_or_cut_off_gets_its_own_message(stand_in):
    refused = stand_in({"/v1/completions": (401, '{"error": {"message": "bad key"}}')})
    assert "refused the API key (HTTP 401)" in stream_error(refused.url, api_key="wrong")
    busy = stand_in({"/v1/completions": (503, '{"error": {"message": "the server is full"}}')})
    assert "refused the request (HTTP 503): the server is full" in stream_error(busy.url)
    not_json = stand_in({"/v1/completions": (200, "data: <html>hello</html>\n\n")})
    assert "not as a vLLM server" in stream_error(not_json.url) and "not JSON" in stream_error(not_json.url)
    # Half an event, then the server closes: the reply was cut off, and the message says what is kept.
    cut = stand_in({"/v1/completions": (200, 'data: {"choices": [{"text": "a"}]}\n\ndata: {"choi')})
    message = stream_error(cut.url)
    assert "not JSON" in message or "was lost during the reply" in message, message


def test_a_stream_to_nothing_listening_says_so():
    import socket

    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    message = stream_error(f"http://127.0.0.1:{port}")
    assert "Nothing answers at" in message and "running" in message


class Heard:
    """What a backend tells the engine loop, in order."""

    def __init__(self):
        self.ends: list[tuple[str, str]] = []  # (request id, "finished: <reason>" or "failed")

    def texts_arrived(self, texts):
        pass

    def request_finished(self, event):
        self.ends.append((event.request_id, f"finished: {event.finish_reason}"))

    def request_failed(self, request_id, message):
        self.ends.append((request_id, "failed"))

    def stats_recorded(self, step):
        pass


def test_a_stream_that_ends_before_submit_returns_leaves_nothing_to_abort(stand_in, monkeypatch):
    """A request the server refuses at once can end before ``submit`` has stored its stream: it ends
    once, and a Stop pressed afterwards finds nothing left to abort (no second end)."""
    from concurrent.futures import wait

    from workbench.engine.backend import ChatRequest
    from workbench.engine.sampling import SamplingSettings

    busy = (503, '{"error": {"message": "the server is full"}}')
    server = stand_in({"/v1/models": (200, MODELS), "/metrics": (200, scrape({"0": (0, 0, 0.0)})),
                       "/v1/completions": busy})
    backend = RemoteBackend(ServerSpec(server.url, timeout_s=2))
    heard = Heard()
    backend.connect(heard)
    backend.start(lambda progress: None)
    try:
        submit = backend._io.submit

        def submit_and_let_it_end(coroutine):  # the stream's thread runs it to its end first
            future = submit(coroutine)
            wait([future], timeout=10)
            return future

        monkeypatch.setattr(backend._io, "submit", submit_and_let_it_end)
        backend.submit(ChatRequest("r1", (), SamplingSettings(), prompt="hi"))
        for _ in range(50):
            backend.advance()
            if heard.ends:
                break
        assert heard.ends == [("r1", "failed")]
        backend.abort("r1")
        backend.advance()
        assert heard.ends == [("r1", "failed")], "a request that had ended was ended again"
    finally:
        backend.shutdown()
