"""Options that a vLLM release removed or renamed, with the release and today's spelling, so that a
command line written for an older vLLM gets a message that says what to write now.

Source: ``docs/vllm-option-history.md`` (the first of 39 sampled releases, 0.5.5 to 0.34.0, whose
``vllm/engine/arg_utils.py`` and ``vllm/entrypoints`` no longer hold the flag).
"""
from __future__ import annotations

import re

# dest (the flag without dashes, underscores) -> (the release that no longer has it, what to write now)
REMOVED = {
    "swap_space": ("0.18", "nothing: the engine preempts by recomputing; KV blocks in CPU memory: "
                           "--kv-offloading-size; weights: --cpu-offload-gb"),
    "task": ("0.13", "--runner pooling (with --convert embed / classify / reward) or --runner generate"),
    "speculative_model": ("0.8.5", "--speculative-config '{\"model\": \"...\", \"num_speculative_tokens\": 5}'"),
    "num_speculative_tokens": ("0.8.5", "--speculative-config.num_speculative_tokens N"),
    "ngram_prompt_lookup_max": ("0.8.5", "--speculative-config '{\"method\": \"ngram\", \"prompt_lookup_max\": 4}'"),
    "ngram_prompt_lookup_min": ("0.8.5", "--speculative-config.prompt_lookup_min N"),
    "speculative_draft_tensor_parallel_size": ("0.8.5", "--speculative-config.draft_tensor_parallel_size N"),
    "use_v2_block_manager": ("0.10", "nothing: the block manager it chose is the only one"),
    "disable_log_requests": ("0.17", "nothing: requests are not logged unless --enable-log-requests"),
    "preemption_mode": ("0.11", "nothing: the engine preempts by recomputing"),
    "worker_use_ray": ("0.7", "--distributed-executor-backend ray"),
    "num_lookahead_slots": ("0.12", "nothing"),
    "max_seq_len_to_capture": ("0.11", "--compilation-config.max_cudagraph_capture_size N"),
    "guided_decoding_backend": ("0.12", "--structured-outputs-config.backend NAME"),
    "rope_scaling": ("0.11.1", "--hf-overrides '{\"rope_scaling\": {...}}'"),
    "rope_theta": ("0.11.1", "--hf-overrides '{\"rope_theta\": ...}'"),
    "override_neuron_config": ("0.10.2", "nothing"),
    "tokenizer_pool_size": ("0.10", "nothing"),
    "tokenizer_pool_type": ("0.10", "nothing"),
    "disable_async_output_proc": ("0.11", "nothing"),
    "scheduler_delay_factor": ("0.11", "nothing"),
    "multi_step_stream_outputs": ("0.10.1", "nothing"),
    "num_scheduler_steps": ("0.10.1", "nothing"),
    "device": ("0.10", "nothing: the platform is found by the vLLM build installed"),
}
OLD_LIMIT_FORM = re.compile(r"^\w+=\d+(,\w+=\d+)*$")  # --limit-mm-per-prompt image=2,video=1


def removed_note(dest: str, written_for: str | None = None) -> str | None:
    """Why ``dest`` is no option here: the release that removed it and what to write now; None when no
    release had it. ``written_for``: the vLLM version the command names (a container image's tag)."""
    if dest not in REMOVED:
        return None
    release, now = REMOVED[dest]
    had = ""
    if written_for and _version(written_for) < _version(release):
        had = f"vLLM {written_for}, which the command names, has it; "
    return f"{had}vLLM {release} removed this option (the vLLM here has no such option); today: {now}"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])
