# Source: github.com/vllm-project/vllm@01388347a26cebe6c66c85f4dbcaf9e2d508c423 docs/features/multimodal_inputs.md ("Custom RGBA Background Color"), copied verbatim
# Example: Black background for dark theme
vllm serve llava-hf/llava-1.5-7b-hf \
  --media-io-kwargs '{"image": {"rgba_background_color": [0, 0, 0]}}'

# Example: Custom gray background
vllm serve llava-hf/llava-1.5-7b-hf \
  --media-io-kwargs '{"image": {"rgba_background_color": [128, 128, 128]}}'
