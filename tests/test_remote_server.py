"""The workbench attached to one real vLLM API server (CPU build, demo model), started through the
"Serve" code path: a chat and a small batch through it, its counters and gauges against a scrape of
/metrics that the workbench did not make, the API key kept out of every file, and the server killed
mid-reply and started again on the same address."""
from __future__ import annotations

import json

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPushButton

from chat_driver import HANG_TIMEOUT_MS, REPLY_TIMEOUT_MS, type_and_send, wait_finished
from remote_server import SERVER_START_TIMEOUT_S, vllm_server  # noqa: F401  (the module's server)
from workbench.batch.results import DONE
from workbench.model.engine_status import SERVER_TEMPLATE
from workbench.remote.spec import ServerSpec

pytestmark = pytest.mark.slow

SECRET = "wb-test-key-7f3a9c-never-written"
CONNECT_TIMEOUT_MS = HANG_TIMEOUT_MS


@pytest.fixture(scope="module")
def attached(vllm_server, qapp, tmp_path_factory):  # noqa: F811
    """A window with no local engine, attached to the module's server (with a key it does not need:
    vLLM without --api-key ignores it, and it must not land in any file)."""
    from workbench.app import build_window, demo_engine_config
    from workbench.storage.store import Storage

    folder = tmp_path_factory.mktemp("attached")
    storage = Storage.open(folder / "workbench.db")
    window, engine = build_window(demo_engine_config(vllm_server.options.config.model), start_engine=False,
                                  storage=storage)
    window.resize(1400, 860)
    window.show()
    yield window
    window.close()
    assert window.shutdown.wait(120)
    assert not engine.thread.isRunning()


def connect(window, qtbot, server) -> None:
    model = window.model
    start_id = window.server.connect(ServerSpec(server.base_url, api_key=SECRET,
                                                kv_events_endpoints=server.kv_events_endpoints))
    qtbot.waitUntil(lambda: model.engine.settled(start_id), timeout=CONNECT_TIMEOUT_MS)
    assert model.engine.ready, model.engine.message
    qtbot.waitUntil(lambda: model.server.state == "connected" and model.server.metrics is not None,
                    timeout=HANG_TIMEOUT_MS)


def independent_scrape(url: str) -> dict[str, float]:
    """The server's own figures, read here with prometheus_client alone (not the workbench's reader)."""
    text = httpx.get(url, timeout=HANG_TIMEOUT_MS / 1000, trust_env=False).text
    figures = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.labels.get("engine") == "0" and not sample.name.endswith(("_created", "_bucket", "_sum")):
                figures[sample.name] = figures.get(sample.name, 0.0) + sample.value
    return figures


def workbench_figures(window) -> dict[str, float]:
    engine = window.model.server.metrics.engines[0]
    c, g = engine.counters, engine.gauges
    return {"vllm:generation_tokens_total": c["generation_tokens"], "vllm:prompt_tokens_total": c["prompt_tokens"],
            "vllm:prefix_cache_queries_total": c["prefix_queries"], "vllm:prefix_cache_hits_total": c["prefix_hits"],
            "vllm:num_preemptions_total": c["preemptions"], "vllm:num_requests_running": g["num_running"],
            "vllm:num_requests_waiting": g["num_waiting"], "vllm:kv_cache_usage_perc": g["kv_usage"]}


def served_vllm_version() -> str:
    """The version of the vLLM that the server runs (this interpreter's: 0.32.0 on the CPU build, 0.26 on
    the H200's CUDA build), as vLLM's /version reports it."""
    from vllm.version import __version__

    return __version__


def run_small_batch(window, qtbot, folder):
    """Four prompts of eight tokens each through the batch pane, as a person runs them; the finished run."""
    pane = window.batch
    window.panes.setCurrentWidget(pane)
    prompts = folder / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": f"Question {i}: what is a block?"}) + "\n" for i in range(4)))
    assert pane.open_file(str(prompts), "jsonl", None)
    qtbot.waitUntil(lambda: pane.loading is None and pane.loader.done, timeout=HANG_TIMEOUT_MS)
    pane.settings.sampling.max_tokens.setValue(8)
    pane.settings.sampling.ignore_eos.setChecked(True)
    qtbot.waitUntil(pane.run_button.isEnabled, timeout=HANG_TIMEOUT_MS)
    qtbot.mouseClick(pane.run_button, Qt.LeftButton)
    run = pane.run
    qtbot.waitUntil(lambda: run.state == "finished", timeout=REPLY_TIMEOUT_MS)
    return run


