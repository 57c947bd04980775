"""vLLM Workbench: run the real vLLM engine on your own machine and watch its paged KV cache."""

__version__ = "0.1.0"
