"""The application model applies the engine loop's messages: engine state from the loop's own
transitions, replies streamed into the right conversation, owners named, nothing typed lost."""
from __future__ import annotations

import uuid

from workbench.engine.backend import EngineInfo, StreamEvent
from workbench.engine.events import (
    EngineReady, EngineState, RequestFailed, RequestFinished, RequestsTaken, StateChanged, TextFlushed,
)
from workbench.engine.sampling import SamplingSettings
from workbench.engine.spec import EngineConfig
from workbench.model.app_model import AppModel

INFO = EngineInfo("/models/demo", "0.32.0", "cpu", 2048, None, (123,))


def make_model() -> AppModel:
    return AppModel(EngineConfig(model="demo"), "Be brief.")


def test_engine_state_comes_from_the_loop_under_its_start_id():
    model = make_model()
    seen = []
    model.engine_changed.connect(lambda status: seen.append(status.state))
    first = model.next_start_id()
    assert not model.engine.settled(first), "posting a start changes nothing until the loop reports"
    model.apply(StateChanged(EngineState.STARTING, "Starting…", first))
    assert not model.engine.settled(first)
    model.apply(EngineReady(INFO))
    model.apply(StateChanged(EngineState.READY, "Engine ready", first))
    assert model.engine.settled(first) and model.engine.ready and model.engine.info == INFO
    second = model.next_start_id()
    assert not model.engine.settled(second), "a ready engine from an earlier start does not settle a new one"
    model.apply(StateChanged(EngineState.STARTING, "Starting…", second))
    model.apply(StateChanged(EngineState.FAILED, "The engine did not start: …", second))
    assert model.engine.settled(second) and model.engine.info is None
    assert seen == [EngineState.STARTING, EngineState.STARTING, EngineState.READY, EngineState.STARTING,
                    EngineState.FAILED]


def test_replies_stream_into_their_conversation_with_stable_ids():
    model = make_model()
    first, second = model.new_conversation(), model.new_conversation()
    assert uuid.UUID(first.conversation_id) and first.conversation_id != second.conversation_id
    changes = []
    model.message_changed.connect(lambda cid, mid, text_only: changes.append((cid, text_only)))
    ask_1 = model.ask(first.conversation_id, "What is a block?", SamplingSettings())
    ask_2 = model.ask(second.conversation_id, "And a page?", SamplingSettings())
    assert model.ask(first.conversation_id, "again?", SamplingSettings()) is None, "one reply at a time"
    assert [m.role for m in ask_1.messages] == ["system", "user"] and ask_1.messages[0].content == "Be brief."
    model.apply(TextFlushed.of({ask_1.request_id: "A block ", ask_2.request_id: "A page"}))
    model.apply(TextFlushed.of({ask_1.request_id: "holds 16 tokens."}))
    model.apply(RequestFinished(StreamEvent(ask_1.request_id, "", True, "stop")))
    reply_1, reply_2 = first.messages[-1], second.messages[-1]
    assert (reply_1.text, reply_1.status) == ("A block holds 16 tokens.", "done")
    assert (reply_2.text, reply_2.status) == ("A page", "streaming")
    assert changes[-1] == (first.conversation_id, False)
    assert model.owner_label(ask_2.request_id) == "And a page?"  # the chat is titled by its first question
    assert model.requests.get(ask_1.request_id).status == "done"
    model.apply(TextFlushed.of({ask_1.request_id: " late text"}))
    assert reply_1.text == "A block holds 16 tokens.", "text after the end is not appended"


def test_a_failed_reply_keeps_the_question_and_what_streamed():
    model = make_model()
    conversation = model.new_conversation()
    request = model.ask(conversation.conversation_id, "Is anyone there?", SamplingSettings())
    model.apply(TextFlushed.of({request.request_id: "Partly"}))
    model.apply(RequestFailed(request.request_id, "The engine stopped during a reply"))
    question, reply = conversation.messages
    assert question.text == "Is anyone there?"
    assert (reply.status, reply.text, reply.error) == ("error", "Partly", "The engine stopped during a reply")
    again = model.regenerate(conversation.conversation_id, SamplingSettings())
    assert again is not None and [m.content for m in again.messages][-1] == "Is anyone there?"
    assert conversation.messages[-1].status == "streaming" and len(conversation.messages) == 2


