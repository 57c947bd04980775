# Source: github.com/vllm-project/recipes@8959cf64189c71d36e11c6a30335f923f261b1f7 OpenAI/GPT-OSS.md (lines 154-161), copied verbatim
# Example deployment on 8xH100
vllm serve openai/gpt-oss-120b \
  --tensor_parallel_size 8 \
  --max-model-len 131072 \
  --max-num-batched-tokens 10240 \
  --max-num-seqs 128 \
  --gpu-memory-utilization 0.85 \
  --no-enable-prefix-caching
