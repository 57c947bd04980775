"""Images in the chat without an engine: the model keeps them in the store and sends them with the
history, storage brings them back after a restart, exports copy them beside the file."""
from __future__ import annotations

import json
import sqlite3
import zipfile

import pytest
from chat_images import image_input

from workbench.engine.backend import StreamEvent
from workbench.engine.events import RequestFinished, TextFlushed
from workbench.engine.image_store import path_of
from workbench.engine.images import ImageProblem
from workbench.engine.metrics import RequestFigures
from workbench.engine.sampling import SamplingSettings
from workbench.engine.spec import EngineConfig
from workbench.export.conversation import export_conversation
from workbench.model.app_model import AppModel
from workbench.model.engine_commands import EngineCommands
from workbench.storage.store import Storage

FIGURES = RequestFigures(40, 0, 5, 0.02, 50.0)


def model_in(tmp_path) -> AppModel:
    model = AppModel(EngineConfig("demo"))
    model.images_dir = tmp_path / "images"
    return model


def answer(model: AppModel, request, text: str = "A red disc.") -> None:
    model.apply(TextFlushed({request.request_id: text}))
    model.apply(RequestFinished(StreamEvent(request.request_id, "", True, "stop", FIGURES)))


def test_a_question_with_two_images_keeps_them_and_sends_their_bytes(tmp_path):
    model = model_in(tmp_path)
    conversation = model.new_conversation()
    red, blue = image_input("red.png"), image_input("blue.jpg", colour=(20, 20, 220))
    request = model.ask(conversation.conversation_id, "What are these?", SamplingSettings(), images=(red, blue))
    question = conversation.messages[0]
    assert question.images == (red.ref, blue.ref)
    assert path_of(red.ref, model.images_dir).read_bytes() == red.data  # named by the content hash
    assert path_of(blue.ref, model.images_dir).name == f"{blue.ref.sha256}.jpg"
    assert request.messages[-1].images == (red, blue) and request.messages[-1].content == "What are these?"
    answer(model, request)
    again = model.ask(conversation.conversation_id, "And now?", SamplingSettings())
    assert [m.images for m in again.messages] == [(red, blue), (), ()]  # the history's images go again
    assert model.requests.get(again.request_id).owner.image_names == ("red.png", "blue.jpg")  # the heatmap's hover


def test_regenerate_sends_the_same_images(tmp_path):
    model = model_in(tmp_path)
    conversation = model.new_conversation()
    images = (image_input("a.png"), image_input("b.webp", colour=(0, 200, 0)))
    first = model.ask(conversation.conversation_id, "Compare them.", SamplingSettings(), images=images)
    answer(model, first)
    again = model.regenerate(conversation.conversation_id, SamplingSettings())
    assert again.messages == first.messages and again.request_id != first.request_id


def test_an_image_gone_from_the_store_fails_the_reply_naming_it(tmp_path):
    model = model_in(tmp_path)
    conversation = model.new_conversation()
    image = image_input("holiday.png")
    answer(model, model.ask(conversation.conversation_id, "Describe it.", SamplingSettings(), images=(image,)))
    path_of(image.ref, model.images_dir).unlink()
    assert model.ask(conversation.conversation_id, "More detail?", SamplingSettings()) is None
    reply = conversation.messages[-1]
    assert reply.status == "error" and "holiday.png" in reply.error and "Attach it again" in reply.error
    assert conversation.messages[-2].text == "More detail?"  # the question is kept
    assert model.open_chat_requests() == [] and model.waiting_chat_requests() == []


def test_an_image_that_cannot_be_kept_adds_nothing(tmp_path):
    model = model_in(tmp_path)
    model.images_dir.parent.mkdir(exist_ok=True)
    model.images_dir.write_text("a file where the folder should be")
    conversation = model.new_conversation()
    with pytest.raises(ImageProblem, match="red.png could not be kept"):
        model.ask(conversation.conversation_id, "Hi", SamplingSettings(), images=(image_input(),))
    assert conversation.messages == []


