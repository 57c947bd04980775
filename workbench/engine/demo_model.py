"""Builds the demo model: a small Qwen2-architecture model with its own byte-level BPE tokenizer.

No model hub is needed: the tokenizer and the model are trained here, in a few CPU minutes at most,
on the chat samples shipped in ``workbench/resources/demo_corpus`` (provenance and licence there).
The result is an ordinary Hugging Face model folder, loaded through the same path as any other.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from workbench.engine.spec import DEMO_MODEL, DEMO_VL_MODEL
from workbench.engine.start_phases import StartProgress, progress_for
from workbench.paths import data_dir, resources_dir

ProgressFn = Callable[[str, float], None]

DEMO_NAME = "demo-qwen2"
BUILD_VERSION = "3"  # bump when the recipe changes, so an old build is replaced
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


@dataclass(frozen=True)
class DemoRecipe:
    """What the demo model is: sizes and the training budget."""

    vocab_size: int = 1024
    hidden_size: int = 128
    intermediate_size: int = 384
    num_layers: int = 2
    num_heads: int = 2
    num_kv_heads: int = 1
    max_positions: int = 4096
    seq_len: int = 256
    batch_size: int = 16
    learning_rate: float = 3e-3
    max_steps: int = 1500
    time_budget_s: float = 150.0
    target_loss: float = 0.12
    seed: int = 1234


def demo_model_dir() -> Path:
    return data_dir() / "models" / DEMO_NAME


def is_demo_model(model: str) -> bool:
    """True for the demo's name and for its folder."""
    return model == DEMO_MODEL or Path(model).expanduser().resolve() == demo_model_dir().resolve()


def default_system_prompt() -> str:
    return system_prompts()[0]


def system_prompts() -> list[str]:
    text = (resources_dir() / "demo_corpus" / "system_prompts.txt").read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip()]


def dialogues() -> list[tuple[str, str]]:
    text = (resources_dir() / "demo_corpus" / "dialogues.txt").read_text(encoding="utf-8")
    pairs = []
    for block in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.strip().splitlines())
        pairs.append((lines["Q"], lines["A"]))
    return pairs


def is_built(path: Path) -> bool:
    stamp = path / "workbench-demo.json"
    if not stamp.exists():
        return False
    try:
        return json.loads(stamp.read_text()).get("build_version") == BUILD_VERSION
    except ValueError:
        return False


def ensure_demo_model(progress: ProgressFn | None = None, recipe: DemoRecipe = DemoRecipe()) -> Path:
    """Returns the demo model folder, building it first if this machine has none yet."""
    target = demo_model_dir()
    if is_built(target):
        return target
    report = progress or (lambda phase, fraction: None)
    return build_in_place(target, lambda staging: build_demo_model(staging, report, recipe))


def build_in_place(target: Path, build: Callable[[Path], None]) -> Path:
    """Builds a model folder beside ``target`` and renames it into place: a half-built model is never
    seen as built."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=target.parent))
    try:
        build(staging)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)  # atomic
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def ensure_for_start(report: Callable[[StartProgress], None]) -> Path:
    """:func:`ensure_demo_model` as part of an engine start, on the start's own thread (never the
    window's): its progress is the start's phase "model"."""
    return ensure_demo_model(lambda label, fraction: report(progress_for("model", label, fraction)))


def model_for_start(model: str, report: Callable[[StartProgress], None]) -> str:
    """The model a start runs: the demo model's folder where ``model`` names the demo (built first where
    this machine has none, see :func:`ensure_for_start`), the vision demo's for ``demo-vl``, else ``model``
    as given."""
    if model == DEMO_VL_MODEL:
        from workbench.engine.demo_vl_model import ensure_demo_vl_model

        return str(ensure_demo_vl_model(lambda label, fraction: report(progress_for("model", label, fraction))))
    return str(ensure_for_start(report)) if is_demo_model(model) else model


def chat_texts() -> list[str]:
    prompts = system_prompts()
    texts = []
    for question, answer in dialogues():
        for system in prompts:
            texts.append(
                f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{question}<|im_end|>\n"
                f"<|im_start|>assistant\n{answer}<|im_end|>\n"
            )
    return texts


def build_tokenizer(texts: list[str], recipe: DemoRecipe):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=recipe.vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        chat_template=CHAT_TEMPLATE,
        model_max_length=recipe.max_positions,
    )


def build_model(tokenizer, recipe: DemoRecipe):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(recipe.seed)
    config = Qwen2Config(
        vocab_size=recipe.vocab_size,
        hidden_size=recipe.hidden_size,
        intermediate_size=recipe.intermediate_size,
        num_hidden_layers=recipe.num_layers,
        num_attention_heads=recipe.num_heads,
        num_key_value_heads=recipe.num_kv_heads,
        max_position_embeddings=recipe.max_positions,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
    )
    return Qwen2ForCausalLM(config)


def train(model, tokenizer, texts: list[str], recipe: DemoRecipe, report: ProgressFn) -> float:
    """Trains on whole chat samples until the loss target or the time budget; returns the last loss."""
    import torch

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    encoded = [tokenizer(t)["input_ids"][: recipe.seq_len] for t in texts]
    pad_id = tokenizer.pad_token_id
    rng = random.Random(recipe.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe.learning_rate, weight_decay=0.0)
    model.train()
    started = time.monotonic()
    loss_value, smoothed = float("inf"), None
    for step in range(recipe.max_steps):
        batch = rng.sample(encoded, min(recipe.batch_size, len(encoded)))
        width = max(len(ids) for ids in batch)
        input_ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
        labels = torch.full((len(batch), width), -100, dtype=torch.long)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = torch.tensor(ids)
            labels[row, : len(ids)] = torch.tensor(ids)
        loss = model(input_ids=input_ids, attention_mask=(labels != -100).long(), labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss_value = loss.item()
        smoothed = loss_value if smoothed is None else 0.9 * smoothed + 0.1 * loss_value
        elapsed = time.monotonic() - started
        fraction = max(step / recipe.max_steps, elapsed / recipe.time_budget_s)
        if step % 10 == 0:
            report(f"Training the demo model (loss {smoothed:.2f})", 0.1 + 0.85 * min(fraction, 1.0))
        if smoothed < recipe.target_loss or elapsed > recipe.time_budget_s:
            break
    model.eval()
    return smoothed if smoothed is not None else loss_value


def build_demo_model(folder: Path, report: ProgressFn, recipe: DemoRecipe = DemoRecipe()) -> None:
    from transformers import GenerationConfig

    report("Training the demo tokenizer", 0.02)
    texts = chat_texts()
    tokenizer = build_tokenizer(texts, recipe)
    report("Creating the demo model", 0.08)
    model = build_model(tokenizer, recipe)
    loss = train(model, tokenizer, texts, recipe, report)
    report("Saving the demo model", 0.97)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    GenerationConfig(
        bos_token_id=model.config.bos_token_id,
        eos_token_id=model.config.eos_token_id,
        pad_token_id=model.config.pad_token_id,
    ).save_pretrained(folder)
    (folder / "workbench-demo.json").write_text(
        json.dumps({"build_version": BUILD_VERSION, "final_loss": round(loss, 4), "recipe": recipe.__dict__})
    )
    report("Demo model ready", 1.0)
