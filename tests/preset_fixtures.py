"""Fixtures the preset tests share: a config folder of their own, and the facts of a model folder with
the demo model's shape (no weights to speak of)."""
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