def test_a_question_asked_before_the_engine_is_ready_waits_with_its_images(tmp_path):
    model, posted = model_in(tmp_path), []
    commands = EngineCommands(model, posted.append)
    conversation = model.new_conversation()
    image = image_input()
    request = commands.ask(conversation.conversation_id, "What is it?", SamplingSettings(), images=(image,))
    assert posted == [] and conversation.messages[-1].status == "waiting"
    assert request.messages[-1].images == (image,)


def test_images_come_back_after_a_restart_and_can_be_sent_again(tmp_path):
    path = tmp_path / "workbench.db"
    storage, model = Storage.open(path), model_in(tmp_path)
    EngineCommands(model, [].append)
    storage.start(model, facts={})
    conversation = model.new_conversation()
    images = (image_input("one.png"), image_input("two.gif", colour=(10, 10, 10)))
    answer(model, model.ask(conversation.conversation_id, "Two pictures", SamplingSettings(), images=images))
    assert storage.flush()
    storage.close()
    storage, restored = Storage.open(path), model_in(tmp_path)
    storage.restore_into(restored)
    back = restored.conversations[conversation.conversation_id]
    assert back.messages[0].images == tuple(image.ref for image in images)
    request = restored.regenerate(conversation.conversation_id, SamplingSettings())
    assert request.messages[-1].images == images
    storage.close()


def test_deleting_a_conversation_deletes_its_image_rows(tmp_path):
    path = tmp_path / "workbench.db"
    storage, model = Storage.open(path), model_in(tmp_path)
    storage.start(model, facts={})
    conversation = model.new_conversation()
    model.ask(conversation.conversation_id, "Hi", SamplingSettings(), images=(image_input(),))
    assert storage.flush()
    count = lambda: sqlite3.connect(path).execute("SELECT count(*) FROM message_images").fetchone()[0]  # noqa: E731
    assert count() == 1
    model.delete_conversation(conversation.conversation_id)
    assert storage.flush()
    assert count() == 0
    storage.close()


def test_the_exported_conversation_holds_its_images(tmp_path):
    model = model_in(tmp_path)
    conversation = model.new_conversation()
    red, blue = image_input("red.png"), image_input("blue [1].png", colour=(0, 0, 255))
    answer(model, model.ask(conversation.conversation_id, "Which is red?", SamplingSettings(), images=(red, blue)))
    out = tmp_path / "out"
    out.mkdir()
    assert export_conversation(conversation, out / "chat.json", model.images_dir) == []
    document = json.loads((out / "chat.json").read_text())
    files = [image["file"] for image in document["messages"][0]["images"]]
    assert [(out / f).read_bytes() for f in files] == [red.data, blue.data]
    assert document["messages"][0]["images"][1]["name"] == "blue [1].png"
    markdown_missing = export_conversation(conversation, out / "chat.md", model.images_dir)
    markdown = (out / "chat.md").read_text()
    assert markdown_missing == [] and f"]({files[0]} \"" in markdown  # the same files, the same names
    for name in ("red.png", "blue [1\\].png"):
        assert f"![{name}](chat_images/" in markdown
    path_of(red.ref, model.images_dir).unlink()
    missing = export_conversation(conversation, out / "again.md", model.images_dir)
    assert len(missing) == 1 and missing[0].startswith("red.png: no longer in the data folder")
    assert (out / "again.md").exists()  # the rest is written


def test_the_session_zip_keeps_the_images_folder(tmp_path):
    from workbench.export.session_export import _zip

    folder = tmp_path / "export"
    (folder / "images").mkdir(parents=True)
    (folder / "images" / "a.png").write_bytes(b"png")
    (folder / "session.json").write_text("{}")
    _zip(folder, tmp_path / "export.zip")
    assert sorted(zipfile.ZipFile(tmp_path / "export.zip").namelist()) == ["export/images/a.png",
                                                                          "export/session.json"]
