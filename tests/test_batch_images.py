"""Images in batch files, without an engine: every form a line or record gives them in (OpenAI image parts,
a path, file://, data: and http(s) URLs, LLaMA-Factory's and ms-swift's image columns with <image> markers,
a CSV and a Parquet image column), each bad image named with its line and the rest read, rows holding
references and not bytes, the bytes read when a row is sent (an http(s) URL fetched from a real server on
loopback then), the exports keeping the references, a stored row coming back whole."""
from __future__ import annotations

import csv
import json
import shutil
import tracemalloc
from pathlib import Path

import pytest

from batch_images import data_url, image_bytes, image_line, image_part, serving, truncated_image, write_image
from workbench.batch.export import export_rows
from workbench.batch.formats import detect_format, parse_prompts
from workbench.batch.loader import PromptLoader
from workbench.batch.prompt_file import LineProblem
from workbench.batch.results import BatchResults, ERROR, RUNNING
from workbench.batch.row_images import read_row_images
from workbench.batch.run import BatchRun, RunSettings
from workbench.engine.commands import Submit
from workbench.engine.images import ImageProblem
from workbench.engine.image_sources import image_from_source
from workbench.engine.spec import EngineConfig
from workbench.model.app_model import AppModel
from workbench.model.engine_commands import EngineCommands
from workbench.storage.codec import prompt_from_json, to_json

DATASETS = Path(__file__).parent / "data" / "datasets"


def _read(path, fmt=None, **kwargs):
    items = list(parse_prompts(path, fmt or detect_format(path), **kwargs))
    return [i for i in items if not isinstance(i, LineProblem)], [i for i in items if isinstance(i, LineProblem)]


def _write_lines(path: Path, lines) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


@pytest.fixture
def image_server(tmp_path):
    """A real http.server on loopback serving ``tmp_path / "served"``."""
    folder = tmp_path / "served"
    folder.mkdir()
    with serving(folder) as (base_url, requested):
        yield base_url, folder


# ------------------------------------------------------------------ each form
def test_openai_batch_lines_take_image_parts_as_a_path_file_url_data_url_and_http_url(tmp_path):
    photos = tmp_path / "photos"
    png = write_image(photos, "cat.png", 1)
    jpeg = write_image(tmp_path, "dog.jpg", 2)
    webp = write_image(tmp_path, "far/away.webp", 3)
    gif_data = image_bytes(".gif", shade=4)
    path = _write_lines(tmp_path / "batch.jsonl", [
        image_line("rel", "What is this?", "photos/cat.png"),
        image_line("file", "And this?", webp.as_uri()),
        image_line("data", "A GIF?", data_url(gif_data, "image/gif")),
        image_line("http", "Online?", "https://example.com/pics/input.png?size=2"),
        json.dumps({"custom_id": "plain", "method": "POST", "url": "/v1/chat/completions", "body": {"messages": [
            {"role": "user", "content": [{"type": "image_url", "image_url": str(jpeg)},  # the plain-string form
                                         {"type": "image", "image": "photos/cat.png"},
                                         {"type": "text", "text": "Two pictures."}]}]}}),
    ])
    prompts, problems = _read(path, "openai")
    assert not problems and [p.custom_id for p in prompts] == ["rel", "file", "data", "http", "plain"]
    rel, file_url, data, http, plain = prompts
    assert rel.messages[0].content == "What is this?" and rel.messages[0].images == ()  # no bytes in the row
    (image,) = rel.images
    assert (image.source, image.turn, image.location) == ("photos/cat.png", 0, str(png))
    assert (image.ref.name, image.ref.mime, image.ref.width, image.ref.height) == ("cat.png", "image/png", 48, 32)
    assert file_url.images[0].ref.mime == "image/webp" and file_url.images[0].location == str(webp)
    kept = data.images[0]
    assert kept.ref.mime == "image/gif" and kept.ref.num_bytes == len(gif_data)
    assert kept.source.startswith("data:image/gif;base64,…") and len(kept.source) < 60  # not the data again
    assert Path(kept.location).read_bytes() == gif_data  # the data folder's copy, read when the row is sent
    assert (http.images[0].ref, http.images[0].location, http.images[0].name) == (
        None, "https://example.com/pics/input.png?size=2", "input.png")  # fetched when sent, not now
    assert [(i.name, i.turn) for i in plain.images] == [("dog.jpg", 0), ("cat.png", 0)]
    assert plain.messages[0].content == "Two pictures."


