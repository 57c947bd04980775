"""Real ``vllm serve`` and ``docker run`` lines, copied verbatim from vLLM's documentation and the
vllm-project/recipes guides into ``tests/data/command_lines/serve-*.sh`` (each file's first line names
the repository, the commit and the path it was copied from), imported as a user would paste them.

Every expectation below is written by hand from the line and vLLM's documentation of each option (the
``vllm serve --help`` text, ``vllm/engine/arg_utils.py`` of the vLLM installed, 0.32): what the field of
``EngineArgs`` gets. Nothing is computed by the importer's own parser at test time, so a test fails when
the import and vLLM disagree. The import keeps what a line sets and nothing else (vLLM's defaults are
left out); an option vLLM removed is reported with the release that removed it.

What vLLM reads, as its documentation says:
- ``-tp N`` / ``-dcp N``: ``--tensor-parallel-size`` / ``--decode-context-parallel-size``; ``-cc``:
  ``--compilation-config``; ``-O1``: ``--optimization-level 1``.
- ``--gpu_memory_utilization``, ``--default_mm_loras``: underscores are read as dashes.
- ``--speculative-config.method mtp``: a dotted option; those of one option merge into one JSON value,
  each value read as JSON (``1`` a number, ``True`` not JSON, so text, which vLLM's config then reads as
  a boolean).
- ``--served-model-name a``: a list (``nargs='+'``).
- ``--max-model-len`` / ``--max-num-batched-tokens``: whole numbers (``32k`` would be 32000).
- ``--host``, ``--port``, ``--api-key``, ``--chat-template``, ``--tool-call-parser``,
  ``--enable-auto-tool-choice``, ``--lora-modules``: the API server's options, not ``EngineArgs``
  fields; ``--reasoning-parser`` is an ``EngineArgs`` field.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from workbench.presets.command_in import ASK, VALUE, import_text
from preset_fixtures import config_folder  # noqa: F401  (fixture)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

LINES = Path(__file__).parent / "data" / "command_lines"
RECIPES = "github.com/vllm-project/recipes@8959cf64189c71d36e11c6a30335f923f261b1f7"


@dataclass
class Expected:
    model: str | None
    engine: dict = field(default_factory=dict)
    tables: dict = field(default_factory=dict)  # dict- and list-valued engine arguments
    server: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    removed: dict = field(default_factory=dict)  # flag -> what the message says (the release that removed it)
    asks: set = field(default_factory=set)  # words holding a value the text does not have
    bad_values: dict = field(default_factory=dict)  # flag -> what vLLM's parser says of the value
    secrets: list = field(default_factory=list)
    image: str | None = None  # a docker line's image:tag
    vllm_version: str | None = None


EXPECTED = {
    # --- vllm-project/recipes
    "serve-qwen3-235b-rocm.sh": Expected(
        "Qwen/Qwen3-235B-A22B",
        engine={"trust_remote_code": True, "tensor_parallel_size": 4, "distributed_executor_backend": "mp",
                "max_num_batched_tokens": 32768, "max_model_len": 32768, "enable_prefix_caching": False,
                "gpu_memory_utilization": 0.8},
        env={"HIP_VISIBLE_DEVICES": "4,5,6,7", "VLLM_USE_V1": "1", "VLLM_ROCM_USE_AITER": "1",
             "VLLM_ROCM_USE_AITER_MHA": "0", "VLLM_V1_USE_PREFILL_DECODE_ATTENTION": "1",
             "VLLM_USE_TRITON_FLASH_ATTN": "0", "SAFETENSORS_FAST_GPU": "1"},
        # the recipe predates both removals; vLLM 0.32 refuses both flags
        removed={"--disable-log-requests": "vLLM 0.17 removed", "--swap-space": "vLLM 0.18 removed"}),
    "serve-qwen3-next-mtp.sh": Expected(
        "Qwen/Qwen3-Next-80B-A3B-Instruct",
        engine={"tokenizer_mode": "auto", "gpu_memory_utilization": 0.8, "tensor_parallel_size": 4,
                "enable_chunked_prefill": False},
        tables={"speculative_config": {"method": "qwen3_next_mtp", "num_speculative_tokens": 2}}),
    "serve-qwen3-next-tuned-moe.sh": Expected(
        "Qwen/Qwen3-Next-80B-A3B-Instruct",
        engine={"tensor_parallel_size": 4},
        tables={"served_model_name": ["qwen3-next"]},
        env={"VLLM_TUNED_CONFIG_FOLDER": "your_moe_tuned_dir"}),
    "serve-qwen3-vl-fp8-ep.sh": Expected(
        "Qwen/Qwen3-VL-235B-A22B-Instruct-FP8",
        engine={"tensor_parallel_size": 8, "mm_encoder_tp_mode": "data", "enable_expert_parallel": True,
                "async_scheduling": True}),
    "serve-qwen3-vl-h100-fp8.sh": Expected(
        "Qwen/Qwen3-VL-235B-A22B-Instruct-FP8",
        engine={"tensor_parallel_size": 4, "async_scheduling": True, "gpu_memory_utilization": 0.95,
                "max_num_seqs": 128},
        tables={"limit_mm_per_prompt": {"video": 0}}),
    "serve-qwen25-vl-72b.sh": Expected(
        "Qwen/Qwen2.5-VL-72B-Instruct",
        engine={"tensor_parallel_size": 4, "mm_encoder_tp_mode": "data"},
        tables={"limit_mm_per_prompt": {"image": 2, "video": 0}},
        server={"host": "0.0.0.0", "port": 8000},
        env={"CUDA_VISIBLE_DEVICES": "0,1,2,3"}),
    "serve-qwen35-cpu-docker.sh": Expected(
        "Qwen/Qwen3.5-35B-A3B",
        server={"host": "0.0.0.0", "port": 8000},
        image="vllm/vllm-openai-cpu:latest-x86_64"),  # "latest-x86_64" names no vLLM release
    "serve-glm47-mtp.sh": Expected(
        "zai-org/GLM-4.7-FP8",
        engine={"tensor_parallel_size": 4, "reasoning_parser": "glm45"},
        tables={"speculative_config": {"method": "mtp", "num_speculative_tokens": 1}},
        server={"tool_call_parser": "glm47", "enable_auto_tool_choice": True}),
    "serve-gpt-oss-docker.sh": Expected("openai/gpt-oss-20b", image="vllm/vllm-openai:latest"),
    "serve-gpt-oss-rocm.sh": Expected(
        "openai/gpt-oss-120b",
        engine={"tensor_parallel_size": 8, "attention_backend": "ROCM_AITER_UNIFIED_ATTN",
                "gpu_memory_utilization": 0.95, "block_size": 64},
        # -cc.x=True: "True" is not JSON, so vLLM's parser passes the text on and CompilationConfig reads
        # it as a boolean; the field gets True
        tables={"compilation_config": {"pass_config": {"fuse_rope_kvcache": True},
                                       "use_inductor_graph_partition": True}},
        env={"HSA_NO_SCRATCH_RECLAIM": "1", "AMDGCN_USE_BUFFER_OPS": "0", "VLLM_ROCM_USE_AITER": "1",
             "VLLM_ROCM_QUICK_REDUCE_QUANTIZATION": "INT4"}),
    "serve-deepseek-r1-fp4.sh": Expected(
        "nvidia/DeepSeek-R1-FP4",
        engine={"trust_remote_code": True, "tensor_parallel_size": 4, "enable_expert_parallel": True},
        env={"CUDA_VISIBLE_DEVICES": "0,1,2,3"}),
    "serve-minimax-m27-docker.sh": Expected(
        "MiniMaxAI/MiniMax-M2.7",
        engine={"tensor_parallel_size": 4, "reasoning_parser": "minimax_m2", "trust_remote_code": True},
        server={"tool_call_parser": "minimax_m2", "enable_auto_tool_choice": True},
        # the recipe's pass (vLLM PR 37045) is newer than vLLM 0.32, whose PassConfig has no such field
        bad_values={"--compilation-config": "fuse_minimax_qk_norm"},
        image="vllm/vllm-openai:minimax27"),  # a tag that names no vLLM release
    "serve-llama33-config.sh": Expected(
        None,  # nvidia/Llama-3.3-70B-Instruct-$DTYPE: the text does not say what $DTYPE is
        engine={"tensor_parallel_size": 1},
        asks={"nvidia/Llama-3.3-70B-Instruct-$DTYPE", "--config"}),
    "serve-kimi-k2.sh": Expected(
        "moonshotai/Kimi-K2-Instruct",
        engine={"trust_remote_code": True, "tokenizer_mode": "auto", "tensor_parallel_size": 8,
                "pipeline_parallel_size": 2, "dtype": "bfloat16", "quantization": "fp8", "max_model_len": 2048,
                "max_num_seqs": 1, "max_num_batched_tokens": 1024, "enable_chunked_prefill": True,
                "kv_cache_dtype": "fp8", "decode_context_parallel_size": 8},
        removed={"--disable-log-requests": "vLLM 0.17 removed"}),
    "serve-kimi-k25-rocm-docker.sh": Expected(
        "moonshotai/Kimi-K2.5",
        # CacheConfig.block_size: an int greater than 0 (the recipe's ROCm AITER MLA runs with 1)
        engine={"tensor_parallel_size": 8, "mm_encoder_tp_mode": "data", "block_size": 1,
                "reasoning_parser": "kimi_k2", "enable_prefix_caching": True, "trust_remote_code": True},
        server={"tool_call_parser": "kimi_k2", "enable_auto_tool_choice": True},
        env={"VLLM_ROCM_USE_AITER": "1", "VLLM_ROCM_QUICK_REDUCE_QUANTIZATION": "INT4",
             "VLLM_ROCM_USE_AITER_RMSNORM": "0"},
        image="vllm/vllm-openai-rocm:latest"),
    "serve-kimi-k25-nvfp4.sh": Expected(
        "nvidia/Kimi-K2.5-NVFP4",
        engine={"tensor_parallel_size": 4, "mm_encoder_tp_mode": "data", "reasoning_parser": "kimi_k2",
                "trust_remote_code": True},
        # --compilation_config.pass_config.x: underscores before the first dot read as dashes; "true" is JSON
        tables={"compilation_config": {"pass_config": {"fuse_allreduce_rms": True}}},
        server={"tool_call_parser": "kimi_k2", "enable_auto_tool_choice": True},
        env={"VLLM_USE_FLASHINFER_MOE_FP4": "1"}),  # the export line above a blank line
    # --- vLLM's documentation
    "serve-docker-compile-cache.sh": Expected("meta-llama/Llama-3.1-8B-Instruct", image="vllm/vllm-openai:latest"),
    "serve-spec-decode-draft-model.sh": Expected(
        "facebook/opt-6.7b",
        engine={"seed": 42, "tensor_parallel_size": 1, "gpu_memory_utilization": 0.8},
        tables={"speculative_config": {"model": "facebook/opt-125m", "num_speculative_tokens": 5}},
        server={"host": "0.0.0.0", "port": 8000}),
    "serve-openai-server-api-key.sh": Expected(
        "NousResearch/Meta-Llama-3-8B-Instruct", engine={"dtype": "auto"}, secrets=["--api-key"]),
    "serve-openai-server-vlm2vec.sh": Expected(
        "TIGER-Lab/VLM2Vec-Full",
        engine={"trust_remote_code": True, "max_model_len": 4096},
        server={"chat_template": "examples/template_vlm2vec.jinja"},
        removed={"--task": "vLLM 0.13 removed"}),  # the docs of that commit still say --task embed
    "serve-multimodal-phi35-vision.sh": Expected(
        "microsoft/Phi-3.5-vision-instruct",
        engine={"runner": "generate", "trust_remote_code": True, "max_model_len": 4096},
        tables={"limit_mm_per_prompt": {"image": 2}}),
    "serve-optimization-level.sh": Expected("RedHatAI/Llama-3.2-1B-FP8", engine={"optimization_level": 1}),
}
# Files that hold more than one command (separated by a blank line): one expectation each, in order.
EXPECTED_MANY = {
    # recipes OpenAI/GPT-OSS.md: three commands on lines of their own, no backslash: the shell runs each
    "serve-gpt-oss-a100.sh": [
        Expected("openai/gpt-oss-20b"),
        Expected("openai/gpt-oss-120b"),
        Expected("openai/gpt-oss-120b", engine={"tensor_parallel_size": 2}),
        Expected("openai/gpt-oss-120b", engine={"tensor_parallel_size": 4}),
    ],
    # vLLM's docs/serving/data_parallel_deployment.md: one command a rank, a comment between, no blank line;
    # $MODEL is not in the text
    "serve-data-parallel-external-lb.sh": [
        Expected(None, engine={"data_parallel_size": 2, "data_parallel_rank": 0}, server={"port": 8000},
                 env={"CUDA_VISIBLE_DEVICES": "0"}, asks={"$MODEL"}),
        Expected(None, engine={"data_parallel_size": 2, "data_parallel_rank": 1}, server={"port": 8001},
                 env={"CUDA_VISIBLE_DEVICES": "1"}, asks={"$MODEL"}),
    ],
    # vLLM's docs/features/lora.md: the serve line (its path under $HOME, which the text does not hold), the
    # JSON form of --lora-modules as the docs print it (options alone), and --default_mm_loras
    "serve-lora.sh": [
        Expected("meta-llama/Llama-2-7b-hf", engine={"enable_lora": True}, asks={"--lora-modules"}),
        # --lora-modules: the API server's option; vLLM's action makes each item a LoRAModulePath
        Expected(None, server={"lora_modules": [{"name": "sql-lora", "path": "/path/to/lora",
                                                 "base_model_name": "meta-llama/Llama-2-7b"}]}),
        Expected("ibm-granite/granite-speech-3.3-2b", engine={"max_model_len": 2048, "enable_lora": True,
                                                              "max_lora_rank": 64},
                 tables={"default_mm_loras": {"audio": "ibm-granite/granite-speech-3.3-2b"}}),
    ],
}


# Where the import and vLLM still disagree: the file, and why (the fix lies outside the command-line reader).
DISAGREE: dict[str, str] = {}  # a file whose import still disagrees with vLLM: why (an xfail)


def with_known(names):
    return [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=DISAGREE[n])) if n in DISAGREE else n
            for n in names]


def imported(name):
    results = import_text((LINES / name).read_text(encoding="utf-8"))
    for result in results:
        assert result.error is None, f"{name}: {result.error}"
    return results


def check(result, expected: Expected, name: str):
    said = {m.flag: m.text for m in result.messages}
    assert result.model == expected.model, name
    assert result.engine == expected.engine, name
    assert result.engine_tables == expected.tables, name
    assert result.server == expected.server, name
    assert result.env == expected.env, name
    assert result.secrets == expected.secrets, name
    assert result.non_options() == set(expected.removed), (name, said)
    for flag, text in expected.removed.items():
        assert text in said[flag] and "(the vLLM here has no such option)" in said[flag], said[flag]
    assert {m.flag for m in result.messages if m.kind == ASK} == expected.asks, (name, said)
    assert {m.flag for m in result.messages if m.kind == VALUE} == set(expected.bad_values), (name, said)
    for flag, text in expected.bad_values.items():
        assert text in said[flag], said[flag]
    images = [b.option for b in result.outcomes if b.goes_to == "container" and b.detail.startswith("the image")]
    assert images == ([expected.image] if expected.image else []), name
    assert result.vllm_version == expected.vllm_version, name


def test_every_line_names_where_it_was_copied_from():
    files = sorted(LINES.glob("serve-*.sh"))
    assert {f.name for f in files} == set(EXPECTED) | set(EXPECTED_MANY)
    assert 15 <= len(files) <= 25
    for file in files:
        first = file.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# Source: github.com/vllm-project/") and "@" in first and "copied verbatim" in first
        commit = first.split("@")[1].split()[0]
        assert len(commit) == 40 and all(c in "0123456789abcdef" for c in commit), first


@pytest.mark.parametrize("name", with_known(sorted(EXPECTED)))
def test_a_real_line_imports_as_vllm_reads_it(name):
    results = imported(name)
    assert len(results) == 1, f"{name}: one command, not {len(results)}"
    check(results[0], EXPECTED[name], name)


@pytest.mark.parametrize("name", sorted(EXPECTED_MANY))
def test_a_file_of_several_real_lines_gives_one_command_each(name):
    results = imported(name)
    assert len(results) == len(EXPECTED_MANY[name])
    for result, expected in zip(results, EXPECTED_MANY[name]):
        check(result, expected, name)


def test_the_container_flags_of_the_recipes_docker_lines_stay_dockers():
    (cpu,) = imported("serve-qwen35-cpu-docker.sh")
    container = [b.option for b in cpu.outcomes if b.goes_to == "container"]
    assert container == ["-itd", "--name qwen35b-cpu", "--network host", "--shm-size 16g",
                         "-v ~/.cache/huggingface:/root/.cache/huggingface", "vllm/vllm-openai-cpu:latest-x86_64"]
    (cache,) = imported("serve-docker-compile-cache.sh")
    container = [b.option for b in cache.outcomes if b.goes_to == "container"]
    assert container == ["--rm", "--gpus all", "-v ~/.cache/huggingface:/root/.cache/huggingface",
                         "-v vllm-cache:/root/.cache/vllm", "-p 8000:8000", "vllm/vllm-openai:latest"]


def test_the_api_key_of_the_docs_line_is_never_kept():
    (result,) = imported("serve-openai-server-api-key.sh")
    assert "token-abc123" not in result.source
    assert not any("token-abc123" in str(x) for x in result.outcomes + result.messages)


def test_no_line_calls_an_option_vllm_accepts_not_an_option():
    # Of all the lines, only the flags vLLM 0.32 removed (named above with the release) are refused.
    removed = set()
    for name in sorted(LINES.glob("serve-*.sh")):
        for result in imported(name.name):
            removed |= result.non_options()
    assert removed == {"--disable-log-requests", "--swap-space", "--task"}


def test_export_lines_above_a_blank_line_are_the_commands_environment():
    # recipes OpenAI/GPT-OSS.md: four export lines, a blank line, then the command (a shell keeps the exports)
    (result,) = imported("serve-gpt-oss-rocm.sh")
    assert result.model == "openai/gpt-oss-120b"
    assert result.env == {"HSA_NO_SCRATCH_RECLAIM": "1", "AMDGCN_USE_BUFFER_OPS": "0", "VLLM_ROCM_USE_AITER": "1",
                          "VLLM_ROCM_QUICK_REDUCE_QUANTIZATION": "INT4"}
    first, second = import_text("export VLLM_USE_V1=1\n\nvllm serve a --max-model-len 4096\n\nvllm serve b\n")
    assert first.model == "a" and second.model == "b"
    assert first.env == second.env == {"VLLM_USE_V1": "1"}, "an export stays for the rest of the script"
    (alone,) = import_text("export VLLM_USE_V1=1\n")
    assert alone.env == {"VLLM_USE_V1": "1"} and alone.model is None


def test_a_dotted_options_text_value_gets_the_type_of_the_config_field():
    # recipes OpenAI/GPT-OSS.md: -cc.pass_config.fuse_rope_kvcache=True -cc.use_inductor_graph_partition=True.
    # vLLM's parser: json.loads("True") fails, so the text "True" goes on; PassConfig.fuse_rope_kvcache and
    # CompilationConfig.use_inductor_graph_partition are bool fields, which read it as True.
    (result,) = imported("serve-gpt-oss-rocm.sh")
    assert result.engine_tables == {"compilation_config": {"pass_config": {"fuse_rope_kvcache": True},
                                                           "use_inductor_graph_partition": True}}
    assert {k: result.engine[k] for k in ("tensor_parallel_size", "gpu_memory_utilization", "block_size")} == \
        {"tensor_parallel_size": 8, "gpu_memory_utilization": 0.95, "block_size": 64}
    (words,) = import_text("vllm serve m --speculative-config.method ngram --speculative-config.prompt_lookup_max 4 "
                           "-cc.pass_config.fuse_allreduce_rms=False")
    assert words.engine_tables == {"speculative_config": {"method": "ngram", "prompt_lookup_max": 4},
                                   "compilation_config": {"pass_config": {"fuse_allreduce_rms": False}}}


def test_an_attention_backend_by_the_name_vllms_parser_takes():
    # recipes OpenAI/GPT-OSS.md: --attention-backend ROCM_AITER_UNIFIED_ATTN (a member of AttentionBackendEnum)
    (result,) = imported("serve-gpt-oss-rocm.sh")
    assert result.engine["attention_backend"] == "ROCM_AITER_UNIFIED_ATTN"
    assert not [m for m in result.messages if m.kind == VALUE]


def test_commands_on_lines_of_their_own_are_one_command_each():
    results = imported("serve-gpt-oss-a100.sh")
    assert [r.source.splitlines()[-1] for r in results] == [
        "vllm serve openai/gpt-oss-20b", "vllm serve openai/gpt-oss-120b",
        "vllm serve openai/gpt-oss-120b --tensor-parallel-size 2", "vllm serve openai/gpt-oss-120b --tensor-parallel-size 4"]
    assert "single A100 (80GB)" in results[1].source, "the comment above a command goes with it"
    (continued,) = import_text("vllm serve m \\\n  --max-model-len 4096\n")
    assert continued.engine == {"max_model_len": 4096}
    (unbroken,) = import_text("vllm serve m\n  --max-model-len 4096\n")
    assert unbroken.engine == {"max_model_len": 4096}, "a line of options alone still belongs to the command"
    first, second = import_text("VLLM_USE_V1=1 vllm serve a\nexport HF_HOME=/data\nnohup vllm serve b &\n")
    assert (first.model, first.env) == ("a", {"VLLM_USE_V1": "1"})
    assert (second.model, second.env) == ("b", {"HF_HOME": "/data"})


def test_a_block_size_vllm_takes():
    (result,) = imported("serve-kimi-k25-rocm-docker.sh")
    assert result.engine["block_size"] == 1


def test_lora_modules_as_vllms_action_reads_them():
    # vLLM's LoRAParserAction reads name=path and JSON items into LoRAModulePath objects; the import keeps
    # their fields as plain data (a preset and the import dialog hold no vLLM objects)
    from workbench.presets.command_in import to_document

    (old_form, json_form) = import_text("vllm serve m --lora-modules sql-lora=/loras/sql other=/loras/other\n\n"
                                        + (LINES / "serve-lora.sh").read_text(encoding="utf-8").split("\n\n")[1])
    assert old_form.server == {"lora_modules": [{"name": "sql-lora", "path": "/loras/sql"},
                                                {"name": "other", "path": "/loras/other"}]}
    assert json_form.server["lora_modules"][0]["base_model_name"] == "meta-llama/Llama-2-7b"
    assert "lora_modules" in to_document(old_form, "x").doc["origin"]["server"]


def test_every_real_line_becomes_a_preset_that_reads_back():
    import tomlkit

    from workbench.presets.command_in import engine_tables_of, to_document

    for name in sorted(LINES.glob("serve-*.sh")):
        for result in imported(name.name):
            doc = tomlkit.parse(to_document(result, name.stem).doc.as_string())
            # the dict-valued arguments (speculative_config, limit_mm_per_prompt, ...) in [engine] too
            assert doc["engine"].unwrap() == {**result.engine, **engine_tables_of(result)}, name
            assert doc["origin"]["command"] == result.source, name
