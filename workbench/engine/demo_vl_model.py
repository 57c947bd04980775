"""Builds the vision-language demo model: a tiny Qwen2-VL (or Idefics3) with the text demo's tokenizer.

No model hub is needed: the tokenizer is the text demo's byte-level BPE, trained here on its chat
samples (:mod:`workbench.engine.demo_model`), with the architecture's vision special tokens added; the
weights are random (seeded), so the build takes seconds on a CPU. The replies are noise; the point is
the path: images go through vLLM's processing, the vision tower and the text model, as for a real one.

Qwen2-VL (the default): the image processor is saved with a small ``max_pixels``, so that an image
costs few tokens: at ``28 * 28 * 64`` an image is at most 64 image tokens (256 patches of 14 x 14
before the 2 x 2 merge). vLLM 0.32's Qwen2-VL code needs torchvision, which the CPU install removes
(it imports transformers' torchvision-backed image module, and the processor loads a video processor
that needs it).

Idefics3 (SigLIP-style vision tower, Llama text model): runs without torchvision. An image is cut into
tiles of ``tile_size`` pixels, plus the whole image as one more tile, each tile
``(tile_size / patch_size / 2) ** 2`` image tokens: 4 at the defaults, at most 20 an image.
``docs/results/cpu-vl-demo-model/FINDINGS.md`` has the figures for both.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from workbench.engine.demo_model import DemoRecipe, ProgressFn, build_in_place
from workbench.paths import data_dir

BUILD_VERSION = "1"  # bump when the recipe changes, so an old build is replaced
QWEN2_VL, IDEFICS3 = "qwen2-vl", "idefics3"
VISION_SPECIAL_TOKENS = [
    "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>", "<|box_end|>",
    "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>",
    "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
]
IMAGE_PLACEHOLDER = "<|vision_start|><|image_pad|><|vision_end|>"
VIDEO_PLACEHOLDER = "<|vision_start|><|video_pad|><|vision_end|>"
# Content as a string (as the text demo's) or as a list of parts: {"type": "text", "text": ...} and
# {"type": "image"} (vLLM turns OpenAI's image_url parts into these), each image in its place.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' or part['type'] == 'image_url' or 'image' in part %}"
    "{{ '" + IMAGE_PLACEHOLDER + "' }}"
    "{% elif part['type'] == 'video' or 'video' in part %}{{ '" + VIDEO_PLACEHOLDER + "' }}"
    "{% elif 'text' in part %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
    "{{ '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
IDEFICS3_SPECIAL_TOKENS = ["<end_of_utterance>", "<fake_token_around_image>", "<image>", "<global-img>"] + [
    f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)  # the tiles' places, up to 6 x 6
]
IDEFICS3_CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ message['role'] | capitalize + ':' }}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' or part['type'] == 'image_url' or 'image' in part %}{{ '<image>' }}"
    "{% elif 'text' in part %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
    "{{ '<end_of_utterance>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)


@dataclass(frozen=True)
class DemoVLRecipe:
    """What the vision-language demo model is: its architecture, sizes of both towers and of the images."""

    architecture: str = QWEN2_VL  # or IDEFICS3
    text: DemoRecipe = DemoRecipe()  # the text model's sizes and the tokenizer's: the text demo's
    vision_depth: int = 2
    vision_embed_dim: int = 64
    vision_heads: int = 2
    vision_mlp_ratio: int = 2
    patch_size: int = 14
    spatial_merge_size: int = 2
    temporal_patch_size: int = 2
    min_pixels: int = 28 * 28 * 4
    max_pixels: int = 28 * 28 * 64
    tile_size: int = 56  # Idefics3: the vision tower's image size, one tile
    longest_edge: int = 112  # Idefics3: images are resized to this longest edge, then cut in tiles
    seed: int = 1234


def build_tokenizer(recipe: DemoVLRecipe):
    """The text demo's tokenizer (a byte-level BPE trained on the demo corpus), with the architecture's
    vision tokens added on top, its end-of-turn token and its chat template."""
    from workbench.engine.demo_model import build_tokenizer as build_text_tokenizer, chat_texts

    qwen = recipe.architecture == QWEN2_VL
    tokenizer = build_text_tokenizer(chat_texts(), recipe.text)  # vision tokens on top of its vocabulary
    extra = VISION_SPECIAL_TOKENS if qwen else IDEFICS3_SPECIAL_TOKENS
    tokenizer.add_special_tokens({"additional_special_tokens": extra})
    if not qwen:
        tokenizer.eos_token = "<end_of_utterance>"
    tokenizer.chat_template = CHAT_TEMPLATE if qwen else IDEFICS3_CHAT_TEMPLATE
    return tokenizer


def text_config(tokenizer, recipe: DemoVLRecipe, eos_token: str) -> dict:
    """The text model's sizes and special token ids, the same for both architectures."""
    ids = tokenizer.convert_tokens_to_ids
    sizes = recipe.text
    return dict(
        vocab_size=_rounded(len(tokenizer), 64),
        hidden_size=sizes.hidden_size,
        intermediate_size=sizes.intermediate_size,
        num_hidden_layers=sizes.num_layers,
        num_attention_heads=sizes.num_heads,
        num_key_value_heads=sizes.num_kv_heads,
        max_position_embeddings=sizes.max_positions,
        bos_token_id=ids("<|endoftext|>"),
        eos_token_id=ids(eos_token),
        pad_token_id=ids("<|endoftext|>"),
    )


