"""Model repos for the tests' Hub (tests/hub_server.py), as folders on disk: a tiny model and a
config-only, 7B-shaped one whose safetensors files hold headers only."""
from __future__ import annotations

import json
import struct
from pathlib import Path


def write_safetensors_header(path: Path, tensors: dict[str, tuple[str, list[int]]], data: bytes | None = None) -> None:
    """A safetensors file whose header describes ``tensors`` (name -> (dtype, shape)).

    Without ``data`` it is a header-only stand-in: the header is all that ``get_safetensors_metadata``
    reads (HTTP range reads of the first bytes), so the data the offsets point at is left out."""
    sizes = {"BF16": 2, "F16": 2, "F32": 4, "I64": 8}
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, (dtype, shape) in tensors.items():
        n = sizes[dtype]
        for dim in shape:
            n *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # the header is padded to 8 bytes, as safetensors writes it
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + (data or b""))


def tiny_repo_files(folder: Path, weights_kib: int = 64) -> Path:
    """A tiny model folder: config.json, a few-byte tokenizer.json and a small random model.safetensors."""
    import numpy as np
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 16, "num_hidden_layers": 1,
        "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 32, "vocab_size": 64}))
    (folder / "tokenizer.json").write_text('{"version": "1.0"}')
    (folder / "tokenizer_config.json").write_text('{"model_max_length": 128}')
    rows = max(weights_kib * 1024 // (4 * 64), 1)
    rng = np.random.default_rng(0)
    save_file({"model.embed_tokens.weight": rng.standard_normal((rows, 64)).astype(np.float32)},
              str(folder / "model.safetensors"))
    return folder


# Qwen/Qwen2.5-7B-Instruct's config.json, as published.
QWEN25_7B_CONFIG = {
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645,
    "hidden_act": "silu", "hidden_size": 3584, "initializer_range": 0.02, "intermediate_size": 18944,
    "max_position_embeddings": 32768, "max_window_layers": 28, "model_type": "qwen2", "num_attention_heads": 28,
    "num_hidden_layers": 28, "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "sliding_window": 131072, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "transformers_version": "4.43.1", "use_cache": True, "use_sliding_window": False, "vocab_size": 152064,
}
QWEN25_7B_PARAMETERS = 7_615_616_512  # what the headers below add up to (the Hub says 7.62B)


def qwen7b_tensors(config: dict = QWEN25_7B_CONFIG) -> dict[str, tuple[str, list[int]]]:
    """Qwen2's tensors for ``config``, by name: (dtype, shape), in the order the checkpoint has them."""
    h, inter, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    kv = h // config["num_attention_heads"] * config["num_key_value_heads"]
    tensors = {"model.embed_tokens.weight": ("BF16", [vocab, h])}
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        tensors.update({
            p + "input_layernorm.weight": ("BF16", [h]), p + "post_attention_layernorm.weight": ("BF16", [h]),
            p + "self_attn.q_proj.weight": ("BF16", [h, h]), p + "self_attn.q_proj.bias": ("BF16", [h]),
            p + "self_attn.k_proj.weight": ("BF16", [kv, h]), p + "self_attn.k_proj.bias": ("BF16", [kv]),
            p + "self_attn.v_proj.weight": ("BF16", [kv, h]), p + "self_attn.v_proj.bias": ("BF16", [kv]),
            p + "self_attn.o_proj.weight": ("BF16", [h, h]),
            p + "mlp.gate_proj.weight": ("BF16", [inter, h]), p + "mlp.up_proj.weight": ("BF16", [inter, h]),
            p + "mlp.down_proj.weight": ("BF16", [h, inter]),
        })
    tensors["model.norm.weight"] = ("BF16", [h])
    if not config.get("tie_word_embeddings"):  # tied: the output layer is the embedding's
        tensors["lm_head.weight"] = ("BF16", [vocab, h])
    return tensors


# Qwen/Qwen2.5-0.5B-Instruct's config.json, as published (its embeddings are tied).
QWEN25_05B_CONFIG = {
    **QWEN25_7B_CONFIG, "hidden_size": 896, "intermediate_size": 4864, "max_window_layers": 21,
    "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2, "sliding_window": 32768,
    "tie_word_embeddings": True, "vocab_size": 151936,
}


def qwen7b_shaped_files(folder: Path, shards: int = 4, config: dict = QWEN25_7B_CONFIG) -> Path:
    """A config-only model folder of ``config``'s shape (Qwen2.5-7B-Instruct's by default): its config.json,
    a model.safetensors.index.json and ``shards`` header-only safetensors files (a few KiB each) whose
    headers describe all of its parameters (7.6e9 at 7B)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    tensors = list(qwen7b_tensors(config).items())
    per_shard = -(-len(tensors) // shards)
    weight_map, total = {}, 0
    for k in range(shards):
        name = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        part = dict(tensors[k * per_shard:(k + 1) * per_shard])
        write_safetensors_header(folder / name, part)
        for tensor, (_, shape) in part.items():
            weight_map[tensor] = name
            n = 2
            for dim in shape:
                n *= dim
            total += n
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2))
    return folder
