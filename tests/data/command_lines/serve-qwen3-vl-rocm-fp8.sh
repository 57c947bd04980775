# Source: github.com/vllm-project/recipes@8959cf64189c71d36e11c6a30335f923f261b1f7 Qwen/Qwen3-VL.md (lines 221-228), copied verbatim
MIOPEN_USER_DB_PATH="$(pwd)/miopen" \
MIOPEN_FIND_MODE=FAST \
VLLM_USE_V1=1 \
VLLM_ROCM_USE_AITER=1 \
SAFETENSORS_FAST_GPU=1 \
vllm serve Qwen/Qwen3-VL-235B-A22B-Instruct-FP8 \
--tensor-parallel  4 \
--mm-encoder-tp-mode "data" 