def test_chat_and_a_small_batch_go_through_the_server(attached, vllm_server, qtbot, tmp_path):  # noqa: F811
    window = attached
    connect(window, qtbot, vllm_server)
    baseline = window.model.server.metrics.total().counter("generation_tokens")
    assert window.model.engine.info.device == "server"
    assert window.model.engine.info.vllm_version == served_vllm_version()  # from the server's /version
    assert window.server.panel.endpoint.text() == vllm_server.base_url + "/v1"
    assert str(vllm_server.kv_events_endpoints[0].publisher) in window.server.panel.kv_events.text()
    # Where the prefix-cache view subscribes; a server has no physical block layout to show.
    assert window.model.server.kv_events_endpoints == vllm_server.kv_events_endpoints
    worker = window.engine.host
    from workbench.bench.client_bench import backend_capabilities  # the process client runs the backend
    capabilities = worker.call(backend_capabilities) if hasattr(worker, "call") else worker.loop.backend.capabilities
    assert capabilities.kv_blocks == "prefix-events"

    window.chat.new_conversation()
    window.chat.sampling.max_tokens.setValue(24)
    _, reply = type_and_send(window, qtbot, "What is a KV cache?")
    wait_finished(qtbot, reply, REPLY_TIMEOUT_MS)
    assert reply.status == "done" and reply.text, reply.error
    figures = reply.figures
    assert figures.ttft_s is not None and figures.output_tokens >= 1 and figures.prompt_tokens >= 2
    assert figures.queue_s is None  # the API gives no queue time: not available, never 0
    assert figures.cached_prompt_tokens is not None  # served with --enable-prompt-tokens-details

    results = run_small_batch(window, qtbot, tmp_path).results
    assert list(results.column("status")) == [DONE] * 4 and all(results.texts)
    assert list(results.column("output_tokens")) == [8] * 4
    assert window.batch.table_model.display(0, "queue_s") == "n/a"

    # The plots' totals count from the connection: the server's counter less its value then. Both follow
    # the scrapes of /metrics (twice a second, later on a busy machine): the test waits for them.
    assert window.model.server.metrics_problem == ""
    qtbot.waitUntil(lambda: window.model.server.metrics.total().counter("generation_tokens") >= baseline + 56,
                    timeout=HANG_TIMEOUT_MS)
    qtbot.waitUntil(lambda: window.engine.host.latest_stats().totals.generation_tokens
                    == window.model.server.metrics.total().counter("generation_tokens") - baseline,
                    timeout=HANG_TIMEOUT_MS)
    assert window.engine.host.latest_stats().totals.generation_tokens >= figures.output_tokens + 32


def test_the_served_engine_core_runs_on_its_workers_core_where_one_core_is_spare(vllm_server):  # noqa: F811
    """As for the local engine (``engine.placement``): on a CPU machine with one core beside the model
    worker's, the server's engine core is moved onto the worker's core, every thread of it, and the API
    server is left on the spare core with the window. Otherwise the engine core's spinning holds the
    spare core and the API server sends a reply only when it has ended. Elsewhere (a machine with cores
    enough, or a GPU build, whose single-GPU engine core runs its model worker itself) nothing moves."""
    import os

    import psutil

    from workbench.engine.placement import cores_for_engine_core
    from workbench.remote.serve import vllm_is_cpu_build

    group = psutil.Process(vllm_server.process.pid).children(recursive=True)
    workers = [p for p in group if p.name().startswith("VLLM::Worker")]
    cores = [p for p in group if p.name().startswith("VLLM::EngineCore")]
    assert len(cores) == 1, [p.name() for p in group]  # the engine core in a process of its own, both builds
    expected = cores_for_engine_core([set(os.sched_getaffinity(p.pid)) for p in workers],
                                     set(os.sched_getaffinity(0))) if vllm_is_cpu_build() else None
    if expected is None:  # nothing is moved: the engine core keeps the cores vLLM gave it
        assert vllm_server.process.engine_core_cores == ()
        assert "engine core moved to CPU" not in vllm_server.process.log_path.read_text()
        return
    assert workers, "the CPU build's model worker runs in a process of its own"
    assert vllm_server.process.engine_core_cores == tuple(sorted(expected))
    threads = os.listdir(f"/proc/{cores[0].pid}/task")
    assert {tid: os.sched_getaffinity(int(tid)) for tid in threads} == {tid: expected for tid in threads}
    assert os.sched_getaffinity(vllm_server.process.pid) != expected  # the API server is left where it was
    assert "engine core moved to CPU" in vllm_server.process.log_path.read_text()


