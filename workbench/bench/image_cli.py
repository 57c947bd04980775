"""``bench images``: image requests through the app (its window offscreen) against plain vLLM on one engine.

    vllm-workbench bench --gpu-memory-utilization 0.85 --max-model-len 4096 images --shape qwen2.5-vl-3b \\
        --requests 256 --output-len 128 --repeats 6 --out DIR          (the H200: dummy weights)
    vllm-workbench bench --max-num-seqs 16 images --requests 16 --output-len 16 --repeats 2 --out DIR
                                                                         (the CPU: the demo VL model)
"""
from __future__ import annotations

import json
from pathlib import Path

from workbench.engine.spec import EngineConfig


def add_parser(sub) -> None:
    images = sub.add_parser("images", help="image requests: the app against plain vLLM, and the GUI's stalls (needs Qt)")
    images.add_argument("--shape", choices=["qwen2.5-vl-3b"],
                        help="a config-only Qwen2.5-VL-3B, dummy weights (default: the demo VL model)")
    images.add_argument("--max-pixels", type=int, default=1003520, help="the image processor's max_pixels (--shape)")
    images.add_argument("--requests", type=int, default=256)
    images.add_argument("--output-len", type=int, default=128)
    images.add_argument("--width", type=int, default=640)
    images.add_argument("--height", type=int, default=480)
    images.add_argument("--repeats", type=int, default=6)
    images.add_argument("--client", choices=("process", "thread"), default=None)
    images.add_argument("--out", default="bench-images", help="folder for images.md and images.json")


def image_config(args) -> EngineConfig:
    """The engine the comparison shares: one image a prompt, the main parser's budgets."""
    extra = {"limit_mm_per_prompt": {"image": 1}}
    if args.shape:
        from workbench.bench.vl_shape import write_vl_shape

        model = str(write_vl_shape(max_pixels=args.max_pixels))
        extra["load_format"] = "dummy"
    else:
        from workbench.engine.demo_vl_model import DemoVLRecipe, IDEFICS3, build_demo_vl_model
        import tempfile

        model = tempfile.mkdtemp(prefix="demo-vl-")
        build_demo_vl_model(Path(model), DemoVLRecipe(architecture=IDEFICS3))
    overrides = {"gpu_memory_utilization": args.gpu_memory_utilization} if args.gpu_memory_utilization else {}
    return EngineConfig(model=model, max_model_len=args.max_model_len, max_num_seqs=args.max_num_seqs,
                        extra=tuple(sorted(extra.items())), **overrides)


def cmd_images(args) -> int:
    from workbench.bench.gui.image_app_path import run_image_comparison
    from workbench.bench.image_compare import ImageWorkload, summary

    workload = ImageWorkload(args.requests, args.output_len, args.width, args.height, args.repeats)
    result = run_image_comparison(image_config(args), workload, args.client)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    text = summary(result)
    (out / "images.md").write_text(text + "\n", encoding="utf-8")
    runs = {key: [{"tokens_per_s": r.tokens_per_s, "output_tokens": r.output_tokens, "elapsed_s": r.elapsed_s,
                   "client_cpu_s": r.client_cpu_s, "engine_cpu_s": r.engine_cpu_s} for r in value]
            for key, value in result.runs.items()}
    (out / "images.json").write_text(json.dumps({"workload": vars(workload), "runs": runs, "stalls": result.stalls,
                                                 "pair_ratios": result.pair_ratios(), "environment": result.environment,
                                                 "image_tokens": result.image_tokens}, indent=1, default=str))
    print("\n" + text, flush=True)
    return 0
