# Source: github.com/vllm-project/vllm@04454610d149a7c016dcf1aec115ceb03345f463 docs/serving/openai_compatible_server.md (the first command), copied verbatim
vllm serve NousResearch/Meta-Llama-3-8B-Instruct \
  --dtype auto \
  --api-key token-abc123
