"""Image settings on command lines, in and out: ms-swift's ``MAX_PIXELS=1003520`` (before the command or on
an ``export`` line) and ``--vllm_limit_mm_per_prompt '{"image":5}'`` (the article's multimodal line, as
given) become the preset's ``mm_processor_kwargs.max_pixels`` and ``limit_mm_per_prompt``, applied to the
engine; ``vllm serve --limit-mm-per-prompt --mm-processor-kwargs`` and ``LLM(...)`` too, as vLLM's own
parser reads them; exports write them back in each form (ms-swift's with ``MAX_PIXELS=`` in front)."""
from __future__ import annotations


from workbench.presets import store
from workbench.presets.checks import check_preset
from workbench.presets.command_in import NOTE, VALUE, import_block, to_document
from workbench.presets.command_out import FORMS, PYTHON, SERVE, SWIFT, deployment_of, export_command
from workbench.presets.document import parse_preset
from workbench.presets.machine import Machine
from workbench.presets.resolve import resolve_preset
from workbench.engine.spec import EngineConfig
from preset_fixtures import config_folder, facts, qwen25_vl  # noqa: F401  (fixtures)
from test_command_lines import SEED, seed_blocks

CPU = Machine("cpu", 0, 0, 0, 24 << 30)
ONE_GPU = Machine("cuda", 1, 140 << 30, 139 << 30, 2 << 40)
ARTICLE_IMAGES = {"limit_mm_per_prompt": {"image": 5}, "mm_processor_kwargs": {"max_pixels": 1003520}}
SWIFT_LINE = """CUDA_VISIBLE_DEVICES=0 \\
swift infer \\
--model Qwen/Qwen2.5-VL-3B-Instruct \\
--infer_backend vllm \\
--vllm_max_model_len 32768"""


def article_multimodal_line() -> str:
    """The article's scenario table's multimodal flags, as given in the seed file."""
    table = dict(line.lstrip("# ").split(":", 1) for line in seed_blocks()[-1].splitlines()[1:])
    return table["multimodal"].strip()


def saved(result):
    """The preset an import becomes, as the user folder would hold it."""
    return parse_preset(to_document(result, "images").text().encode(), "images.toml")


def test_the_articles_multimodal_line_becomes_a_preset_that_sizes_the_images(qwen25_vl, facts):
    assert SEED.exists()
    line = article_multimodal_line()
    assert line == "MAX_PIXELS=1003520 --vllm_limit_mm_per_prompt '{\"image\":5}'"
    result = import_block(line)
    assert result.error is None and result.messages == [], [m.text for m in result.messages]
    assert {b.option: b.detail.split(" (")[0] for b in result.outcomes} == {
        "--vllm_limit_mm_per_prompt {\"image\":5}": 'limit_mm_per_prompt = {"image": 5}',
        "MAX_PIXELS=1003520": "mm_processor_kwargs.max_pixels = 1003520"}
    document = saved(result)
    assert document.engine() == ARTICLE_IMAGES and document.needs_vision_model
    assert check_preset(document, ONE_GPU, qwen25_vl) == []
    config = resolve_preset(document, EngineConfig(model=qwen25_vl.path), ONE_GPU, qwen25_vl).config
    kwargs = config.engine_kwargs(on_cpu=False)
    assert {k: kwargs[k] for k in ARTICLE_IMAGES} == ARTICLE_IMAGES, "what vLLM's EngineArgs receives"
    assert [p.key for p in check_preset(document, CPU, facts)] == ["preset.needs_vision_model"], "a text model"


def test_an_export_line_above_the_command_gives_the_same_pixels():
    with_export = import_block("export MAX_PIXELS=1003520\nexport MIN_PIXELS=3136\n" + SWIFT_LINE +
                               " \\\n--vllm_limit_mm_per_prompt '{\"image\":5}'")
    in_front = import_block("MAX_PIXELS=1003520 MIN_PIXELS=3136 " + SWIFT_LINE.replace("CUDA_VISIBLE_DEVICES=0 \\\n",
                                                                                        "CUDA_VISIBLE_DEVICES=0 ") +
                            " \\\n--vllm_limit_mm_per_prompt '{\"image\":5}'")
    for result in (with_export, in_front):
        assert result.error is None and result.messages == [], [m.text for m in result.messages]
        assert result.engine_tables == {"limit_mm_per_prompt": {"image": 5},
                                        "mm_processor_kwargs": {"max_pixels": 1003520, "min_pixels": 3136}}
        assert result.engine == {"max_model_len": 32768} and result.model == "Qwen/Qwen2.5-VL-3B-Instruct"


