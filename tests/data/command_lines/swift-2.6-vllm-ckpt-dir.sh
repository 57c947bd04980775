# Source: github.com/modelscope/ms-swift, tag v2.6.1 (commit ab38bff0387a86fd9f068246c326ee7b0d5ed139), docs/source_en/LLM/VLLM-inference-acceleration-and-deployment.md, "Fine-tuned Models" (Evaluate using dataset), its trailing backslash as printed
# Evaluate using dataset
CUDA_VISIBLE_DEVICES=0 swift infer \
    --ckpt_dir 'xxx/vx-xxx/checkpoint-xxx-merged' \
    --infer_backend vllm \
    --load_dataset_config true \
