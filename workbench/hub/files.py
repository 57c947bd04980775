"""Which of a repo's files vLLM needs: the config, the tokenizer and chat template, the generation
config, and one copy of the weights in the format vLLM loads first (safetensors; PyTorch ``.bin`` where
that is all there is). Duplicate copies (``.bin`` beside safetensors, ``.pt``, GGUF, ONNX, ``original/``
folders) are left out.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass

SUPPORT_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                 "tokenizer.model", "special_tokens_map.json", "added_tokens.json", "vocab.json", "vocab.txt",
                 "merges.txt", "chat_template.jinja", "chat_template.json", "preprocessor_config.json",
                 "processor_config.json", "video_preprocessor_config.json", "*.tiktoken", "tokenizer.tiktoken",
                 "params.json")
SAFETENSORS_INDEX = "model.safetensors.index.json"
BIN_INDEX = "pytorch_model.bin.index.json"


@dataclass(frozen=True)
class RepoFile:
    name: str
    size: int
    sha256: str | None = None  # LFS files: the content's hash, checked after the download
    blob_id: str | None = None  # the git blob id: a small file's name in the cache


@dataclass(frozen=True)
class FileChoice:
    files: tuple[RepoFile, ...]
    weights_format: str  # "safetensors", "bin" or "" (none vLLM loads)
    left_out: tuple[str, ...]  # files not fetched (other formats, other folders)
    problem: str | None = None  # why the repo cannot be run (GGUF only, no weights)
    note: str | None = None  # what the user should know (PyTorch .bin only)

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)


def _support(name: str) -> bool:
    return "/" not in name and any(fnmatch.fnmatch(name, pattern) for pattern in SUPPORT_FILES)


def choose_files(files: list[RepoFile], weight_map_files: set[str] | None = None) -> FileChoice:
    """``weight_map_files``: the shards the safetensors index names (others at the root are copies)."""
    root = [f for f in files if "/" not in f.name]
    safetensors = [f for f in root if f.name.endswith(".safetensors")]
    if weight_map_files:
        safetensors = [f for f in safetensors if f.name in weight_map_files]
    elif len(safetensors) > 1 and any(f.name.startswith("model") for f in safetensors):
        safetensors = [f for f in safetensors if f.name.startswith("model")]  # not consolidated.safetensors
    bins = [f for f in root if f.name.endswith(".bin") and f.name.startswith("pytorch_model")]
    index = [f for f in root if f.name == (SAFETENSORS_INDEX if safetensors else BIN_INDEX)]
    weights, fmt, note, problem = safetensors, "safetensors", None, None
    if not safetensors and bins:
        weights, fmt = bins, "bin"
        note = ("This repo has PyTorch .bin weights only: vLLM loads them, more slowly than safetensors, and a "
                ".bin file is a pickle that can run code as it loads. Download it only from a publisher you trust.")
    elif not safetensors:
        fmt = ""
        ggufs = [f.name for f in files if f.name.endswith(".gguf")]
        problem = (f"This repo holds GGUF files only ({len(ggufs)}: {', '.join(ggufs[:3])}"
                   f"{'…' if len(ggufs) > 3 else ''}), for llama.cpp and the apps built on it. vLLM runs the "
                   "original model: search for it by name without GGUF (its safetensors repo)."
                   if ggufs else "This repo holds no weights vLLM loads (no *.safetensors or pytorch_model*.bin): "
                                 "choose the repo that holds the model's weights.")
    chosen = [f for f in root if _support(f.name)] + index + weights
    names = {f.name for f in chosen}
    return FileChoice(tuple(chosen), fmt, tuple(f.name for f in files if f.name not in names), problem, note)
