# Source: github.com/vllm-project/vllm@04454610d149a7c016dcf1aec115ceb03345f463 docs/serving/openai_compatible_server.md ("Multi-modal inputs", VLM2Vec), copied verbatim
vllm serve TIGER-Lab/VLM2Vec-Full --task embed \
  --trust-remote-code \
  --max-model-len 4096 \
  --chat-template examples/template_vlm2vec.jinja
