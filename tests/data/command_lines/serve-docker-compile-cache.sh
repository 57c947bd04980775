# Source: github.com/vllm-project/vllm@02319794a1415e663baaf6de2f8197f795bd8c03 docs/deployment/docker.md ("Persist the compile cache across containers"), copied verbatim
docker run --rm --gpus all \
    -v ~/.cache/huggingface:/root/.cache/huggingface \
    -v vllm-cache:/root/.cache/vllm \
    -p 8000:8000 \
    vllm/vllm-openai:latest \
    meta-llama/Llama-3.1-8B-Instruct
