"""Images through the engine session on the real vLLM CPU engine: the vision demo model (Idefics3, 20
``<image>`` tokens an image, 34 placeholder tokens with its tiles' markers) answers a request with two
images, each image's place in the prompt is kept, the same images again hit the prefix cache, and every
request the engine cannot take fails naming its cause and its fix."""
from __future__ import annotations

import io
from contextlib import contextmanager
from dataclasses import replace

import pytest
from PIL import Image

from workbench.app import demo_vl_engine_config
from workbench.engine.backend import ChatRequest, ImagesRefusedError, Message, PromptTooLongError
from workbench.engine.images import ImageInput, read_image
from workbench.engine.sampling import SamplingSettings
from workbench.engine.session import EngineSession
from workbench.engine.spec import DEMO_VL_MODEL, EngineConfig

IMAGE_PLACEHOLDER_TOKENS = 34  # the demo's 112-px image: 20 <image> tokens and the markers around its tiles
GREEDY = SamplingSettings(temperature=0.0, max_tokens=8)


def picture(name: str, shade: int, size=(48, 32), kind="PNG") -> ImageInput:
    image = Image.new("RGB", size, ((shade * 37) % 256, (shade * 91) % 256, 128))
    for x in range(0, size[0], 3):
        image.putpixel((x, x % size[1]), (255, 255, 255))
    out = io.BytesIO()
    image.save(out, kind)
    return read_image(out.getvalue(), name)


def ask(text: str, *images: ImageInput) -> tuple[Message, ...]:
    return (Message("user", text, images=images),)


def run_to_end(session: EngineSession, request_id: str):
    """Steps the engine until ``request_id`` ends; its final event."""
    while session.has_work():
        for event in session.step()[1]:
            if event.request_id == request_id:
                return event
    raise AssertionError(f"{request_id} ended without a final event")


@contextmanager
def started(config: EngineConfig):
    session = EngineSession(config)
    session.start(lambda progress: None)
    try:
        yield session
    finally:
        session.shutdown()


@pytest.fixture(scope="module")
def vl_session():
    with started(demo_vl_engine_config()) as session:  # demo-vl built on first use, in the run's data folder
        yield session


@pytest.mark.slow
def test_two_images_are_answered_and_each_ones_place_in_the_prompt_is_kept(vl_session):
    vision = vl_session.vision
    assert vision is not None and vision.architecture == "Idefics3ForConditionalGeneration"
    assert vision.max_images_per_prompt == 5 and vision.max_pixels == 112 * 112 and "112 px" in vision.processor_note
    assert vl_session.info().vision == vision

    cat, dog = picture("cat.png", 1), picture("dog.jpg", 2, (64, 64), "JPEG")
    vl_session.submit(ChatRequest("two", ask("What is in these pictures?", cat, dog), GREEDY))
    spans = vl_session.image_spans["two"]
    assert [s.index for s in spans] == [0, 1]
    assert [s.length for s in spans] == [IMAGE_PLACEHOLDER_TOKENS] * 2
    assert spans[0].offset > 0 and spans[1].offset >= spans[0].offset + spans[0].length  # after the turn's start
    assert spans[0].mm_hash and spans[0].mm_hash != spans[1].mm_hash

    final = run_to_end(vl_session, "two")
    figures = final.figures
    assert final.finish_reason in ("stop", "length") and figures.output_tokens > 0
    assert figures.num_image_tokens == 2 * IMAGE_PLACEHOLDER_TOKENS
    assert spans[1].offset + spans[1].length < figures.prompt_tokens  # the question's text after the images


@pytest.mark.slow
def test_each_span_holds_its_images_twenty_image_tokens(vl_session):
    """The spans read from vLLM's processed request cover the image's own tokens in its prompt."""
    from workbench.engine.image_prompts import image_prompt
    from workbench.engine.vllm_plugin.mm_requests import process_request

    request = ChatRequest("look", ask("And these?", picture("a.webp", 3, kind="WEBP"), picture("b.gif", 4, kind="GIF")),
                          GREEDY)
    params = vl_session._sampling_params(GREEDY, 2048)
    processed, spans = process_request(vl_session.engine, "look", image_prompt(vl_session, request), params)
    ids = list(processed.prompt_token_ids)
    image_id = vl_session.tokenizer.convert_tokens_to_ids("<image>")
    assert ids.count(image_id) == 40
    for span in spans:
        assert ids[span.offset:span.offset + span.length].count(image_id) == 20
    assert ids[spans[0].offset + spans[0].length:spans[1].offset].count(image_id) == 0


@pytest.mark.slow
def test_the_same_images_again_hit_the_prefix_cache(vl_session):
    images = (picture("same.png", 7), picture("also.png", 8))
    vl_session.submit(ChatRequest("first", ask("Describe them.", *images), GREEDY))
    first = run_to_end(vl_session, "first").figures
    vl_session.submit(ChatRequest("again", ask("Describe them.", *images), GREEDY))
    again = run_to_end(vl_session, "again").figures
    assert again.cached_prompt_tokens > 0 and again.cached_prompt_tokens > first.cached_prompt_tokens
    other = (picture("other.png", 9), *images[1:])  # the same token ids, another first image: no reuse
    vl_session.submit(ChatRequest("other", ask("Describe them.", *other), GREEDY))
    assert run_to_end(vl_session, "other").figures.cached_prompt_tokens < again.cached_prompt_tokens


