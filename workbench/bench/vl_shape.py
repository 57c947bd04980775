"""A config-only model folder shaped like Qwen2.5-VL-3B-Instruct, for benchmarks with dummy weights.

The published configuration's sizes (text and vision towers, M-RoPE sections), the text demo's tokenizer
with Qwen's vision tokens (``demo_vl_model.build_tokenizer``) padded with filler tokens to the published
vocabulary, and Qwen2-VL's image processor at the pixel range asked for. The config's vision token ids
are the tokenizer's, so vLLM's processor finds and expands ``<|image_pad|>`` as for the real model; the
compute per token and per image is the real model's. Needs no weights: start it with
``load_format="dummy"``. vLLM's Qwen2.5-VL code imports torchvision: the GPU machine has it.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

# Qwen/Qwen2.5-VL-3B-Instruct's config.json
TEXT_3B = dict(hidden_size=2048, intermediate_size=11008, num_hidden_layers=36, num_attention_heads=16,
               num_key_value_heads=2, vocab_size=151936, max_position_embeddings=128000, rms_norm_eps=1e-6,
               tie_word_embeddings=True)
VISION_3B = dict(depth=32, hidden_act="silu", hidden_size=1280, intermediate_size=3420, num_heads=16,
                 in_chans=3, out_hidden_size=2048, patch_size=14, spatial_merge_size=2, spatial_patch_size=14,
                 window_size=112, fullatt_block_indexes=[7, 15, 23, 31], tokens_per_second=2,
                 temporal_patch_size=2)
MROPE_SECTION = [16, 24, 24]
MAX_PIXELS = 1003520  # the article's MAX_PIXELS: at most 1,280 image tokens an image
MIN_PIXELS = 3136


def write_vl_shape(folder: Path | None = None, max_pixels: int = MAX_PIXELS) -> Path:
    """Writes the folder (config, tokenizer, chat template, image processor) and returns it."""
    from transformers import GenerationConfig, Qwen2_5_VLConfig

    from workbench.engine.demo_vl_model import DemoVLRecipe, build_image_processor, build_tokenizer

    folder = Path(folder or tempfile.mkdtemp(prefix="shape-qwen2.5-vl-3b-"))
    recipe = DemoVLRecipe(max_pixels=max_pixels, min_pixels=MIN_PIXELS)
    tokenizer = build_tokenizer(recipe)
    tokenizer.add_tokens([f"<|pad{i}|>" for i in range(TEXT_3B["vocab_size"] - len(tokenizer))])
    ids = tokenizer.convert_tokens_to_ids
    text = dict(TEXT_3B, bos_token_id=ids("<|endoftext|>"), eos_token_id=ids("<|im_end|>"),
                pad_token_id=ids("<|endoftext|>"),
                rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": MROPE_SECTION})
    config = Qwen2_5_VLConfig(
        text_config=text, vision_config=VISION_3B, tie_word_embeddings=True, torch_dtype="bfloat16",
        image_token_id=ids("<|image_pad|>"), video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"), vision_end_token_id=ids("<|vision_end|>"),
        vision_token_id=ids("<|vision_pad|>"),
    )
    config.architectures = ["Qwen2_5_VLForConditionalGeneration"]  # else vLLM takes it for a pooling model
    config.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    build_image_processor(recipe).save_pretrained(folder)
    GenerationConfig(bos_token_id=text["bos_token_id"], eos_token_id=text["eos_token_id"],
                     pad_token_id=text["pad_token_id"]).save_pretrained(folder)
    return folder


if __name__ == "__main__":
    import sys

    print(write_vl_shape(Path(sys.argv[1]) if len(sys.argv) > 1 else None))
