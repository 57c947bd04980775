# Source: github.com/vllm-project/recipes@8959cf64189c71d36e11c6a30335f923f261b1f7 OpenAI/GPT-OSS.md (lines 29-33), copied verbatim
docker run --gpus all \
    -p 8000:8000 \
    --ipc=host \
    vllm/vllm-openai \
    --model openai/gpt-oss-20b
