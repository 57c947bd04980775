"""The Hugging Face Hub: find a model, size it up before a byte of weights moves, download what vLLM
needs into the standard cache, list and delete what is there. No Qt; ``huggingface_hub`` does the
talking (``HF_ENDPOINT``, ``HF_HUB_OFFLINE``, ``HF_HOME`` and its token are honoured as it honours them).
"""
