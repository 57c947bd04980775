"""Images in the chat through the real window and the real vLLM CPU engine: the text demo model refuses
them and keeps the question; on the vision demo model (Idefics3) a question with two images is answered,
Regenerate sends the same images, the stored images come back after the storage is opened again and go
to the engine again, and the exports hold them. The engine is restarted twice for the module: onto the
vision model, and back for the next module's ``window``."""
from __future__ import annotations

import json
import sqlite3

import pytest
from chat_driver import HANG_TIMEOUT_MS, REPLY_TIMEOUT_MS
from chat_images import image_file, not_an_image
from test_batch_images_engine import vl_window  # noqa: F401  (the fixture: the shared window on demo-vl)

from workbench.engine.commands import SubmitAll
from workbench.engine.events import RequestFinished
from workbench.engine.sampling import SamplingSettings
from workbench.engine.spec import EngineConfig
from workbench.export.session_export import export_session
from workbench.model.app_model import AppModel
from workbench.storage.store import Storage
from workbench.ui.image_attachments import TEXT_ONLY
from workbench.ui.session_export_action import write_conversation

pytestmark = pytest.mark.slow


def attach(chat, qtbot, paths) -> None:
    chat.choose_images = lambda parent: [str(p) for p in paths]
    with qtbot.waitSignal(chat.attachments.read_done, timeout=HANG_TIMEOUT_MS):
        chat.attach_button.click()


def recorded_posts(window, monkeypatch) -> list:
    posted, post = [], window.commands.post
    monkeypatch.setattr(window.commands, "post", lambda command: (posted.append(command), post(command))[1])
    return posted


def asked(window, qtbot, tmp_path, text: str = "What is in these two pictures?"):
    """A new chat asked ``text`` with two pictures through the pane; returns its answered reply."""
    chat = window.chat
    chat.new_conversation()
    chat.sampling.max_tokens.setValue(12)
    attach(chat, qtbot, [image_file(tmp_path, "harbour.png", (96, 64), (30, 80, 160)),
                         image_file(tmp_path, "forest.jpg", (64, 96), (40, 120, 50))])
    chat.input.setPlainText(text)
    chat.send()
    reply = chat.current.messages[-1]
    qtbot.waitUntil(lambda: reply.status not in ("waiting", "streaming"), timeout=REPLY_TIMEOUT_MS)
    assert reply.status == "done", reply.error
    return reply


def test_a_text_only_engine_keeps_the_question_and_its_images(window, qtbot, tmp_path):
    chat = window.chat
    assert window.model.engine.info.vision is None  # the text demo model
    assert not chat.attach_button.isEnabled() and chat.attach_button.toolTip() == TEXT_ONLY
    chat.input.setPlainText("Describe it")
    chat.attachments.add_sources([str(image_file(tmp_path, "photo.png")), str(not_an_image(tmp_path))])
    qtbot.waitUntil(lambda: not chat.attachments.reading, timeout=HANG_TIMEOUT_MS)
    assert chat.attachments.problem.text().startswith("notes.png is not an image")
    chat.send()
    assert chat.current.messages == [] and chat.input.toPlainText() == "Describe it"
    assert [i.ref.name for i in chat.attachments.images()] == ["photo.png"]
    assert TEXT_ONLY in chat.attachments.problem.text()
    chat.attachments.clear()


def test_two_images_are_answered_and_regenerate_sends_them_again(vl_window, qtbot, tmp_path, monkeypatch):
    window = vl_window
    posted = recorded_posts(window, monkeypatch)
    reply = asked(window, qtbot, tmp_path)
    chat = window.chat
    question = chat.current.messages[0]
    assert [ref.name for ref in question.images] == ["harbour.png", "forest.jpg"]
    sent = [c for c in posted if isinstance(c, SubmitAll)][-1].requests[0].messages[-1].images
    assert [image.ref for image in sent] == list(question.images)
    assert reply.figures.num_image_tokens > 0 and reply.figures.prompt_tokens > reply.figures.num_image_tokens
    transcript = chat.transcripts[chat.current.conversation_id]
    assert f"{reply.figures.num_image_tokens} image tok" in transcript.view_of(reply.message_id).stats.text()
    assert len(transcript.view_of(question.message_id).thumbs) == 2
    chat.regenerate()
    again = chat.current.messages[-1]
    assert again.message_id != reply.message_id
    qtbot.waitUntil(lambda: again.status not in ("waiting", "streaming"), timeout=REPLY_TIMEOUT_MS)
    assert again.status == "done", again.error
    resent = [c for c in posted if isinstance(c, SubmitAll)][-1].requests[0].messages[-1].images
    assert resent == sent  # the same images, bytes and all
    assert again.figures.num_image_tokens == reply.figures.num_image_tokens


def test_stored_images_come_back_go_to_the_engine_again_and_are_exported(vl_window, qtbot, tmp_path):
    window = vl_window
    reply = asked(window, qtbot, tmp_path, "Which picture is greener?")
    conversation = window.chat.current
    assert window.storage.flush()
    copy = tmp_path / "restarted.db"  # the storage opened again, on a copy: the window keeps its own
    with sqlite3.connect(window.storage.path) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    storage, restored = Storage.open(copy), AppModel(EngineConfig("demo-vl"))
    storage.restore_into(restored)
    storage.close()
    back = restored.conversations[conversation.conversation_id]
    assert back.messages[0].images == conversation.messages[0].images
    request = restored.regenerate(conversation.conversation_id, SamplingSettings(max_tokens=8))
    assert [image.ref for image in request.messages[-1].images] == list(conversation.messages[0].images)
    finished = []
    window.engine.host.event_emitted.connect(
        lambda event: finished.append(event) if isinstance(event, RequestFinished)
        and event.event.request_id == request.request_id else None)
    window.commands.post(SubmitAll((request,)))
    qtbot.waitUntil(lambda: bool(finished), timeout=REPLY_TIMEOUT_MS)
    assert finished[0].event.figures.num_image_tokens == reply.figures.num_image_tokens

    exported = write_conversation(conversation, tmp_path / "chat.json")
    images = json.loads(exported.read_text())["messages"][0]["images"]
    assert [(tmp_path / image["file"]).read_bytes() == (tmp_path / image["name"]).read_bytes()
            for image in images] == [True, True]
    folder = tmp_path / "session"
    list(export_session(window.storage.path, window.storage.session_id, folder))
    listed = json.loads((folder / "session.json").read_text())["images"]
    mine = [image for image in listed if image["request_id"] == reply.request_id]
    assert [image["name"] for image in mine] == ["harbour.png", "forest.jpg"]
    assert all((folder / image["file"]).read_bytes() == (tmp_path / image["name"]).read_bytes() for image in mine)
