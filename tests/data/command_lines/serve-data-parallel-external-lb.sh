# Source: github.com/vllm-project/vllm@01e4fce07423dafcc832600ba05159fb28dc1126 docs/serving/data_parallel_deployment.md ("External Load Balancing"), copied verbatim
# Rank 0
CUDA_VISIBLE_DEVICES=0 vllm serve $MODEL --data-parallel-size 2 --data-parallel-rank 0 \
                                         --port 8000
# Rank 1
CUDA_VISIBLE_DEVICES=1 vllm serve $MODEL --data-parallel-size 2 --data-parallel-rank 1 \
                                         --port 8001
