"""The multimodal preset and the planner's image tokens, without an engine: the preset valid on vision
models (the demo's Idefics3 and Qwen2-VL folders, a Qwen2.5-VL-3B config) and refused on a text model
before anything starts (vLLM's own registry asked); bad image settings refused with the fix; image
tokens counted as transformers' own processors count them."""
from __future__ import annotations

import json
import math

import pytest
from PIL import Image

from workbench.engine.spec import EngineConfig
from workbench.engine.vllm_architectures import registry_answer
from workbench.presets import store
from workbench.presets.capacity import plan_capacity
from workbench.presets.checks import check_preset
from workbench.presets.document import PresetFileError, parse_preset
from workbench.presets.machine import Machine
from workbench.presets.model_facts import read_model_facts
from workbench.presets.resolve import resolve_preset
from preset_fixtures import DEMO_SHAPE, config_folder, facts, qwen25_vl  # noqa: F401  (fixtures)

CPU = Machine("cpu", 0, 0, 0, 24 << 30)
ONE_GPU = Machine("cuda", 1, 140 << 30, 139 << 30, 2 << 40)
def multimodal():
    return store.load_catalog().entries["multimodal"].document


@pytest.fixture(scope="module")
def demo_folders(tmp_path_factory):
    """The vision demo model's two builds (Idefics3 for the CPU, Qwen2-VL), as the app builds them."""
    from workbench.engine.demo_vl_model import IDEFICS3, QWEN2_VL, DemoVLRecipe, build_demo_vl_model

    folders = {}
    for architecture in (IDEFICS3, QWEN2_VL):
        folders[architecture] = tmp_path_factory.mktemp(architecture)
        build_demo_vl_model(folders[architecture], DemoVLRecipe(architecture=architecture))
    return folders


def test_the_multimodal_preset_is_valid_on_vision_models_here_and_on_a_gpu(demo_folders, qwen25_vl):
    document = multimodal()
    assert document.needs_vision_model and "#" in document.text()
    for model in [qwen25_vl] + [read_model_facts(f) for f in demo_folders.values()]:
        for machine in (CPU, ONE_GPU):
            if machine is ONE_GPU and model is not qwen25_vl:
                continue  # the demo's context is 4,096 tokens: the GPU's 16,384 are for a real model
            assert check_preset(document, machine, model) == [], (model.path, machine.platform)


