"""On the GPU machine: the config-only Qwen2.5-VL-3B shape through plain vLLM with image prompts.

Prints vLLM's version, the input processor's names in this version (for the engine layer's reading of the
processed request), the image tokens a 640 x 480 picture takes, and a quick rate over 64 image requests.
    python3 packaging/gpu_vl_check.py OUT_DIR
"""
import inspect
import json
import sys
import time
from pathlib import Path


def main(out: Path) -> None:
    import vllm
    from vllm import LLM, SamplingParams
    from vllm.v1.engine.llm_engine import LLMEngine

    from workbench.bench.image_compare import ImageWorkload, image_requests, plain_prompt
    from workbench.bench.vl_shape import write_vl_shape
    from workbench.engine.images import to_rgb
    from workbench.engine.sampling import SamplingSettings

    facts = {"vllm": vllm.__version__, "add_request": str(inspect.signature(LLMEngine.add_request))}
    folder = write_vl_shape(out / "vl3b")
    llm = LLM(model=str(folder), load_format="dummy", limit_mm_per_prompt={"image": 1}, max_model_len=4096,
              gpu_memory_utilization=0.5, max_num_seqs=256)
    engine = llm.llm_engine
    facts["engine_attrs"] = sorted(a for a in vars(engine) if "process" in a or "render" in a)
    tokenizer = llm.get_tokenizer()
    requests = image_requests(ImageWorkload(64, 64), 1, "check", SamplingSettings())
    prompts = [{"prompt": plain_prompt(tokenizer, r), "multi_modal_data": {"image": [to_rgb(i) for m in r.messages for i in m.images]}}
               for r in requests]
    params = SamplingParams(max_tokens=64, ignore_eos=True, temperature=0.0)
    llm.generate(prompts[:4], params)
    started = time.perf_counter()
    outputs = llm.generate(prompts, params)
    elapsed = time.perf_counter() - started
    facts["prompt_tokens"] = len(outputs[0].prompt_token_ids)
    facts["output_tok_s"] = sum(len(o.outputs[0].token_ids) for o in outputs) / elapsed
    processor = getattr(engine, "input_processor", None) or getattr(engine, "processor", None)
    facts["processor"] = type(processor).__name__ if processor is not None else None
    if processor is not None:
        facts["process_inputs"] = str(inspect.signature(processor.process_inputs))
        tasks = ("generate",)  # 0.26 asks for the supported tasks
        request = processor.process_inputs("x", prompts[0], params, tasks)
        request = request[-1] if isinstance(request, tuple) else request
        facts["request_type"] = type(request).__name__
        features = getattr(request, "mm_features", None) or []
        facts["mm_features"] = [{k: str(getattr(f, k, None)) for k in ("identifier", "mm_position", "modality", "mm_hash")}
                                for f in features]
    print(json.dumps(facts, indent=1))
    (out / "facts.json").write_text(json.dumps(facts, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