def replayed_stored_blocks(replay_endpoint: str) -> set:
    """The server's prefix-cache contents rebuilt here, not by the workbench: every batch its replay
    endpoint still holds, from the first, decoded with vLLM's own KVEventBatch."""
    import msgspec
    import zmq
    from vllm.distributed.kv_events import AllBlocksCleared, BlockRemoved, BlockStored, KVEventBatch

    decoder = msgspec.msgpack.Decoder(type=KVEventBatch)
    context = zmq.Context()
    dealer = context.socket(zmq.DEALER)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(replay_endpoint)
    dealer.send_multipart((b"", (0).to_bytes(8, "big")))
    stored: set = set()
    try:
        while True:
            assert dealer.poll(HANG_TIMEOUT_MS), f"no replay from {replay_endpoint}"
            _, _topic, seq, payload = dealer.recv_multipart()
            if int.from_bytes(seq, "big", signed=True) == -1:
                return stored
            for event in decoder.decode(payload).events:
                keys = {(event.medium, event.group_idx, h) for h in getattr(event, "block_hashes", ())}
                if isinstance(event, BlockStored):
                    stored |= keys
                elif isinstance(event, BlockRemoved):
                    stored -= keys
                elif isinstance(event, AllBlocksCleared):
                    stored.clear()
    finally:
        dealer.close(linger=0)
        context.term()


def test_the_prefix_cache_view_follows_the_served_servers_events(attached, vllm_server, qtbot):  # noqa: F811
    """The served server's publisher connects to the workbench's end on loopback; the view's stored
    blocks equal what the server's own replay buffer describes, decoded here with vLLM's classes."""
    window = attached
    connect(window, qtbot, vllm_server)
    kv, feed = window.server.kv_view, window.kv_events  # the view observes the bridge's feed
    assert feed.subscriber is not None and window.engine_region.heat_area.currentWidget() is kv
    assert window.chat.sampling.template.toPlainText() == SERVER_TEMPLATE
    window.panes.setCurrentWidget(window.chat)
    window.chat.new_conversation()
    window.chat.sampling.max_tokens.setValue(16)
    for question in ("Name the parts of a paged KV cache.", "Name the parts of a paged KV cache, briefly."):
        _, reply = type_and_send(window, qtbot, question)
        wait_finished(qtbot, reply, REPLY_TIMEOUT_MS)
        assert reply.status == "done", reply.error
    expected = replayed_stored_blocks(vllm_server.kv_events_endpoints[0].replay)
    assert expected, "the server stored no blocks for two replies"

    def view_matches():
        state = feed.latest()
        assert set(state.ranks[0].stored) == expected
        assert sum(rank.num_stored_now for rank in kv.view.selected_ranks()) == len(expected)
    qtbot.waitUntil(view_matches, timeout=HANG_TIMEOUT_MS)
    assert feed.latest().complete, feed.latest().notices