def test_messages_lines_put_each_image_on_its_own_turn_and_keep_the_answer_as_reference(tmp_path):
    write_image(tmp_path, "a.png", 1)
    write_image(tmp_path, "b.jpg", 2)
    path = _write_lines(tmp_path / "chat.jsonl", [{"messages": [
        {"role": "system", "content": "Look closely."},
        {"role": "user", "content": [{"type": "text", "text": "First: "}, image_part("a.png")]},
        {"role": "assistant", "content": "A red square."},
        {"role": "user", "content": [image_part("b.jpg"), {"type": "text", "text": "And now?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A dog."}]}]}])
    (prompt,), problems = _read(path)
    assert not problems
    assert [(m.role, m.content) for m in prompt.messages] == [
        ("system", "Look closely."), ("user", "First:"), ("assistant", "A red square."), ("user", "And now?")]
    assert [(i.name, i.turn) for i in prompt.images] == [("a.png", 1), ("b.jpg", 3)]
    assert prompt.reference == "A dog."


def test_llama_factory_mllm_demo_places_images_at_their_markers_and_removes_the_markers(tmp_path):
    shutil.copy(DATASETS / "mllm_demo.json", tmp_path)
    for number in (1, 2, 3):
        write_image(tmp_path / "mllm_demo_data", f"{number}.jpg", number)
    prompts, problems = _read(tmp_path / "mllm_demo.json")
    assert not problems and len(prompts) == 6
    first = prompts[0]  # "<image>Who are they?" ... "What are they doing?<image>", both 1.jpg
    assert [m.content for m in first.messages] == ["Who are they?", "They're Kane and Gretzka from Bayern Munich.",
                                                   "What are they doing?"]
    assert [(i.source, i.turn) for i in first.images] == [("mllm_demo_data/1.jpg", 0), ("mllm_demo_data/1.jpg", 2)]
    assert first.reference == "They are celebrating on the soccer field."
    assert first.images[0].ref is first.images[1].ref  # one file, read once for every row that uses it
    assert [i.source for p in prompts for i in p.images].count("mllm_demo_data/2.jpg") == 2
    assert not any("<image>" in m.content for p in prompts for m in p.messages)


def test_ms_swift_images_column_with_and_without_markers_and_an_alpaca_record(tmp_path):
    for name in ("x.png", "y.png", "z.png"):
        write_image(tmp_path, name, len(name))
    path = _write_lines(tmp_path / "swift.jsonl", [
        {"messages": [{"role": "user", "content": "<image><image>What is the difference?"},
                      {"role": "assistant", "content": "One is darker."}], "images": ["x.png", "y.png"]},
        {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Describe it."}],
         "images": ["z.png"]},  # no marker: before the first user turn's text, as ms-swift places it
        {"query": "What colour?<image>", "response": "Grey.", "images": ["x.png"]},
        {"prompt": "Caption this.", "images": "y.png"},
        {"instruction": "<image>Count the dots.", "input": "", "output": "Eight.", "images": ["z.png"]},
    ])
    prompts, problems = _read(path)
    assert [p.line_no for p in problems] == [3, 5]  # a query and an alpaca record, read in their formats below
    pair, unmarked, plain = prompts
    assert pair.messages[0].content == "What is the difference?" and [i.turn for i in pair.images] == [0, 0]
    assert [i.name for i in pair.images] == ["x.png", "y.png"]
    assert [(i.name, i.turn) for i in unmarked.images] == [("z.png", 1)]
    query = _read(path, "swift")[0][0]
    assert query.messages[-1].content == "What colour?" and query.reference == "Grey." and query.images[0].turn == 0
    assert plain.prompt == "Caption this." and [(i.name, i.turn) for i in plain.images] == [("y.png", 0)]
    alpaca = _read(path, "alpaca")[0][0]
    assert alpaca.messages[0].content == "Count the dots." and alpaca.images[0].name == "z.png"


