# Source: github.com/vllm-project/recipes@8959cf64189c71d36e11c6a30335f923f261b1f7 DeepSeek/DeepSeek-V3_2.md (lines 34-39), copied verbatim
  vllm serve deepseek-ai/DeepSeek-V3.2 \
   --tensor-parallel-size 8 \
   --tokenizer-mode deepseek_v32 \
   --tool-call-parser deepseek_v32 \
   --enable-auto-tool-choice \
   --reasoning-parser deepseek_v3
