# Source: github.com/vllm-project/vllm@00620f91ea186ca295a1eb69f4acba9d0efaaaaa docs/configuration/optimization.md ("Parallel Processing"), copied verbatim
# Run 4 API processes and 1 engine core process
vllm serve Qwen/Qwen2.5-VL-3B-Instruct --api-server-count 4

# Run 4 API processes and 2 engine core processes
vllm serve Qwen/Qwen2.5-VL-3B-Instruct --api-server-count 4 -dp 2