def test_a_bad_max_pixels_is_named_with_its_fix_and_the_rest_kept():
    result = import_block("MAX_PIXELS=lots " + SWIFT_LINE.replace("CUDA_VISIBLE_DEVICES=0 \\\n", ""))
    (message,) = result.messages
    assert message.kind == VALUE and message.flag == "MAX_PIXELS=lots"
    assert "a whole number of pixels above 0, e.g. MAX_PIXELS=1003520" in message.text
    assert result.engine == {"max_model_len": 32768} and "mm_processor_kwargs" not in result.engine_tables


def test_max_pixels_beside_the_engine_kwargs_own_keeps_the_tighter():
    result = import_block("MAX_PIXELS=1003520 swift infer --model m --infer_backend vllm "
                          "--vllm_engine_kwargs '{\"mm_processor_kwargs\": {\"max_pixels\": 200704, \"fps\": 2}}'")
    (message,) = result.messages
    assert message.kind == NOTE and "the preset keeps 200704" in message.text
    assert result.engine_tables == {"mm_processor_kwargs": {"max_pixels": 200704, "fps": 2}}


def test_vllm_serve_image_options_as_vllms_own_parser_reads_them(qwen25_vl):
    from workbench.engine.vllm_plugin.serve_parser import parse_words

    options = ["--limit-mm-per-prompt", '{"image":5}', "--mm-processor-kwargs", '{"max_pixels":1003520}',
               "--mm-processor-cache-gb", "8"]
    result = import_block("vllm serve Qwen/Qwen2.5-VL-3B-Instruct " + " ".join(
        f"'{word}'" if word.startswith("{") else word for word in options))
    assert result.error is None and result.messages == []
    vllms = parse_words(options)
    assert {k: vllms[k] for k in ARTICLE_IMAGES} == ARTICLE_IMAGES == result.engine_tables
    assert vllms["mm_processor_cache_gb"] == 8 == result.engine["mm_processor_cache_gb"]
    document = saved(result)
    assert document.engine() == {**ARTICLE_IMAGES, "mm_processor_cache_gb": 8} and document.needs_vision_model
    assert check_preset(document, ONE_GPU, qwen25_vl) == []


def test_an_llm_call_with_image_arguments_becomes_the_same_preset():
    result = import_block('from vllm import LLM\nllm = LLM(model="Qwen/Qwen2.5-VL-3B-Instruct", '
                          'limit_mm_per_prompt={"image": 5}, mm_processor_kwargs={"max_pixels": 1003520})\n')
    assert result.error is None and saved(result).engine() == ARTICLE_IMAGES


def test_a_limit_of_no_images_is_not_a_vision_preset():
    result = import_block("vllm serve Qwen/Qwen2.5-VL-3B-Instruct --limit-mm-per-prompt '{\"image\": 0}'")
    assert saved(result).engine() == {"limit_mm_per_prompt": {"image": 0}} and not saved(result).needs_vision_model


def test_the_multimodal_preset_exports_its_images_in_every_form(qwen25_vl):
    document = store.load_catalog().entries["multimodal"].document
    deployment = deployment_of(document, ONE_GPU, qwen25_vl.path, qwen25_vl)
    texts = {form: export_command(deployment, form) for form in FORMS}
    assert texts[SWIFT].startswith("MAX_PIXELS=1003520 \\\n  MIN_PIXELS=3136 \\\n  swift infer")
    assert "--vllm_limit_mm_per_prompt '{\"image\": 5}'" in texts[SWIFT]
    assert "mm_processor_kwargs" not in texts[SWIFT], "the pixels go in front, as ms-swift reads them"
    assert "--limit-mm-per-prompt '{\"image\": 5}'" in texts[SERVE]
    assert "--mm-processor-kwargs '{\"max_pixels\": 1003520, \"min_pixels\": 3136}'" in texts[SERVE]
    assert "limit_mm_per_prompt={'image': 5}," in texts[PYTHON]
    for form, text in texts.items():
        back = import_block(text)
        assert back.error is None and back.non_options() == set(), (form, back.messages)
        again = deployment_of(to_document(back, "back"), ONE_GPU, qwen25_vl.path, qwen25_vl)
        assert {k: v for k, v in again.engine if k in ARTICLE_IMAGES} == \
            {"limit_mm_per_prompt": {"image": 5}, "mm_processor_kwargs": {"max_pixels": 1003520, "min_pixels": 3136}}
        assert again.same_as(deployment), (form, text)
