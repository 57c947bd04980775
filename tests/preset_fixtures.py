"""Fixtures the preset tests share: a config folder of their own, and the facts of a model folder with
the demo model's shape (no weights to speak of), or with Qwen2.5-VL-3B's (a vision-language model)."""
from __future__ import annotations

import json

import pytest

from workbench.presets.model_facts import read_model_facts

DEMO_SHAPE = dict(hidden_size=128, intermediate_size=384, num_hidden_layers=2, num_attention_heads=2,
                  num_key_value_heads=1, max_position_embeddings=4096, vocab_size=1024, torch_dtype="float32")


@pytest.fixture(autouse=True)
def config_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path / "config"))


@pytest.fixture
def facts(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(DEMO_SHAPE))
    (folder / "model.safetensors").write_bytes(b"\0" * 1000)
    return read_model_facts(folder)


# Qwen/Qwen2.5-VL-3B-Instruct's config.json and preprocessor_config.json, the sizes that matter here
QWEN25_VL_3B = dict(architectures=["Qwen2_5_VLForConditionalGeneration"], model_type="qwen2_5_vl", hidden_size=2048,
                    intermediate_size=11008, num_hidden_layers=36, num_attention_heads=16, num_key_value_heads=2,
                    max_position_embeddings=128000, vocab_size=151936, torch_dtype="bfloat16",
                    tie_word_embeddings=True, vision_config={"depth": 32, "hidden_size": 1280, "patch_size": 14})
QWEN25_VL_PROCESSOR = dict(image_processor_type="Qwen2VLImageProcessor", min_pixels=3136, max_pixels=12845056,
                           patch_size=14, merge_size=2, temporal_patch_size=2)


@pytest.fixture
def qwen25_vl(tmp_path):
    folder = tmp_path / "Qwen2.5-VL-3B-Instruct"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(QWEN25_VL_3B))
    (folder / "preprocessor_config.json").write_text(json.dumps(QWEN25_VL_PROCESSOR))
    return read_model_facts(folder)