def test_the_multimodal_preset_resolves_to_vllms_image_arguments(qwen25_vl):
    on_gpu = resolve_preset(multimodal(), EngineConfig(model=qwen25_vl.path), ONE_GPU, qwen25_vl).config
    kwargs = on_gpu.engine_kwargs(on_cpu=False)
    assert kwargs["limit_mm_per_prompt"] == {"image": 5}, "the article's --vllm_limit_mm_per_prompt '{\"image\":5}'"
    assert kwargs["mm_processor_kwargs"] == {"max_pixels": 1003520, "min_pixels": 3136}, "the article's MAX_PIXELS"
    assert kwargs["mm_processor_cache_gb"] == 4 and kwargs["max_model_len"] == 16384
    assert kwargs["max_num_batched_tokens"] >= 5 * (1003520 // 784 + 2), "a prompt's five images in one step"
    on_cpu = resolve_preset(multimodal(), EngineConfig(model=qwen25_vl.path), CPU, qwen25_vl).config
    assert on_cpu.option("mm_processor_kwargs") == {"max_pixels": 200704, "min_pixels": 3136}
    assert on_cpu.max_model_len == 4096 and on_cpu.option("mm_processor_cache_gb") == 1


def test_on_a_text_model_the_preset_needs_a_vision_model_and_vllms_registry_says_why(facts):
    problems = check_preset(multimodal(), CPU, facts)
    assert [p.key for p in problems] == ["preset.needs_vision_model"], problems
    message = problems[0].message
    for part in ("The multimodal preset needs a vision-language model", "model reads text only",
                 "no vision_config", "does not list its architecture as multimodal", "Not applied",
                 "Model > Choose model", "demo-vl"):
        assert part in message, (part, message)


def test_vllms_registry_tells_a_vision_architecture_without_a_vision_config(tmp_path):
    answer = registry_answer()
    assert "Idefics3ForConditionalGeneration" in answer.multimodal
    assert "Qwen2_5_VLForConditionalGeneration" in answer.multimodal
    assert "Qwen2ForCausalLM" in answer.architectures and "Qwen2ForCausalLM" not in answer.multimodal
    for name, architecture, reads in (("vl", "Qwen2_5_VLForConditionalGeneration", True),
                                      ("text", "Qwen2ForCausalLM", False)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({**DEMO_SHAPE, "architectures": [architecture]}))
        model = read_model_facts(folder)
        assert model.reads_images(answer.multimodal) is reads, architecture
        problems = check_preset(multimodal(), CPU, model)
        assert (problems == []) is reads, problems
    assert "does not list Qwen2ForCausalLM as multimodal" in problems[0].message


BAD_IMAGE_VALUES = [  # engine lines, then what the message must name
    ("limit_mm_per_prompt = 5", ["engine.limit_mm_per_prompt", "wrong type int", "dict"]),
    ("limit_mm_per_prompt = { images = 5 }", ["'images'", "did you mean 'image'", "{ image = 5 }"]),
    ("limit_mm_per_prompt = { image = -1 }", ["image = -1", "0 or more"]),
    ('limit_mm_per_prompt = { image = "five" }', ["image = 'five'", "whole number"]),
    ("limit_mm_per_prompt = { image = { count = 2, depth = 3 } }", ["image.depth", "count, width, height"]),
    ("mm_processor_kwargs = { max_pixels = 100 }", ["max_pixels = 100", "at least 784", "1003520"]),
    ("mm_processor_kwargs = { min_pixels = 2000000, max_pixels = 1003520 }",
     ["min_pixels 2000000 is above max_pixels 1003520", "lower min_pixels"]),
    ("mm_processor_cache_gb = -1", ["engine.mm_processor_cache_gb", "-1", "0 to 1024"]),
    ("block_size = { rocm = 16 }", ["engine.block_size", "wrong type dict", "cpu, cpu_avx512, cuda"]),
]


@pytest.mark.parametrize("engine, expected", BAD_IMAGE_VALUES, ids=[e[0] for e in BAD_IMAGE_VALUES])
def test_bad_image_settings_are_refused_naming_the_fix(facts, engine, expected):
    document = parse_preset(f'[preset]\nname = "t"\n[engine]\n{engine}\n'.encode(), "t.toml")
    problems = check_preset(document, CPU, facts)
    assert len(problems) == 1, problems
    for part in expected:
        assert part in problems[0].message, (part, problems[0].message)


def test_a_table_that_names_a_platform_and_something_else_is_refused_on_reading():
    with pytest.raises(PresetFileError, match="per-platform values take the keys cpu, cpu_avx512 and cuda, not 'imag"):
        parse_preset(b'[engine]\nlimit_mm_per_prompt = { cpu = 2, image = 5 }\n', "t.toml")
    with pytest.raises(PresetFileError, match="needs_vision_model = 'yes': true or false"):
        parse_preset(b'[preset]\nneeds_vision_model = "yes"\n', "t.toml")


# ---------------------------------------------------------------- image tokens against transformers' processors
QWEN_SIZES = [(640, 480), (300, 500), (1920, 1080), (3000, 4000), (28, 28), (4000, 3000), (1000, 30)]


@pytest.mark.parametrize("max_pixels", [50176, 1003520])
def test_qwen_image_tokens_are_the_processors(qwen25_vl, max_pixels):
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    processor = Qwen2VLImageProcessorPil(min_pixels=3136, max_pixels=max_pixels)
    planner = qwen25_vl.image_processor.with_kwargs({"max_pixels": max_pixels, "min_pixels": 3136})
    for width, height in QWEN_SIZES:
        grid = processor(images=[Image.new("RGB", (width, height))], return_tensors="np")["image_grid_thw"][0]
        assert planner.image_tokens(width, height) == math.prod(grid) // 4 + 2, (width, height, grid)
    assert planner.largest_image_tokens() == max_pixels // 784 + 2


def test_the_demos_qwen2_vl_folder_gives_vllms_measured_count(demo_folders):
    planner = read_model_facts(demo_folders["qwen2-vl"]).image_processor
    assert planner.max_pixels == 50176 and planner.min_pixels == 3136
    assert planner.image_tokens(640, 480) - 2 == 54, "docs/results/cpu-vl-demo-model: vLLM's 54 image tokens"
    assert planner.image_tokens(28, 28) - 2 == 4 and planner.largest_image_tokens() - 2 == 64


@pytest.mark.parametrize("kwargs", [{}, {"size": {"longest_edge": 168}}, {"do_image_splitting": False}])
def test_idefics3_image_tokens_are_the_processors(demo_folders, kwargs):
    from transformers import AutoProcessor

    folder = demo_folders["idefics3"]
    processor = AutoProcessor.from_pretrained(str(folder), **kwargs)
    planner = read_model_facts(folder).image_processor.with_kwargs(kwargs)
    for width, height in QWEN_SIZES[:5] + [(2000, 100)]:
        ids = processor(text="<image>", images=[Image.new("RGB", (width, height))])["input_ids"][0]
        assert planner.image_tokens(width, height) == len(ids), (kwargs, width, height)
    if not kwargs:
        assert planner.image_tokens(640, 480) == 34, "docs/results/cpu-vl-demo-model: 34 placeholder tokens"


def test_the_planner_shows_five_images_at_max_pixels_and_the_prompts_that_fit(qwen25_vl, demo_folders, facts):
    config = resolve_preset(multimodal(), EngineConfig(model=qwen25_vl.path), ONE_GPU, qwen25_vl).config
    plan = plan_capacity(config, qwen25_vl, ONE_GPU)
    prompts = plan.num_blocks // math.ceil(6410 / 16)
    assert plan.lines()[-1] == f"5 images at max_pixels 1,003,520: 6,410 tokens; {prompts:,} such prompts fit the " \
                               "KV cache"
    demo = read_model_facts(demo_folders["idefics3"])
    config = resolve_preset(multimodal(), EngineConfig(model=demo.path), CPU, demo).config
    assert plan_capacity(config, demo, CPU).lines()[-1].startswith("5 images at longest edge 112: 170 tokens; ")
    short = config.with_changes([("max_model_len", 128)])
    assert "More than max_model_len 128: vLLM refuses such a prompt" in plan_capacity(short, demo, CPU).lines()[-1]
    text_model = resolve_preset(multimodal(), EngineConfig(model=facts.path), CPU, facts).config
    assert "images" not in " ".join(plan_capacity(text_model, facts, CPU).lines()), "a text model reads none"


# ---------------------------------------------------------------- the preset panel
def test_the_panel_says_a_text_model_needs_a_vision_model_before_anything_starts(qtbot, facts):
    from test_presets import applied, preset_panel

    registry_answer()  # as the panel's first read of vLLM's defaults asks it, off the GUI thread
    restarts = []
    panel = preset_panel(qtbot, facts, restarts)
    panel.choose("multimodal")
    assert not panel.problem_text.isHidden()
    assert "The multimodal preset needs a vision-language model" in panel.problem_text.text(), "shown on choosing"
    assert not applied(qtbot, panel) and restarts == [], "nothing started"
    assert panel.problem_text.text().startswith("Not applied:\nThe multimodal preset needs a vision-language model")
    assert panel.model.config.option("limit_mm_per_prompt") is None


def test_the_panel_applies_it_on_a_vision_model_and_plans_its_images(qtbot, demo_folders):
    from test_presets import applied, preset_panel

    restarts = []
    panel = preset_panel(qtbot, read_model_facts(demo_folders["idefics3"]), restarts)
    panel.choose("multimodal")
    assert "5 images at longest edge 112: 170 tokens; " in panel.capacity.text()
    assert "such prompts fit the KV cache" in panel.capacity.text() and panel.problem_text.text() == ""
    assert applied(qtbot, panel) and restarts == [1]
    config = panel.model.config
    assert config.option("limit_mm_per_prompt") == {"image": 5} and config.option("mm_processor_cache_gb") == 1


def test_the_panel_edits_a_table_value_for_this_platform(qtbot, demo_folders):
    from test_presets import preset_panel, values_row

    panel = preset_panel(qtbot, read_model_facts(demo_folders["idefics3"]), [])
    panel.choose("multimodal")
    for key, typed, written in (
            ("limit_mm_per_prompt", '{"image": 3}', {"image": 3}),
            ("mm_processor_kwargs", '{"max_pixels": 100352}',
             {"cpu": {"max_pixels": 100352}, "cuda": {"max_pixels": 1003520, "min_pixels": 3136}})):
        editor = panel.values.cellWidget(values_row(panel, key), 1)
        assert editor.text().startswith("{"), "shown as JSON"
        editor.setText(typed)
        editor.editingFinished.emit()
        assert panel.document.engine()[key] == written, key
    assert panel.resolved.config.option("limit_mm_per_prompt") == {"image": 3}
    assert panel.resolved.config.option("mm_processor_kwargs") == {"max_pixels": 100352}
    text = panel.document.text()
    assert "limit_mm_per_prompt = {image = 3}" in text and "# Up to 5 images a prompt" in text, "inline, comments kept"
    assert "3 images at longest edge 112: 102 tokens" in panel.capacity.text()