def test_a_csv_image_column_and_parquet_image_columns(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    write_image(tmp_path, "one.png", 1)
    write_image(tmp_path, "two.webp", 2)
    table = tmp_path / "prompts.csv"
    with open(table, "w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerows([("question", "image"), ("What is it?", "one.png"), ("No picture here.", ""),
                          ("Both?", '["one.png", "two.webp"]')])
    prompts, problems = _read(table, "csv", column="question")
    assert not problems and [len(p.images) for p in prompts] == [1, 0, 2]
    assert prompts[2].images[1].ref.mime == "image/webp" and prompts[1].prompt == "No picture here."
    embedded = image_bytes(".jpg", shade=5)
    rows = [{"messages": [{"role": "user", "content": "<image>Which one?"}], "images": ["one.png"]},
            {"prompt": "Embedded.", "image": {"bytes": embedded, "path": "inside.jpg"}}]
    pq.write_table(pa.Table.from_pylist(rows[:1]), tmp_path / "paths.parquet")
    pq.write_table(pa.Table.from_pylist(rows[1:]), tmp_path / "bytes.parquet")
    (by_path,), problems = _read(tmp_path / "paths.parquet", "jsonl")
    assert not problems and by_path.images[0].name == "one.png" and by_path.messages[0].content == "Which one?"
    (by_bytes,), problems = _read(tmp_path / "bytes.parquet", "jsonl")
    assert not problems and by_bytes.images[0].ref.num_bytes == len(embedded)
    assert Path(by_bytes.images[0].location).read_bytes() == embedded and "row 1" in by_bytes.images[0].name


# ------------------------------------------------------------------ bad images
def test_each_bad_image_is_named_with_its_line_and_fix_and_the_other_records_run(tmp_path):
    write_image(tmp_path, "good.png", 1)
    (tmp_path / "notes.png").write_text("these are my notes, not a picture")
    truncated_image(tmp_path)
    path = _write_lines(tmp_path / "bad.jsonl", [
        image_line("ok-1", "Fine.", "good.png"),
        image_line("missing", "Gone?", "nowhere/lost.png"),
        image_line("text", "Notes?", "notes.png"),
        image_line("cut", "Cut?", "cut.png"),
        image_line("b64", "Broken data?", "data:image/png;base64,this is not base64!"),
        image_line("ftp", "Elsewhere?", "ftp://example.com/a.png"),
        json.dumps({"messages": [{"role": "user", "content": "<image><image>Two?"}], "images": ["good.png"]}),
        json.dumps({"messages": [{"role": "user", "content": "Film?"}], "videos": ["a.mp4"]}),
        image_line("ok-2", "Fine again.", "good.png"),
    ])
    prompts, problems = _read(path, "openai")
    assert [p.custom_id for p in prompts] == ["ok-1", "ok-2"]
    reasons = {p.line_no: p.reason for p in problems}
    assert sorted(reasons) == [2, 3, 4, 5, 6, 7, 8]
    assert reasons[2].startswith("image 1 (nowhere/lost.png): no file at ") and str(tmp_path / "nowhere") in reasons[2]
    assert "Check the path" in reasons[2]
    assert reasons[3].startswith("image 1 (notes.png): ") and "is not an image" in reasons[3]
    assert reasons[4].startswith("image 1 (cut.png): ") and "truncated" in reasons[4] and "again" in reasons[4]
    assert reasons[5].startswith("image 1 (data:image/png;base64,… (") and "not base64" in reasons[5]
    assert "base64 -w0" in reasons[5]
    assert "ftp:// addresses are not read here" in reasons[6]
    assert reasons[7] == "missing fields: custom_id, method, url, body"  # not a run-batch line at all
    prompts, problems = _read(path, "jsonl")  # the records as messages lines
    reasons = {p.line_no: p.reason for p in problems}
    assert reasons[7].startswith("the text has 2 <image> markers but the record 1 image: give one image")
    assert reasons[8].startswith("the record has 'videos': the batch sends text and images only")


