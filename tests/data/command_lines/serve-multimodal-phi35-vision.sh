# Source: github.com/vllm-project/vllm@01388347a26cebe6c66c85f4dbcaf9e2d508c423 docs/features/multimodal_inputs.md ("Image Inputs"), copied verbatim
vllm serve microsoft/Phi-3.5-vision-instruct --runner generate \
  --trust-remote-code --max-model-len 4096 --limit-mm-per-prompt '{"image":2}'
