"""The ms-swift ``swift infer`` options that the command-line import recognises, and where each goes.

Source: ms-swift's "Command Line Parameters" (``docs/source_en/Instruction/Command-line-parameters.md``
in github.com/modelscope/ms-swift, read at commit 3602360a, August 2026): the base, model, data,
generation, vLLM and inference arguments. Only those a ``swift infer --infer_backend vllm`` line
plausibly carries are listed; a flag that is in neither this table nor vLLM's ``EngineArgs`` is named
as a non-option.

ms-swift passes a vLLM engine argument to vLLM only under its ``vllm_`` spelling (the names in
:data:`VLLM_PREFIXED`) or inside ``--vllm_engine_kwargs '{...}'`` (JSON); any other vLLM option written
on a swift line does nothing there (ms-swift refuses arguments it does not know).
"""
from __future__ import annotations

# ms-swift's --vllm_<name> options: each is vLLM's engine argument <name>.
VLLM_PREFIXED = (
    "gpu_memory_utilization", "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size",
    "enable_expert_parallel", "max_num_seqs", "max_model_len", "disable_custom_all_reduce", "enforce_eager",
    "mm_processor_cache_gb", "speculative_config", "disable_cascade_attn", "limit_mm_per_prompt",
    "max_lora_rank", "quantization", "enable_prefix_caching",
)
ENGINE_KWARGS = "vllm_engine_kwargs"  # JSON: any other vLLM engine argument
# ms-swift's own options: where each one's value goes on an imported preset.
MODEL, BATCH_INPUT, SAMPLING, KEPT = "model", "batch input", "sampling", "kept"
SWIFT_OPTIONS = {
    "model": MODEL,
    "val_dataset": BATCH_INPUT, "dataset": BATCH_INPUT,
    "max_new_tokens": SAMPLING, "temperature": SAMPLING, "top_k": SAMPLING, "top_p": SAMPLING, "seed": SAMPLING,
    # kept with the preset's origin, for the next export; the workbench has no setting of its own for them
    "infer_backend": KEPT, "model_type": KEPT, "model_revision": KEPT, "torch_dtype": KEPT, "attn_impl": KEPT,
    "adapters": KEPT, "template": KEPT, "system": KEPT, "max_length": KEPT, "stream": KEPT, "stop_words": KEPT,
    "repetition_penalty": KEPT, "num_beams": KEPT, "result_path": KEPT, "write_batch_size": KEPT,
    "val_dataset_sample": KEPT, "use_hf": KEPT, "load_args": KEPT, "metric": KEPT, "vllm_use_async_engine": KEPT,
    "vllm_reasoning_parser": KEPT, "rope_scaling": KEPT, "device_map": KEPT,
    # ms-swift's own max_model_len scales RoPE (a model argument); vLLM's is --vllm_max_model_len
    "max_model_len": KEPT,
}
# Names older ms-swift releases had, and what the current one calls them.
RENAMED = {"use_flash_attn": "ms-swift 2 had --use_flash_attn; ms-swift 3 has --attn_impl flash_attn, for its "
                             "transformers backend only"}
# ms-swift options that act only with another backend: on a --infer_backend vllm line they do nothing.
OTHER_BACKEND_ONLY = {
    "max_batch_size": "ms-swift's max_batch_size sets the batch of its transformers backend only and does nothing "
                      "with --infer_backend vllm; the nearest vLLM option is --vllm_max_num_seqs",
}
# Sampling settings by ms-swift's name -> the workbench's SamplingSettings field.
SAMPLING_NAMES = {"max_new_tokens": "max_tokens", "temperature": "temperature", "top_k": "top_k", "top_p": "top_p",
                  "seed": "seed"}