def test_image_part_forms_that_are_not_images_are_named(tmp_path):
    path = _write_lines(tmp_path / "forms.jsonl", [
        {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": 7}}]}]},
        {"messages": [{"role": "user", "content": [{"type": "video_url", "video_url": {"url": "a.mp4"}}]}]},
        {"messages": [{"role": "user", "content": "Hi"}], "images": ["a.png"], "image": "b.png"},
        {"messages": [{"role": "user", "content": [image_part("x.png"), {"type": "text", "text": "?"}]}],
         "images": ["y.png"]},
    ])
    _, problems = _read(path)
    reasons = [p.reason for p in problems]
    assert reasons[0].startswith("message 1 has an image part whose 'image_url' is not a URL or path: 7")
    assert reasons[1].startswith("message 1 has video_url parts: the batch sends text and images only")
    assert reasons[2].startswith("the record has both \"images\" and \"image\"")
    assert reasons[3].startswith("the record gives images both as content parts and in an image column")


# ------------------------------------------------------------------ references, not bytes
def test_rows_hold_references_and_not_the_bytes_of_their_images(tmp_path):
    """300 rows, each its own 60 KB picture (18 MB of images): the rows read hold a small part of that."""
    import numpy as np
    from PIL import Image

    noise = np.random.default_rng(7).integers(0, 256, (140, 140, 3), dtype=np.uint8)
    lines = []
    for number in range(300):
        noise[0, 0, 0] = number % 256
        noise[0, 1, 0] = number // 256
        Image.fromarray(noise).save(tmp_path / f"{number}.png")
        lines.append(image_line(f"r{number}", "What is it?", f"{number}.png"))
    total = sum(p.stat().st_size for p in tmp_path.glob("*.png"))
    path = _write_lines(tmp_path / "many.jsonl", lines)
    tracemalloc.start()
    loader = PromptLoader(path, "openai")
    results = loader.read_all()
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert results.num_rows == 300 and not loader.problems and total > 15_000_000
    assert held < total / 20, f"{held:,} bytes held for {total:,} bytes of images"
    assert len({p.images[0].ref.sha256 for p in results.prompts}) == 300


def test_a_chunk_of_reading_ends_at_its_time_budget(tmp_path):
    for number in range(5):
        write_image(tmp_path, f"{number}.png", number)
    path = _write_lines(tmp_path / "five.jsonl", [image_line(f"r{n}", "?", f"{n}.png") for n in range(5)])
    loader = PromptLoader(path, "openai")
    assert loader.read(5000, max_s=0.0) and loader.results.num_rows == 1  # a record a chunk, at no budget
    assert not loader.read(5000, max_s=60) and loader.results.num_rows == 5


# ------------------------------------------------------------------ when a row is sent
def _sent_run(path: Path, fmt: str = "openai", **settings) -> tuple[BatchRun, list]:
    loader = PromptLoader(path, fmt)
    results = loader.read_all()
    posted: list = []
    commands = EngineCommands(AppModel(EngineConfig("demo-vl")), posted.append)  # what the run sends, kept
    run = BatchRun(1, results, RunSettings(**settings), commands)
    return run, posted


def _submitted(posted: list) -> dict:
    return {c.request.request_id: c.request for c in posted if isinstance(c, Submit)}


def test_a_rows_images_are_read_when_it_is_sent_and_go_on_their_turns(qtbot, tmp_path, image_server):
    base_url, served = image_server
    write_image(served, "remote.png", 9)
    cat = write_image(tmp_path, "cat.png", 1)
    path = _write_lines(tmp_path / "sent.jsonl", [
        json.dumps({"messages": [{"role": "user", "content": "<image>Who?"}, {"role": "assistant", "content": "A cat."},
                                 {"role": "user", "content": "And here?<image>"}], "images": ["cat.png", "cat.png"]}),
        json.dumps({"prompt": "Caption this.", "images": [f"{base_url}/remote.png"]}),
        json.dumps({"prompt": "Gone.", "images": [f"{base_url}/missing.png"]}),
        json.dumps({"prompt": "No picture."}),
    ])
    run, posted = _sent_run(path, "jsonl", system_prompt="Be brief.", prompts_as_chat=False)
    run.start()
    assert run.progress().num_in_flight == 4 and run.results.status(0) == RUNNING
    assert list(_submitted(posted)) == ["batch1-3"]  # the text row at once; image rows once read
    qtbot.waitUntil(lambda: (run.poll(), len(_submitted(posted)) == 3 and run.results.count(ERROR) == 1)[1],
                    timeout=20_000)
    sent = _submitted(posted)
    chat = sent["batch1-0"].messages
    assert [len(m.images) for m in chat] == [1, 0, 1] and chat[0].content == "Who?"
    assert chat[0].images[0].data == cat.read_bytes() and chat[0].images[0].ref.name == "cat.png"
    remote = sent["batch1-1"]  # a plain prompt with images goes through the chat template, as images need
    assert remote.prompt is None and [m.role for m in remote.messages] == ["system", "user"]
    assert remote.messages[1].images[0].data == (served / "remote.png").read_bytes()
    assert sent["batch1-3"].prompt == "No picture."  # the raw completion it was
    assert "answered HTTP 404" in run.results.errors[2] and f"{base_url}/missing.png" in run.results.errors[2]
    assert run.results.errors[2].startswith("image 1 (") and run.progress().num_failed == 1
    assert run.owners.get("batch1-0").owner.image_names == ("cat.png", "cat.png")


def test_an_image_that_went_away_fails_its_row_when_sent_with_the_reason(tmp_path):
    write_image(tmp_path, "soon-gone.png", 1)
    path = _write_lines(tmp_path / "gone.jsonl", [image_line("g", "?", "soon-gone.png")])
    (prompt,), _ = _read(path, "openai")
    (tmp_path / "soon-gone.png").unlink()
    with pytest.raises(ImageProblem, match=r"^image 1 \(soon-gone.png\) could not be read when the row was sent: "
                                           r"soon-gone.png: no file at "):
        read_row_images(prompt.images)


def test_an_http_image_from_a_loopback_server_and_one_that_cannot_be_reached(image_server):
    base_url, served = image_server
    data = image_bytes(".jpg", shade=6)
    (served / "photo.jpg").write_bytes(data)
    image = image_from_source(f"{base_url}/photo.jpg", ".", "photo.jpg")
    assert image.data == data and image.ref.mime == "image/jpeg"
    with pytest.raises(ImageProblem, match="cannot be reached from this machine.*Download it and give its path"):
        image_from_source("http://127.0.0.1:9/photo.jpg", ".", "photo.jpg")  # the discard port: nothing listens


# ------------------------------------------------------------------ exports and storage
def test_exports_keep_the_image_references_and_the_openai_output_stays_vllms(tmp_path):
    write_image(tmp_path, "cat.png", 1)
    path = _write_lines(tmp_path / "out.jsonl", [image_line("c", "What?", "cat.png"),
                                                image_line("d", "Data?", data_url(image_bytes(".png", shade=2)))])
    results = PromptLoader(path, "openai").read_all()
    for fmt in ("jsonl", "csv", "openai"):
        list(export_rows(results, tmp_path / f"export.{fmt}", fmt))
    records = [json.loads(line) for line in (tmp_path / "export.jsonl").read_text().splitlines()]
    image = records[0]["images"][0]
    assert {k: image[k] for k in ("source", "turn", "name", "mime", "width", "height")} == {
        "source": "cat.png", "turn": 0, "name": "cat.png", "mime": "image/png", "width": 48, "height": 32}
    assert image["path"] == str(tmp_path / "cat.png") and image["sha256"] == results.prompts[0].images[0].ref.sha256
    assert Path(records[1]["images"][0]["path"]).is_file()  # the data: URL's copy in the data folder
    rows = list(csv.DictReader(open(tmp_path / "export.csv", encoding="utf-8-sig")))
    assert json.loads(rows[0]["images"]) == [str(tmp_path / "cat.png")] and "image_tokens" in rows[0]
    openai = json.loads((tmp_path / "export.openai").read_text().splitlines()[0])
    assert set(openai) == {"id", "custom_id", "response", "error"} and "images" not in json.dumps(openai)


def test_a_stored_row_with_images_comes_back_whole(tmp_path):
    write_image(tmp_path, "cat.png", 1)
    path = _write_lines(tmp_path / "stored.jsonl", [image_line("c", "What?", "cat.png", "https://example.com/a.png")])
    (prompt,), _ = _read(path, "openai")
    assert prompt_from_json(to_json(prompt)) == prompt
    assert BatchResults().append(prompt) == 0
