"""The host's queued signals, across threads: the engine loop runs on the host's QThread and its
results reach a GUI-thread receiver intact, with no reference lost or leaked per emit.

The host emits tens of signals a second for hours; a Qt binding that loses a reference per emit
(PySide6 6.12.0 does, to ``True``) aborts the app mid-session. A scripted backend stands in for
vLLM here: what is under test is the bridge and the binding, not the model.
"""
from __future__ import annotations

import gc
import sys
import threading

import pytest
from PySide6.QtCore import QObject, Slot

from workbench.bridge.engine_host import EngineThread
from workbench.engine.backend import Backend, Capabilities, ChatRequest, EngineInfo, StreamEvent
from workbench.engine.commands import StartEngine, Submit
from workbench.engine.events import RequestFinished, TextFlushed
from workbench.engine.spec import EngineConfig

NUM_WORDS = 2000


class ScriptedBackend(Backend):
    """Streams ``w0 w1 ...`` to each request, one word a step, and notes the threads that step it."""

    capabilities = Capabilities(kv_blocks="none", memory="none", stats=frozenset())

    def __init__(self, config: EngineConfig):
        self.words_sent: dict[str, int] = {}
        self.stepping_threads: set[int] = set()

    def start(self, report) -> None:
        pass

    def shutdown(self) -> None:
        self.words_sent.clear()

    def submit(self, request: ChatRequest) -> None:
        self.words_sent[request.request_id] = 0

    def abort(self, request_id: str) -> None:
        pass

    def has_work(self) -> bool:
        return bool(self.words_sent)

    def advance(self) -> None:
        self.stepping_threads.add(threading.get_ident())
        texts, finished = {}, []
        for request_id, sent in list(self.words_sent.items()):
            texts[request_id] = f"w{sent} "
            self.words_sent[request_id] = sent + 1
            if sent + 1 == NUM_WORDS:
                del self.words_sent[request_id]
                finished.append(StreamEvent(request_id, "", finished=True, finish_reason="length"))
        self.events.texts_arrived(texts)
        for event in finished:
            self.events.request_finished(event)

    def info(self) -> EngineInfo:
        return EngineInfo("scripted", "-", "cpu", 2048, None, ())

    @property
    def running(self) -> bool:
        return True


class Receiver(QObject):
    """Lives on the GUI thread, as the window's panes do."""

    def __init__(self):
        super().__init__()
        self.chunks: list[TextFlushed] = []
        self.finished: list[RequestFinished] = []
        self.receiving_threads: set[int] = set()

    @Slot(object)
    def on_host_event_emitted(self, event) -> None:
        self.receiving_threads.add(threading.get_ident())
        if isinstance(event, TextFlushed):
            self.chunks.append(event)
        elif isinstance(event, RequestFinished):
            self.finished.append(event)


def stream_through_worker(qtbot, receiver: Receiver) -> ScriptedBackend:
    """Runs one request of NUM_WORDS words through the real host thread, one text flush a step."""
    engine = EngineThread()
    backends: list[ScriptedBackend] = []

    def make_backend(config: EngineConfig) -> ScriptedBackend:
        backends.append(ScriptedBackend(config))
        return backends[-1]

    engine.host.loop.backend_factory = make_backend
    engine.host.loop.flush_interval_s = 0.0  # a text_flushed emit for every step
    engine.host.event_emitted.connect(receiver.on_host_event_emitted)
    engine.start()
    try:
        engine.host.post(StartEngine(EngineConfig(model="scripted")))
        engine.host.post(Submit(ChatRequest("r1", ())))
        qtbot.waitUntil(lambda: bool(receiver.finished), timeout=60_000)
    finally:
        assert engine.stop(), "the host thread did not stop"
    return backends[0]


def test_host_signals_reach_the_gui_thread_intact(qtbot):
    receiver = Receiver()
    backend = stream_through_worker(qtbot, receiver)
    assert threading.get_ident() not in backend.stepping_threads, "the loop should run on the host thread"
    assert receiver.receiving_threads == {threading.get_ident()}, "slots should run on the GUI thread"
    assert len(receiver.chunks) == NUM_WORDS, "one text_flushed per step, none lost"
    assert "".join(flush.chunks["r1"] for flush in receiver.chunks) == "".join(f"w{i} " for i in range(NUM_WORDS))
    assert [finished.event.request_id for finished in receiver.finished] == ["r1"]
    gc.collect()
    # Each payload is held by the receiver's list alone, as a value made here and kept in a list is:
    # the binding neither dropped a reference (the dict would be freed under us) nor leaked one.
    held_here = [TextFlushed.of({"r1": "w0 "}), RequestFinished(StreamEvent("r1", ""))]
    alone = {sys.getrefcount(value) for value in held_here}
    assert {sys.getrefcount(chunks) for chunks in receiver.chunks} == alone
    assert {sys.getrefcount(event) for event in receiver.finished} == alone


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="True is immortal from Python 3.12: its refcount cannot drop")
def test_host_signals_keep_true_alive(qtbot):
    receiver = Receiver()
    gc.collect()
    true_refs = sys.getrefcount(True)
    stream_through_worker(qtbot, receiver)
    gc.collect()
    assert len(receiver.chunks) == NUM_WORDS
    # A binding that drops a reference to True per emit loses NUM_WORDS of them; the loop's own
    # flags flipping between True and False move the count by a few at most.
    assert sys.getrefcount(True) > true_refs - NUM_WORDS // 100
