# Source: github.com/modelscope/ms-swift, tag v2.6.1 (commit ab38bff0387a86fd9f068246c326ee7b0d5ed139), docs/source_en/Multi-Modal/vllm-inference-acceleration.md, "Using CLI" (batch inference on the dataset)
# Batch inference on the dataset
CUDA_VISIBLE_DEVICES=0 swift infer --model_type llava1_6-vicuna-7b-instruct --infer_backend vllm \
    --val_dataset coco-en-2-mini#100