def test_aborted_replies_are_marked_stopped():
    model = make_model()
    conversation = model.new_conversation()
    request = model.ask(conversation.conversation_id, "Tell me a long story", SamplingSettings())
    model.apply(RequestFinished(StreamEvent(request.request_id, "", True, "aborted")))
    assert conversation.messages[-1].status == "stopped"


def test_the_engine_taking_requests_names_the_conversations_whose_replies_it_holds():
    model = make_model()
    first, second = model.new_conversation(), model.new_conversation()
    ask_1 = model.ask(first.conversation_id, "What is a block?", SamplingSettings())
    ask_2 = model.ask(second.conversation_id, "And a page?", SamplingSettings())
    taken = []
    model.requests_taken.connect(taken.append)
    model.apply(RequestsTaken((ask_2.request_id, "batch-row-7", ask_1.request_id)))
    model.apply(RequestsTaken(("d-bench-3",)))  # a request of no conversation: nothing to tell
    assert taken == [tuple(sorted((first.conversation_id, second.conversation_id)))]


def test_the_selected_conversation_lives_in_the_model_and_goes_with_its_conversation():
    model = make_model()
    first, second = model.new_conversation(), model.new_conversation()
    selected = []
    model.conversation_selected.connect(selected.append)
    model.select_conversation(second.conversation_id)
    model.select_conversation(second.conversation_id)  # already selected: nothing to tell
    model.select_conversation("no-such-conversation")
    assert model.selected_conversation_id == second.conversation_id
    model.delete_conversation(first.conversation_id)  # not the selected one
    assert model.selected_conversation_id == second.conversation_id
    model.delete_conversation(second.conversation_id)
    assert model.selected_conversation_id == ""
    assert selected == [second.conversation_id, ""]


def test_a_conversations_request_ids_are_its_replies_newest_last():
    model = make_model()
    first, second = model.new_conversation(), model.new_conversation()
    ask_1 = model.ask(first.conversation_id, "What is a block?", SamplingSettings())
    model.apply(RequestFinished(StreamEvent(ask_1.request_id, "", True, "stop")))
    ask_2 = model.ask(second.conversation_id, "And a page?", SamplingSettings())
    ask_3 = model.ask(first.conversation_id, "And a slot?", SamplingSettings())
    assert model.request_ids_of(first.conversation_id) == (ask_1.request_id, ask_3.request_id)
    assert model.request_ids_of(second.conversation_id) == (ask_2.request_id,)
    assert model.request_ids_of("no-such-conversation") == ()
    again = model.regenerate(second.conversation_id, SamplingSettings())
    assert again is None, "one reply at a time"


def test_sampling_edited_before_a_question_is_kept_with_the_conversation():
    model = make_model()
    conversation = model.new_conversation()
    changed = []
    model.conversation_changed.connect(changed.append)
    edited = SamplingSettings(temperature=0.2, max_tokens=64)
    model.set_sampling(conversation.conversation_id, edited)
    model.set_sampling(conversation.conversation_id, edited)  # no change: nothing to tell
    assert conversation.sampling == edited and changed == [conversation.conversation_id]
    request = model.ask(conversation.conversation_id, "Hi", conversation.sampling)
    assert request.sampling == edited


def test_the_chat_template_name_says_whose_template_renders_the_prompts():
    from dataclasses import replace

    from workbench.model.engine_status import chat_template_name

    assert chat_template_name(None) == "template not read yet"
    assert chat_template_name(INFO) == "no template"
    assert chat_template_name(replace(INFO, chat_template="{{ messages }}")) == "demo template"
    assert chat_template_name(replace(INFO, model="Qwen/Qwen3-0.6B/", chat_template="x")) == "Qwen3-0.6B template"
    assert chat_template_name(replace(INFO, device="server", chat_template="x")) == "server's template"
