# Source: github.com/modelscope/ms-swift, tag v2.6.1 (commit ab38bff0387a86fd9f068246c326ee7b0d5ed139), docs/source_en/LLM/VLLM-inference-acceleration-and-deployment.md, "Using CLI" (TP)
# 2 * 80GiB A100
RAY_memory_monitor_refresh_ms=0 CUDA_VISIBLE_DEVICES=0,1 swift infer \
    --model_type qwen2-72b-instruct --infer_backend vllm --max_model_len 2048 \
    --tensor_parallel_size 2
