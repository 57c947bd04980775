# Source: github.com/vllm-project/recipes@8959cf64189c71d36e11c6a30335f923f261b1f7 moonshotai/Kimi-K2.md (lines 29-30), copied verbatim
# node 0:
vllm serve moonshotai/Kimi-K2-Instruct --trust-remote-code --tokenizer-mode auto --tensor-parallel-size 8 --pipeline-parallel-size 2 --dtype bfloat16 --quantization fp8 --max-model-len 2048 --max-num-seqs 1 --max-num-batched-tokens 1024 --enable-chunked-prefill --disable-log-requests --kv-cache-dtype fp8 -dcp 8