@pytest.mark.slow
def test_more_images_than_the_limit_are_refused_naming_it(vl_session):
    six = tuple(picture(f"p{i}.png", i) for i in range(6))
    with pytest.raises(ImagesRefusedError) as caught:
        vl_session.submit(ChatRequest("six", ask("All of them?", *six), GREEDY))
    message = str(caught.value)
    assert "6 images" in message and "at most 5" in message and "limit_mm_per_prompt" in message
    assert "six" not in vl_session.live and "six" not in vl_session.image_spans


@pytest.mark.slow
def test_a_prompt_too_long_with_its_images_is_refused_with_its_image_tokens(vl_session):
    five = tuple(picture(f"p{i}.png", i) for i in range(5))
    text = " ".join(["cat"] * 960)  # 1,920 tokens: the text fits, with its five images (170 tokens) it does not
    with pytest.raises(PromptTooLongError) as caught:
        vl_session.submit(ChatRequest("long", ask(text, *five), GREEDY))
    message = str(caught.value)
    assert f"({5 * IMAGE_PLACEHOLDER_TOKENS} of them image tokens)" in message
    assert "max_model_len is 2048" in message and "fewer or smaller images" in message
    with pytest.raises(PromptTooLongError) as caught:  # the text alone is too long: vLLM's words and the fix
        vl_session.submit(ChatRequest("longer", ask(text + text, five[0]), GREEDY))
    assert "maximum context length is 2048" in str(caught.value) and "raise max_model_len" in str(caught.value)
    assert not vl_session.has_work() and not {"long", "longer"} & set(vl_session.image_spans)


@pytest.mark.slow
def test_an_image_that_does_not_decode_is_named_and_the_next_request_runs(vl_session):
    good = picture("fine.png", 1)
    cut = ImageInput(replace(good.ref, name="cut.png"), good.data[: len(good.data) // 2])  # its file cut since
    with pytest.raises(ImagesRefusedError, match=r"cut.png could not be decoded .*attach it again"):
        vl_session.submit(ChatRequest("cut", ask("This?", cut), GREEDY))
    assert "cut" not in vl_session.live
    vl_session.submit(ChatRequest("after", ask("Still there?", good), GREEDY))  # the engine takes the next one
    assert run_to_end(vl_session, "after").figures.num_image_tokens == IMAGE_PLACEHOLDER_TOKENS


@pytest.mark.slow
def test_a_text_only_model_refuses_images_and_answers_text(demo_model_path):
    text_only = EngineConfig(model=demo_model_path, max_model_len=512, kv_cache_memory_bytes=64 << 20)
    with started(text_only) as session:
        assert session.vision is None and session.info().vision is None
        with pytest.raises(ImagesRefusedError) as caught:
            session.submit(ChatRequest("img", ask("What is this?", picture("cat.png", 1)), GREEDY))
        message = str(caught.value)
        assert "reads text only" in message and "pick demo-vl or a Qwen2.5-VL model" in message
        assert "remove the images" in message and not session.image_spans
        session.submit(ChatRequest("text", ask("Hello"), GREEDY))
        final = run_to_end(session, "text")
        assert final.figures.output_tokens > 0 and final.figures.num_image_tokens == 0


def test_demo_vl_takes_five_images_when_chosen_and_keeps_a_limit_that_was_set():
    base = EngineConfig(model="demo", max_model_len=4096)
    chosen = base.with_model(DEMO_VL_MODEL)
    assert chosen.model == DEMO_VL_MODEL and chosen.option("limit_mm_per_prompt") == {"image": 5}
    assert chosen.max_model_len == 4096
    kept = base.with_changes((("limit_mm_per_prompt", {"image": 2}),)).with_model(DEMO_VL_MODEL)
    assert kept.option("limit_mm_per_prompt") == {"image": 2}
    assert base.with_model("/models/other").extra == ()
    assert demo_vl_engine_config().option("limit_mm_per_prompt") == {"image": 5}


def test_the_model_picker_offers_demo_vl_once(tmp_path, monkeypatch):
    from workbench.engine.demo_vl_model import demo_vl_model_dir
    from workbench.engine.model_source import list_models

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path))
    built = demo_vl_model_dir()  # a built vision demo is the demo-vl entry, not a local folder too
    built.mkdir(parents=True)
    (built / "config.json").write_text("{}")
    choices = [(c.path, c.origin) for c in list_models()]
    assert (DEMO_VL_MODEL, "demo") in choices and str(built) not in [path for path, _ in choices]


def test_a_processor_refusal_keeps_vllms_words_and_names_the_images():
    """The demo's processor takes any picture; Qwen2-VL's refuses a strip (its words, as raised in vLLM)."""
    from vllm.exceptions import VLLMValidationError

    from workbench.engine.session import _refused

    request = ChatRequest("r", ask("These?", picture("strip.png", 1, (2, 600)), picture("ok.png", 2)), GREEDY)
    refused = _refused(ValueError("absolute aspect ratio must be smaller than 200, got 300.0"), request)
    assert isinstance(refused, ImagesRefusedError)
    assert str(refused).startswith("vLLM's processor refused this request's images (strip.png, ok.png): absolute "
                                   "aspect ratio must be smaller than 200, got 300.0. Check the images")
    too_long = _refused(VLLMValidationError("This model's maximum context length is 2048 tokens. However, your "
                                            "prompt contains 2100 input tokens", parameter="input_tokens"), request)
    assert isinstance(too_long, PromptTooLongError) and "raise max_model_len" in str(too_long)