def long_reply_streaming(window, qtbot, question: str, min_chars: int, attempts: int = 3):
    """A long reply that is still streaming with more than ``min_chars`` shown. The demo model can
    produce a whole reply before the client has read much of it, so a reply that ended first is
    asked again (at most ``attempts`` times)."""
    window.chat.sampling.max_tokens.setValue(1850)  # the longest reply the demo's context holds
    window.chat.sampling.ignore_eos.setChecked(True)
    ended = []
    for _ in range(attempts):
        window.chat.new_conversation()
        window.chat.sampling.max_tokens.setValue(1850)
        window.chat.sampling.ignore_eos.setChecked(True)
        _, reply = type_and_send(window, qtbot, question)
        qtbot.waitUntil(lambda: len(reply.text) > min_chars or reply.status != "streaming", timeout=REPLY_TIMEOUT_MS)
        if reply.status == "streaming":
            return reply
        wait_finished(qtbot, reply)
        ended.append((reply.status, len(reply.text), reply.error))
    pytest.fail(f"{attempts} replies of 1,850 tokens each ended before {min_chars} characters were shown "
                f"(status, characters, error): {ended}")


def test_stop_ends_the_reply_with_its_text(attached, vllm_server, qtbot):  # noqa: F811
    window = attached
    window.panes.setCurrentWidget(window.chat)
    outcomes = []
    for _ in range(3):  # a reply that ends between the check and the click raced the Stop: once more
        reply = long_reply_streaming(window, qtbot, "Tell me about blocks.", 20)
        qtbot.mouseClick(window.findChild(QPushButton, "stopButton"), Qt.LeftButton)
        wait_finished(qtbot, reply, HANG_TIMEOUT_MS)
        outcomes.append(reply.status)
        if reply.status == "stopped":
            break
    assert reply.status == "stopped" and len(reply.text) > 20, outcomes
    kept = reply.text  # the stream is closed: nothing more arrives for a stopped reply
    qtbot.waitUntil(lambda: window.model.server.metrics.total().gauges["num_running"] == 0,
                    timeout=HANG_TIMEOUT_MS)
    assert reply.text == kept and reply.status == "stopped"
    window.chat.sampling.ignore_eos.setChecked(False)


def test_counters_and_gauges_equal_an_independent_scrape_once_idle(attached, vllm_server, qtbot):  # noqa: F811
    window = attached
    assert window.model.engine.ready
    last: dict = {}

    def equal() -> None:
        theirs = independent_scrape(vllm_server.metrics_url)
        ours = workbench_figures(window)
        last.update(theirs=theirs, ours=ours)
        assert theirs["vllm:num_requests_running"] == 0 and theirs["vllm:generation_tokens_total"] > 0
        assert {k: theirs[k] for k in ours} == ours

    qtbot.waitUntil(equal, timeout=HANG_TIMEOUT_MS)
    table = window.server.panel.table
    assert table.item(0, 5).text() == f"{last['theirs']['vllm:generation_tokens_total']:,.0f}"


def test_the_api_key_is_in_no_file_export_or_log(attached, vllm_server, qtbot, tmp_path):  # noqa: F811
    from workbench.batch.export import export_rows
    from workbench.paths import config_dir, data_dir
    from workbench.remote.recent import recent_path

    window = attached
    if not window.model.engine.ready:  # run on its own, or after a test that left the server
        connect(window, qtbot, vllm_server)
    run = window.batch.run
    if run is None or run.state != "finished":
        run = run_small_batch(window, qtbot, tmp_path)
    if not any(m.role == "assistant" and m.text for c in window.model.conversations.values() for m in c.messages):
        window.panes.setCurrentWidget(window.chat)
        wait_finished(qtbot, type_and_send(window, qtbot, "What is a KV cache?")[1], REPLY_TIMEOUT_MS)
    for fmt in ("jsonl", "csv", "openai"):
        out = tmp_path / f"export.{fmt}"
        for _ in export_rows(run.results, str(out), fmt, model=window.model.engine.info.model):
            pass
    db = window.storage.path
    reply = next(m for c in window.model.conversations.values() for m in c.messages
                 if m.role == "assistant" and m.text)
    assert window.storage.flush(HANG_TIMEOUT_MS / 1000), window.storage.problem  # the storage thread has written
    assert reply.text[:20].encode() in b"".join(f.read_bytes() for f in db.parent.glob(db.name + "*"))
    assert recent_path().exists() and vllm_server.base_url in recent_path().read_text()
    places = [tmp_path, window.storage.path.parent, data_dir() / "logs", config_dir()]
    files = [f for place in places if place.exists() for f in place.rglob("*") if f.is_file()]
    assert len(files) >= 5
    holding = [str(f) for f in files if SECRET.encode() in f.read_bytes()]
    assert holding == [], f"the API key was written to {holding}"


