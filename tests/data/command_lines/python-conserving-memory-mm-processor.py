# vllm-project/vllm 009eec3b2b00e1b8afb4bcafb58e9403b2aa1ada docs/configuration/conserving_memory.md, "Multi-modal processor arguments" (Apache-2.0)
from vllm import LLM

# Available for Qwen2-VL series models
llm = LLM(
    model="Qwen/Qwen2.5-VL-3B-Instruct",
    mm_processor_kwargs={"max_pixels": 768 * 768},  # Default is 1280 * 28 * 28
)

# Available for InternVL series models
llm = LLM(
    model="OpenGVLab/InternVL2-2B",
    mm_processor_kwargs={"max_dynamic_patch": 4},  # Default is 12
)
