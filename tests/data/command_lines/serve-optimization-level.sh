# Source: github.com/vllm-project/vllm@0a8f95f9a41d041863f2f88f39747a231ca40915 docs/design/optimization_levels.md ("Level Summaries and Usage Examples"), copied verbatim
# CLI usage
vllm serve RedHatAI/Llama-3.2-1B-FP8 -O1