def test_a_server_killed_mid_reply_gives_a_clear_error_and_is_reattached_when_back(
        attached, vllm_server, qtbot):  # noqa: F811
    window = attached
    model = window.model
    window.panes.setCurrentWidget(window.chat)
    for _ in range(3):  # a reply whose last text was already on its way when the server died ended "done"
        reply = long_reply_streaming(window, qtbot, "Tell me about paged attention.", 40)
        vllm_server.kill()
        shown_before = reply.text
        wait_finished(qtbot, reply, HANG_TIMEOUT_MS)
        if reply.status != "done":
            break
        vllm_server.restart()
        qtbot.waitUntil(lambda: model.server.state == "connected", timeout=HANG_TIMEOUT_MS)
    assert reply.status == "error"
    assert "connection to the server" in reply.error and "was lost" in reply.error and "kept" in reply.error
    assert reply.text.startswith(shown_before) and len(reply.text) >= len(shown_before)
    qtbot.waitUntil(lambda: model.server.state == "reconnecting", timeout=HANG_TIMEOUT_MS)
    assert "reconnecting" in window.server.panel.state.text()
    assert model.engine.ready  # the window keeps the server: no engine died

    window.chat.sampling.max_tokens.setValue(8)
    _, refused = type_and_send(window, qtbot, "Are you there?")
    wait_finished(qtbot, refused, HANG_TIMEOUT_MS)
    assert refused.status == "error" and "not reachable now" in refused.error

    vllm_server.restart()
    qtbot.waitUntil(lambda: model.server.state == "connected", timeout=HANG_TIMEOUT_MS)
    assert "Reconnected" in model.server.message
    kept = next(m for m in window.chat.current.messages if m.message_id == reply.message_id)
    assert kept.text == reply.text and len(kept.text) > 40  # nothing streamed was lost
    window.chat.sampling.ignore_eos.setChecked(False)
    _, again = type_and_send(window, qtbot, "What is a KV cache?")
    wait_finished(qtbot, again, REPLY_TIMEOUT_MS)
    assert again.status == "done" and again.text


def test_a_served_server_dies_with_the_app_even_when_the_app_is_killed(demo_model_path, tmp_path):
    """Serve's child, started by a stand-in app process that is SIGKILLed once the server's engine core
    runs: the API server and its engine core (its process group) are gone within seconds."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import psutil

    script = tmp_path / "app.py"
    script.write_text(
        "import sys, time\n"
        "sys.path[:0] = [%r, %r]\n"
        "from remote_server import served_demo_options\n"
        "from workbench.remote.serve import ServerProcess\n"
        "server = ServerProcess(served_demo_options(%r), %r)\n"
        "server.start()\n"
        "print(server.pid, flush=True)\n"
        "time.sleep(600)\n" % (os.path.dirname(__file__), os.getcwd(), demo_model_path, str(tmp_path)))
    app = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        server_pid = int(app.stdout.readline())
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        group: list = []
        while not any("EngineCore" in _name(p) for p in group) and time.monotonic() < deadline:
            time.sleep(0.5)
            group = [p for p in psutil.process_iter() if _pgid(p.pid) == server_pid]
        assert any("EngineCore" in _name(p) for p in group), "the engine core runs in the server's process group"
        app.send_signal(signal.SIGKILL)
        app.wait(10)
        deadline = time.monotonic() + 30
        while any(_alive(p) for p in group) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [p.pid for p in group if _alive(p)], "the served server outlived the killed app"
    finally:
        app.kill()


def _pgid(pid: int) -> int | None:
    import os

    try:
        return os.getpgid(pid)
    except OSError:
        return None


def _name(process) -> str:
    try:
        return process.name()
    except Exception:
        return ""


def _alive(process) -> bool:
    import psutil

    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
