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
    "vllm_reasoning_parser": KEPT, "rope_scaling": KEPT, "device_map": KEPT, "quant_bits": KEPT,
    "load_data_args": KEPT, "val_dataset_shuffle": KEPT, "dataset_shuffle": KEPT,
    "columns": KEPT,  # JSON: the dataset's column -> the name ms-swift's preprocessor reads (query, response, ...)
    # ms-swift's own max_model_len scales RoPE (a model argument); vLLM's is --vllm_max_model_len
    "max_model_len": KEPT,
}
# Options an earlier ms-swift release had under another name: old name -> (today's name, the release that
# renamed it, the last release that still took the old name). Sources, in github.com/modelscope/ms-swift:
# - 3.0.0: tag v3.0.0 (commit 6a34e967), docs/source_en/Instruction/ReleaseNote3.0.md, "Parameter Differences";
#   the 2.x names as in tag v2.6.1 (ab38bff0), swift/llm/utils/argument.py (InferArguments). --ckpt_dir stayed
#   (swift/llm/argument/base_args/base_args.py, CompatArguments) until tag v4.0.0.
# - 3.7.0: commit c3fbbb25 "Refactor vllm args (#5035)", swift/trainers/arguments.py (VllmArguments): vLLM's
#   options took the vllm_ prefix; six old names were still taken "for compatibility" until commit f562d738
#   "[deploy] support vllm_engine_kwargs (#6249)", first in tag v3.10.0.
V2_LAST, V3_7_COMPAT_LAST, V3_6_LAST = "2.6.1", "3.9.3", "3.6.4"
OLD_NAMES = {
    "model_id_or_path": ("model", "3.0.0", V2_LAST),
    "template_type": ("template", "3.0.0", V2_LAST),
    "quantization_bit": ("quant_bits", "3.0.0", V2_LAST),
    "dtype": ("torch_dtype", "3.0.0", V2_LAST),
    "use_flash_attn": ("attn_impl", "3.0.0", V2_LAST),
    "ckpt_dir": ("adapters", "3.0.0", "3.12.6"),  # 3.x: a folder without adapter_config.json went to --model
    "load_dataset_config": ("load_data_args", "3.0.0", "3.4.0"),
    "gpu_memory_utilization": ("vllm_gpu_memory_utilization", "3.7.0", V3_7_COMPAT_LAST),
    "tensor_parallel_size": ("vllm_tensor_parallel_size", "3.7.0", V3_7_COMPAT_LAST),
    "limit_mm_per_prompt": ("vllm_limit_mm_per_prompt", "3.7.0", V3_7_COMPAT_LAST),
    "data_parallel_size": ("vllm_data_parallel_size", "3.7.0", V3_7_COMPAT_LAST),
    "use_async_engine": ("vllm_use_async_engine", "3.7.0", V3_7_COMPAT_LAST),
    "pipeline_parallel_size": ("vllm_pipeline_parallel_size", "3.7.0", V3_6_LAST),
    "max_num_seqs": ("vllm_max_num_seqs", "3.7.0", V3_6_LAST),
    "enforce_eager": ("vllm_enforce_eager", "3.7.0", V3_6_LAST),
    "disable_custom_all_reduce": ("vllm_disable_custom_all_reduce", "3.7.0", V3_6_LAST),
    "enable_prefix_caching": ("vllm_enable_prefix_caching", "3.7.0", V3_6_LAST),
}
# Values an old name took that today's name spells otherwise (2.x --dtype bf16 is --torch_dtype bfloat16;
# 2.x --use_flash_attn false loaded the model with eager attention: swift/llm/utils/model.py at v2.6.1).
OLD_VALUES = {
    "dtype": {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "auto": None},
    "use_flash_attn": {"true": "flash_attn", "false": "eager"},
}
# Spellings no ``swift infer`` of a release before the one named takes: a line that has one is written for that
# release or later (before 3.7.0 only ms-swift's GRPO training had --vllm_ options).
NEW_SINCE = {"model": "3.0.0", "adapters": "3.0.0", "template": "3.0.0", "quant_bits": "3.0.0",
             "torch_dtype": "3.0.0", "attn_impl": "3.0.0", ENGINE_KWARGS: "3.10.0",
             **{new: "3.7.0" for new, renamed, _ in OLD_NAMES.values() if renamed == "3.7.0"},
             "vllm_max_model_len": "3.7.0"}
# ms-swift 2.x options that 3.0.0 removed (ReleaseNote3.0.md), with what to write today.
REMOVED = {
    "do_sample": ("3.0.0", "--temperature 0 for greedy decoding, a higher --temperature to sample"),
    "eval_human": ("3.0.0", "nothing: without --val_dataset, swift infer asks at the terminal"),
    "vllm_enable_lora": ("3.0.0", "--adapters DIR, which turns vLLM's LoRA on"),
    "show_dataset_sample": ("3.0.0", "--val_dataset_sample N (or --val_dataset data.jsonl#N)"),
}
# --max_model_len: vLLM's max_model_len before ms-swift 3.10.0 (from 3.7.0 also ms-swift's own model length,
# commit d173ce79 "Fix rope-scaling (#5155)", swift/llm/argument/base_args/model_args.py); from 3.10.0 only
# ms-swift's model length (the RoPE scaling factor, max_position_embeddings), vLLM's being --vllm_max_model_len.
MODEL_LEN_VLLM_UNTIL = "3.10.0"
# --val_dataset data.jsonl#N: the first N rows from 3.5.0 (--val_dataset_shuffle false by default: commit
# db6e0cf1 "fix val_dataset_shuffle (#4226)", swift/llm/infer/infer.py); N rows at random before. --dataset
# X#N samples at random unless --dataset_shuffle false (docs/source_en/Instruction/Command-line-parameters.md).
FIRST_ROWS_SINCE = "3.5.0"
# ms-swift options that act only with another backend: on a --infer_backend vllm line they do nothing.
OTHER_BACKEND_ONLY = {
    "max_batch_size": "ms-swift's max_batch_size sets the batch of its transformers backend only and does nothing "
                      "with --infer_backend vllm; the nearest vLLM option is --vllm_max_num_seqs",
}
# ms-swift's image size environment variables (its templates read them with get_env_args('max_pixels', ...)
# and resize each image with smart_resize before the engine sees it, as qwen_vl_utils' fetch_image does)
# -> the key of vLLM's mm_processor_kwargs that bounds an image the same way.
PIXEL_VARIABLES = {"MIN_PIXELS": "min_pixels", "MAX_PIXELS": "max_pixels"}
# Sampling settings by ms-swift's name -> the workbench's SamplingSettings field.
SAMPLING_NAMES = {"max_new_tokens": "max_tokens", "temperature": "temperature", "top_k": "top_k", "top_p": "top_p",
                  "seed": "seed"}
