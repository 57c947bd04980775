"""Config-only model folders shaped like published models, for benchmarks with dummy weights."""
from __future__ import annotations

import tempfile
from pathlib import Path

# Published Qwen2.5 configuration values (hidden sizes, layers, heads, vocabulary).
SHAPES = {
    "qwen2.5-0.5b": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                         num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
    "qwen2.5-7b": dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
                       num_key_value_heads=4, vocab_size=152064, tie_word_embeddings=False),
}


def write_shape(name: str, folder: Path | None = None) -> Path:
    from transformers import Qwen2Config

    folder = folder or Path(tempfile.mkdtemp(prefix=f"shape-{name}-"))
    config = Qwen2Config(max_position_embeddings=32768, rope_theta=1_000_000.0, torch_dtype="bfloat16",
                         **SHAPES[name])
    config.save_pretrained(folder)
    save_padded_demo_tokenizer(folder, config.vocab_size)
    return folder


def save_padded_demo_tokenizer(folder: Path, vocab_size: int) -> None:
    """The demo tokenizer, padded with filler tokens to the shape's vocabulary, so that both
    benchmark paths detokenize every generated id as the GUI does."""
    from workbench.engine.demo_model import DemoRecipe, build_tokenizer, chat_texts

    tokenizer = build_tokenizer(chat_texts(), DemoRecipe())
    tokenizer.add_tokens([f"<|pad{i}|>" for i in range(vocab_size - len(tokenizer))])
    tokenizer.save_pretrained(folder)
