"""What a model's folder says about its size (layers, KV heads, head size, dtype, weights on disk) and
whether it reads images (a vision tower in its config, or an architecture vLLM's registry lists as
multimodal), with its image processor's sizes."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from workbench.presets.image_tokens import ImageProcessorFacts, read_image_processor

WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.pt", "*.gguf")
DTYPE_BYTES = {"float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2, "fp8": 1, "fp8_e4m3": 1,
               "fp8_e5m2": 1, "fp8_inc": 1, "int8": 1}
QUANTIZE_AT_LOAD = {"fp8"}  # methods vLLM applies to a 16-bit model's weights as it loads them (CUDA)


@dataclass(frozen=True)
class ModelFacts:
    path: str
    num_layers: int
    num_kv_heads: int
    head_size: int
    dtype: str
    max_position_embeddings: int
    weights_bytes: int
    weights_from_files: bool  # False: estimated from the config (a folder without weights)
    quant_method: str | None  # the quantization its files carry (config.json's quantization_config)
    trust_remote_code_needed: bool  # config.json names code of its own (auto_map)
    hidden_size: int = 0
    intermediate_size: int = 0
    vocab_size: int = 0
    tie_word_embeddings: bool = False
    architectures: tuple[str, ...] = ()  # config.json's architectures
    vision_config: bool = False  # config.json has a vision tower's config
    audio_config: bool = False  # config.json has an audio tower's config
    image_processor: ImageProcessorFacts | None = None  # how its images become tokens (None: not counted)

    def reads_images(self, multimodal: frozenset[str]) -> bool:
        """A vision-language model: a vision tower in its config, or an architecture that vLLM's registry
        lists as multimodal (``multimodal``) and that is not an audio model."""
        if self.vision_config:
            return True
        return not self.audio_config and any(a in multimodal for a in self.architectures)

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES.get(self.dtype, 2)

    def served_weights_bytes(self, quantization: str | None) -> int:
        """The weights as vLLM holds them: quantized to fp8 as it loads a 16-bit model, the linear layers
        take a byte a parameter and the embeddings keep their 16 bits; otherwise as the files hold them."""
        if quantization not in QUANTIZE_AT_LOAD or self.quant_method or not self.hidden_size:
            return self.weights_bytes
        hidden, kv = self.hidden_size, self.num_kv_heads * self.head_size
        linear = self.num_layers * (2 * hidden * hidden + 2 * hidden * kv + 3 * hidden * self.intermediate_size)
        embeddings = self.vocab_size * hidden * (1 if self.tie_word_embeddings else 2)
        share = linear / max(1, linear + embeddings)
        return int(self.weights_bytes * (1 - share * (1 - 1 / max(1, self.dtype_bytes))))


def _text_config(config: dict) -> dict:
    return config.get("text_config") or config


def estimated_weights_bytes(config: dict, dtype_bytes: int) -> int:
    """Parameters of a decoder-only transformer from its config, times the dtype's bytes."""
    c = _text_config(config)
    hidden, layers = c.get("hidden_size", 0), c.get("num_hidden_layers", 0)
    heads = c.get("num_attention_heads", 1)
    head = c.get("head_dim") or hidden // max(1, heads)
    kv = c.get("num_key_value_heads", heads) * head
    attention = hidden * heads * head * 2 + hidden * kv * 2
    mlp = 3 * hidden * c.get("intermediate_size", 4 * hidden)
    embeddings = c.get("vocab_size", 0) * hidden * (1 if c.get("tie_word_embeddings") else 2)
    return (layers * (attention + mlp) + embeddings) * dtype_bytes


def read_model_facts(folder: str | Path) -> ModelFacts:
    """Raises OSError or ValueError where the folder has no readable config.json."""
    folder = Path(folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    files = [p for pattern in WEIGHT_PATTERNS for p in folder.glob(pattern)]
    on_disk = sum(p.stat().st_size for p in files)
    return facts_from_config(config, str(folder), on_disk or None, folder)


def config_dtype(config: dict) -> str:
    c = _text_config(config)
    return str(c.get("torch_dtype") or config.get("torch_dtype") or c.get("dtype") or config.get("dtype")
               or "bfloat16")


def facts_from_config(config: dict, path: str, weights_bytes: int | None, folder: Path | None = None) -> ModelFacts:
    """The facts of a model from its config.json; ``weights_bytes`` from its files (on disk, or the Hub's
    safetensors headers), None to estimate them from the config; ``folder``: where its processor's files
    are, if anywhere."""
    c = _text_config(config)
    heads = c.get("num_attention_heads", 1)
    dtype = config_dtype(config)
    quant = (config.get("quantization_config") or {}).get("quant_method")
    return ModelFacts(
        path=path, num_layers=c.get("num_hidden_layers", 0),
        num_kv_heads=c.get("num_key_value_heads", heads),
        head_size=c.get("head_dim") or c.get("hidden_size", 0) // max(1, heads), dtype=dtype,
        max_position_embeddings=c.get("max_position_embeddings", 2048),
        weights_bytes=weights_bytes or estimated_weights_bytes(config, DTYPE_BYTES.get(dtype, 2)),
        weights_from_files=bool(weights_bytes), quant_method=quant, trust_remote_code_needed="auto_map" in config,
        hidden_size=c.get("hidden_size", 0), intermediate_size=c.get("intermediate_size", 0),
        vocab_size=c.get("vocab_size", 0),
        tie_word_embeddings=bool(c.get("tie_word_embeddings", config.get("tie_word_embeddings", False))),
        architectures=tuple(str(a) for a in config.get("architectures") or ()),
        vision_config="vision_config" in config, audio_config="audio_config" in config,
        image_processor=read_image_processor(folder, config),
    )


def facts_for(model: str) -> ModelFacts | None:
    """The facts of a model named as the app names it (the demos, a folder, a cached hub id); None when
    its config cannot be found or read (a demo not built yet)."""
    from workbench.engine.model_source import cached_snapshot, model_for_command_line

    folder = Path(model_for_command_line(model))  # a demo's folder
    if not folder.is_dir() and "/" in model:
        folder = cached_snapshot(model) or folder
    try:
        return read_model_facts(folder)
    except (OSError, ValueError):
        return None
