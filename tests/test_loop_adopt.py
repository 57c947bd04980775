"""The loop's seam for a shared engine: AdoptEngine drives an engine someone else started, on the
loop's own thread; ReleaseEngine hands it back running, with none of the loop's requests left in it.

A scripted backend stands in for vLLM: what is under test is the loop's handling of the commands
(which thread steps the engine, who shuts it down), not the model. ``bench compare``'s path (d)
runs the same seam against the real engine (``tests/test_bench_smoke.py``).
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

from workbench.engine.backend import Backend, Capabilities, ChatRequest, EngineInfo, StreamEvent
from workbench.engine.commands import AdoptEngine, ReleaseEngine, Shutdown, Submit, SubmitAll
from workbench.engine.events import (
    EngineReady, EngineState, RequestFailed, RequestFinished, RequestsTaken, StateChanged, TextFlushed,
)
from workbench.engine.loop import EngineLoop

TIMEOUT_S = 30


class EndlessBackend(Backend):
    """Streams a word a step to each request until it is aborted or has ``words`` words."""

    capabilities = Capabilities(kv_blocks="none", memory="none", stats=frozenset())

    def __init__(self, words: int):
        self.words, self.sent = words, {}
        self.stepping_threads: set[int] = set()
        self.num_shutdowns = 0

    def start(self, report) -> None:
        pass

    def shutdown(self) -> None:
        self.num_shutdowns += 1

    def submit(self, request: ChatRequest) -> None:
        self.sent[request.request_id] = 0

    def abort(self, request_id: str) -> None:
        if self.sent.pop(request_id, None) is not None:
            self.events.request_finished(StreamEvent(request_id, "", True, "aborted"))

    def has_work(self) -> bool:
        return bool(self.sent)

    def advance(self) -> None:
        self.stepping_threads.add(threading.get_ident())
        self.events.texts_arrived({request_id: "w " for request_id in self.sent})
        for request_id in [r for r, n in self.sent.items() if n + 1 >= self.words]:
            del self.sent[request_id]
            self.events.request_finished(StreamEvent(request_id, "", True, "length"))
        for request_id in self.sent:
            self.sent[request_id] += 1

    def info(self) -> EngineInfo:
        return EngineInfo("shared", "-", "cpu", 2048, None, ())

    @property
    def running(self) -> bool:
        return True


class Recorder:
    """The loop's listener: keeps every message; ``wait_for`` blocks until one matches."""

    def __init__(self):
        self.events: list = []
        self.changed = threading.Condition()

    def publish(self, event) -> None:
        with self.changed:
            self.events.append(event)
            self.changed.notify_all()

    def snapshot_published(self, snapshot) -> None:
        pass

    def wait_for(self, match) -> object:
        with self.changed:
            assert self.changed.wait_for(lambda: any(match(e) for e in self.events), TIMEOUT_S), self.events
            return next(e for e in self.events if match(e))


def ended(request_id: str):
    return lambda e: isinstance(e, RequestFinished) and e.event.request_id == request_id


@contextmanager
def running_loop(recorder: Recorder):
    """The loop on a thread of its own, as the worker runs it; shut down and joined afterwards."""
    loop = EngineLoop(recorder)
    thread = threading.Thread(target=loop.run, name="loop")
    thread.start()
    try:
        yield loop, thread
    finally:
        loop.post(Shutdown())
        thread.join(TIMEOUT_S)
    assert not thread.is_alive()


def test_adopted_engine_is_stepped_on_the_loop_thread_and_released_running():
    recorder, backend = Recorder(), EndlessBackend(words=5)
    with running_loop(recorder) as (loop, thread):
        loop.post(AdoptEngine(backend, start_id=7))
        ready = recorder.wait_for(lambda e: isinstance(e, StateChanged) and e.state is EngineState.READY)
        assert ready.start_id == 7
        assert any(isinstance(e, EngineReady) and e.info.model == "shared" for e in recorder.events)
        loop.post(Submit(ChatRequest("short", ())))
        assert recorder.wait_for(ended("short")).event.finish_reason == "length"
        assert backend.stepping_threads == {thread.ident}, "only the loop's thread may step the engine"

        backend.words = 10**9  # from now on a request runs until it is aborted
        loop.post(Submit(ChatRequest("open", ())))
        loop.post(ReleaseEngine())
        assert recorder.wait_for(ended("open")).event.finish_reason == "aborted"
        released = recorder.wait_for(lambda e: isinstance(e, StateChanged) and e.state is EngineState.STOPPED)
        assert "released" in released.message and released.start_id == 7
        assert backend.num_shutdowns == 0 and not backend.sent, "released running, with none of the loop's requests"

        loop.post(Submit(ChatRequest("after", ())))  # the loop no longer drives it
        assert isinstance(recorder.wait_for(lambda e: getattr(e, "request_id", "") == "after"), RequestFailed)
        loop.post(AdoptEngine(backend, start_id=8))  # adopted again, as the benchmark does each run
        recorder.wait_for(lambda e: isinstance(e, StateChanged) and e.start_id == 8)
    assert backend.num_shutdowns == 0, "the loop must never shut down an engine it did not start"


def test_the_loop_says_which_requests_the_engine_took_before_any_of_their_text():
    recorder, backend = Recorder(), EndlessBackend(words=3)
    with running_loop(recorder) as (loop, _):
        loop.post(Submit(ChatRequest("early", ())))  # no engine yet: refused, so not taken
        recorder.wait_for(lambda e: isinstance(e, RequestFailed) and e.request_id == "early")
        loop.post(AdoptEngine(backend, start_id=1))
        recorder.wait_for(lambda e: isinstance(e, StateChanged) and e.state is EngineState.READY)
        loop.post(SubmitAll((ChatRequest("one", ()), ChatRequest("two", ()))))
        loop.post(Submit(ChatRequest("three", ())))
        recorder.wait_for(ended("three"))
        recorder.wait_for(ended("two"))
    taken = [e.request_ids for e in recorder.events if isinstance(e, RequestsTaken)]
    assert taken == [("one", "two"), ("three",)], taken
    first_text = next(i for i, e in enumerate(recorder.events) if isinstance(e, TextFlushed))
    first_taken = next(i for i, e in enumerate(recorder.events) if isinstance(e, RequestsTaken))
    assert first_taken < first_text, "the window hears that the engine holds a request before its text"