def build_config(tokenizer, recipe: DemoVLRecipe):
    """The model's config: Qwen2-VL's or Idefics3's, per the recipe."""
    if recipe.architecture == IDEFICS3:
        return idefics3_config(tokenizer, recipe)
    if recipe.architecture != QWEN2_VL:
        raise ValueError(f"unknown architecture {recipe.architecture!r}: {QWEN2_VL} or {IDEFICS3}")
    from transformers import Qwen2VLConfig

    ids = tokenizer.convert_tokens_to_ids
    head_dim = recipe.text.hidden_size // recipe.text.num_heads
    # M-RoPE splits the head_dim / 2 rotary pairs over (time, height, width), as Qwen2-VL's 16/24/24
    mrope = [head_dim // 8, 3 * head_dim // 16, 3 * head_dim // 16]
    text = text_config(tokenizer, recipe, "<|im_end|>") | dict(
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": mrope},
        tie_word_embeddings=True,
    )
    vision = dict(
        depth=recipe.vision_depth,
        embed_dim=recipe.vision_embed_dim,
        hidden_size=recipe.text.hidden_size,  # the merger's output: the text model's width
        mlp_ratio=recipe.vision_mlp_ratio,
        num_heads=recipe.vision_heads,
        patch_size=recipe.patch_size,
        spatial_merge_size=recipe.spatial_merge_size,
        temporal_patch_size=recipe.temporal_patch_size,
    )
    return Qwen2VLConfig(
        text_config=text,
        vision_config=vision,
        image_token_id=ids("<|image_pad|>"),
        video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"),
        vision_end_token_id=ids("<|vision_end|>"),
        tie_word_embeddings=True,
    )


def idefics3_config(tokenizer, recipe: DemoVLRecipe):
    from transformers import Idefics3Config

    ids = tokenizer.convert_tokens_to_ids
    text = text_config(tokenizer, recipe, "<end_of_utterance>") | dict(model_type="llama")
    vision = dict(
        hidden_size=recipe.vision_embed_dim,
        intermediate_size=recipe.vision_embed_dim * recipe.vision_mlp_ratio,
        num_hidden_layers=recipe.vision_depth,
        num_attention_heads=recipe.vision_heads,
        image_size=recipe.tile_size,
        patch_size=recipe.patch_size,
    )
    return Idefics3Config(text_config=text, vision_config=vision, scale_factor=recipe.spatial_merge_size,
                          image_token_id=ids("<image>"), pad_token_id=ids("<|endoftext|>"))


def build_image_processor(recipe: DemoVLRecipe):
    """Qwen2-VL's image processor with the recipe's pixel range (built as the PIL one, which needs no
    torchvision; the saved config is the same for both backends)."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    return Qwen2VLImageProcessorPil(
        min_pixels=recipe.min_pixels,
        max_pixels=recipe.max_pixels,
        patch_size=recipe.patch_size,
        temporal_patch_size=recipe.temporal_patch_size,
        merge_size=recipe.spatial_merge_size,
    )


def save_processor(folder: Path, tokenizer, recipe: DemoVLRecipe) -> None:
    """The tokenizer (with chat_template.jinja) and the image processor; for Idefics3 the processor
    too (processor_config.json: the image tokens a tile)."""
    if recipe.architecture == QWEN2_VL:
        tokenizer.save_pretrained(folder)
        build_image_processor(recipe).save_pretrained(folder)
        return
    from transformers import Idefics3Processor
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    image_processor = Idefics3ImageProcessorPil(size={"longest_edge": recipe.longest_edge},
                                                max_image_size={"longest_edge": recipe.tile_size})
    tokens_a_tile = (recipe.tile_size // recipe.patch_size // recipe.spatial_merge_size) ** 2
    Idefics3Processor(image_processor=image_processor, tokenizer=tokenizer, image_seq_len=tokens_a_tile,
                      chat_template=tokenizer.chat_template).save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def build_demo_vl_model(folder: Path, recipe: DemoVLRecipe = DemoVLRecipe()) -> None:
    """Writes the model folder: config, random weights, tokenizer, chat template, image processor."""
    import torch
    from transformers import GenerationConfig, Idefics3ForConditionalGeneration, Qwen2VLForConditionalGeneration

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(recipe)
    config = build_config(tokenizer, recipe)
    torch.manual_seed(recipe.seed)
    qwen = recipe.architecture == QWEN2_VL
    model_cls = Qwen2VLForConditionalGeneration if qwen else Idefics3ForConditionalGeneration
    model = model_cls(config).to(torch.bfloat16).eval()  # bfloat16: what vLLM runs on CPU
    model.save_pretrained(folder, safe_serialization=True)
    save_processor(folder, tokenizer, recipe)
    GenerationConfig(
        bos_token_id=config.text_config.bos_token_id,
        eos_token_id=config.text_config.eos_token_id,
        pad_token_id=config.text_config.pad_token_id,
    ).save_pretrained(folder)
    (folder / "workbench-demo.json").write_text(
        json.dumps({"build_version": BUILD_VERSION, "kind": "vision-language", "recipe": asdict(recipe)})
    )


def _rounded(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


APP_RECIPE_ARCHITECTURE = IDEFICS3  # the app's demo-vl: runs on vLLM's CPU build as installed (no torchvision)


def demo_vl_model_dir() -> Path:
    return data_dir() / "models" / f"demo-vl-{APP_RECIPE_ARCHITECTURE}"


def _is_built(path: Path) -> bool:
    try:
        return json.loads((path / "workbench-demo.json").read_text()).get("build_version") == BUILD_VERSION
    except (OSError, ValueError):
        return False


def ensure_demo_vl_model(progress: ProgressFn | None = None) -> Path:
    """The app's vision demo model (``demo-vl``), built first (seconds) where this machine has none; the
    folder appears whole or not at all."""
    target = demo_vl_model_dir()
    if _is_built(target):
        return target
    report = progress or (lambda label, fraction: None)

    def build(staging: Path) -> None:
        report("Building the vision demo model", 0.1)
        build_demo_vl_model(staging, DemoVLRecipe(architecture=APP_RECIPE_ARCHITECTURE))
        report("Building the vision demo model", 1.0)

    return build_in_place(target, build)
