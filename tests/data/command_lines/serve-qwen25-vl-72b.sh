# Source: github.com/vllm-project/recipes@8959cf64189c71d36e11c6a30335f923f261b1f7 Qwen/Qwen2.5-VL.md (lines 43-50), copied verbatim
    # Start server with BF16 model on 4 GPUs using TP=4
    export CUDA_VISIBLE_DEVICES=0,1,2,3
    vllm serve Qwen/Qwen2.5-VL-72B-Instruct  \
      --host 0.0.0.0 \
      --port 8000 \
      --tensor-parallel-size 4 \
      --mm-encoder-tp-mode data \
      --limit-mm-per-prompt '{"image":2,"video":0}'
