"""Smoke test of the vision-language demo model on vLLM: images through ``llm.chat`` and ``llm.generate``.

Builds the model (:mod:`workbench.engine.demo_vl_model`) into a temporary folder, starts ``vllm.LLM`` on
it and sends one image, then two, as OpenAI-style ``image_url`` parts with ``data:`` URLs, and one
image as ``multi_modal_data``; then the same image again, to see the prefix cache hit. Prints, for
each request, the prompt's token count, how many of those are image tokens, the cached tokens and
the reply, and the load time and memory.

    python -m workbench.bench.vl_smoke [--architecture qwen2-vl|idefics3] [--max-pixels N]
        [--backend pil|torchvision] [--keep DIR]
"""
from __future__ import annotations

import argparse
import base64
import io
import os
import shutil
import tempfile
import time
from pathlib import Path

from workbench.engine.demo_vl_model import IDEFICS3, QWEN2_VL, DemoVLRecipe, build_demo_vl_model


def test_image(width: int, height: int, seed: int):
    """A deterministic picture: colour bands and a grid, so two seeds give two different images."""
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (width, height), ((seed * 70) % 256, 90, (255 - seed * 50) % 256))
    draw = ImageDraw.Draw(image)
    for x in range(0, width, 32):
        draw.line([(x, 0), (x, height)], fill=(255, 255, (seed * 30) % 256), width=3)
    draw.ellipse([width // 4, height // 4, 3 * width // 4, 3 * height // 4], fill=(20, 200, 60))
    return image


def data_url(image) -> str:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def chat_messages(images, question: str) -> list[dict]:
    parts = [{"type": "image_url", "image_url": {"url": data_url(image)}} for image in images]
    return [{"role": "user", "content": parts + [{"type": "text", "text": question}]}]


def describe(label: str, output, image_token_id: int, seconds: float) -> None:
    ids = output.prompt_token_ids or []
    image_tokens = sum(1 for token in ids if token == image_token_id)
    reply = output.outputs[0]
    print(f"[{label}] prompt tokens {len(ids)}, image tokens {image_tokens}, "
          f"cached tokens {output.num_cached_tokens}, generated {len(reply.token_ids)}, "
          f"{seconds:.2f} s", flush=True)
    print(f"[{label}] reply {reply.text!r}", flush=True)


def resident_bytes() -> int:
    """Resident memory of this process and its children (the engine core runs in a child)."""
    import psutil

    me = psutil.Process()
    total = me.memory_info().rss
    for child in me.children(recursive=True):
        try:
            total += child.memory_info().rss
        except psutil.Error:
            continue
    return total


def versions() -> str:
    """What the image path runs on: torchvision (and whether its C++ ops loaded), vLLM, transformers."""
    import transformers
    import vllm

    try:
        import torchvision

        vision = f"torchvision {torchvision.__version__} (C++ ops {torchvision.extension._has_ops()})"
    except Exception as exc:  # not installed, or a build that does not import beside this torch
        vision = f"no torchvision ({type(exc).__name__}: {exc})"
    return f"vllm {vllm.__version__}, transformers {transformers.__version__}, {vision}"


def hf_processor(folder: Path, mm_kwargs: dict):
    """The processor as vLLM loads it: its class's ``from_pretrained`` with the ``mm_processor_kwargs``
    (``Qwen2VLProcessor`` or ``Idefics3Processor``, which AutoProcessor resolves from the folder)."""
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(str(folder), **mm_kwargs)


def run(folder: Path, recipe: DemoVLRecipe, backend: str | None) -> None:
    import json

    from vllm import LLM, SamplingParams

    print(f"[versions] {versions()}", flush=True)
    qwen = recipe.architecture == QWEN2_VL
    mm_kwargs = ({"max_pixels": recipe.max_pixels} if qwen else {}) | ({"backend": backend} if backend else {})
    try:
        processor = hf_processor(folder, mm_kwargs)
        print(f"[processor] {type(processor).__name__}: image {type(processor.image_processor).__name__}, "
              f"video {type(getattr(processor, 'video_processor', None)).__name__}", flush=True)
        sizes = [(480, 640), (500, 300), (1080, 1920), (28, 28), (4000, 3000)]  # (height, width)
        counts = processor._get_num_multimodal_tokens(image_sizes=sizes, **mm_kwargs)
        print("[placeholder tokens per image, processor count] " + ", ".join(
            f"{w}x{h}: {n}" for (h, w), n in zip(sizes, counts["num_image_tokens"])), flush=True)
    except Exception as exc:  # vLLM's own attempt, next, shows how it fails there
        print(f"[processor] not loaded: {type(exc).__name__}: {exc}", flush=True)
    image_token_id = json.loads((folder / "config.json").read_text())["image_token_id"]
    started = time.monotonic()
    llm = LLM(
        model=str(folder),
        max_model_len=2048,
        max_num_seqs=4,
        block_size=32,
        enforce_eager=True,
        enable_prefix_caching=True,
        kv_cache_memory_bytes=1 << 28,
        limit_mm_per_prompt={"image": 2, "video": 0} if qwen else {"image": 2},
        mm_processor_kwargs=mm_kwargs,
        disable_log_stats=False,
        seed=0,
    )
    print(f"[load] {time.monotonic() - started:.1f} s, resident {resident_bytes() / 2**20:.0f} MiB",
          flush=True)
    params = SamplingParams(max_tokens=8, temperature=0.0)
    red, blue = test_image(640, 480, 1), test_image(300, 500, 2)

    def timed(label, call):
        begun = time.monotonic()
        output = call()[0]
        describe(label, output, image_token_id, time.monotonic() - begun)
        return output

    timed("chat, one image", lambda: llm.chat(chat_messages([red], "What is in the picture?"), params))
    timed("chat, two images", lambda: llm.chat(chat_messages([red, blue], "Compare the pictures."), params))
    timed("chat, one image again", lambda: llm.chat(chat_messages([red], "What is in the picture?"), params))
    tokenizer = llm.get_tokenizer()
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Describe it."}]}],
        tokenize=False, add_generation_prompt=True,
    )
    print(f"[generate] prompt {prompt!r}", flush=True)
    request = {"prompt": prompt, "multi_modal_data": {"image": blue}}
    timed("generate, one image", lambda: llm.generate(request, params))
    timed("generate, same image again", lambda: llm.generate(request, params))
    other = {"prompt": prompt, "multi_modal_data": {"image": test_image(300, 500, 3)}}
    timed("generate, another image, same size", lambda: llm.generate(other, params))
    print(f"[end] resident {resident_bytes() / 2**20:.0f} MiB", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--architecture", choices=[QWEN2_VL, IDEFICS3], default=QWEN2_VL)
    parser.add_argument("--max-pixels", type=int, default=DemoVLRecipe.max_pixels)
    parser.add_argument("--backend", choices=["pil", "torchvision"],
                        help="transformers' image processor backend (default: its own choice)")
    parser.add_argument("--keep", type=Path, help="build the model here and keep it")
    args = parser.parse_args(argv)
    os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "spawn")
    folder = args.keep or Path(tempfile.mkdtemp(prefix="demo-vl-"))
    try:
        begun = time.monotonic()
        recipe = DemoVLRecipe(architecture=args.architecture, max_pixels=args.max_pixels)
        build_demo_vl_model(folder, recipe)
        print(f"[build] {recipe.architecture} in {folder}, {time.monotonic() - begun:.1f} s", flush=True)
        run(folder, recipe, args.backend)
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
