"""vLLM's own memory figures per worker: model weights and KV cache (vLLM 0.26 to 0.33).

``EngineCore.workbench_memory_split`` runs in the engine-core process (a utility call) and asks
every worker through ``model_executor.collective_rpc``. Read there: the model runner's
``model_memory_usage`` (what vLLM measured while loading the weights on a GPU, and logs as "Model
loading took ... GiB"; the CPU runner does not set it, so the loaded model's parameter bytes stand in),
the size of its KV cache tensors (``kv_cache_config.kv_cache_tensors[*].size`` of the scheduler, the
allocation every worker makes for its share) and ``num_blocks``.
"""
from __future__ import annotations

import os


def worker_memory(worker) -> dict:
    """Runs in each worker process: its pid, device and weight bytes."""
    runner = worker.model_runner
    weights = int(getattr(runner, "model_memory_usage", 0) or 0)
    source = "model_memory_usage"
    if weights <= 0:
        model = runner.get_model()
        weights = sum(p.numel() * p.element_size() for p in model.parameters())
        source = "parameters"
    device = getattr(runner, "device", None)
    return {"pid": os.getpid(), "device": str(device) if device is not None else "",
            "device_index": getattr(device, "index", None), "weights_bytes": int(weights), "weights_source": source}


def memory_split(self) -> dict:
    """Added to ``EngineCore``: each worker's weights, and the KV cache that each worker holds."""
    config = self.scheduler.kv_cache_config
    kv_bytes = sum(int(tensor.size) for tensor in config.kv_cache_tensors)
    workers = self.model_executor.collective_rpc(worker_memory)
    return {"workers": list(workers), "kv_cache_bytes_per_worker": kv_bytes, "num_blocks": int(config.num_blocks)}
