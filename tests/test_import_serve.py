"""``vllm serve`` and ``docker run`` lines as vLLM's documentation and recipes print them, read with
vLLM's own parser. Each expectation is written by hand from the line and vLLM's documentation of the
option (``vllm serve --help``), not computed by the import.

Sources: github.com/vllm-project/vllm ``docs/deployment/docker.md``, ``docs/serving/
openai_compatible_server.md``, ``docs/features/spec_decode.md``; github.com/vllm-project/recipes at
8959cf6 (``Qwen/Qwen3-VL.md``, ``OpenAI/GPT-OSS.md``, ``GLM/GLM-4.5.md``).
"""
from __future__ import annotations

import pytest

from workbench.presets.command_in import ASK, NON_OPTION, NOTE, import_text
from workbench.presets.import_result import ENGINE, SERVER
from preset_fixtures import config_folder, facts  # noqa: F401  (fixtures)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def one(text):
    (result,) = import_text(text)
    assert result.error is None, result.error
    return result


def test_the_docker_line_of_vllms_deployment_docs():  # docs/deployment/docker.md
    result = one("""docker run --runtime nvidia --gpus all \\
    -v ~/.cache/huggingface:/root/.cache/huggingface \\
    --env "HF_TOKEN=$HF_TOKEN" \\
    -p 8000:8000 \\
    --ipc=host \\
    vllm/vllm-openai:latest \\
    --model Qwen/Qwen3-0.6B""")
    assert result.model == "Qwen/Qwen3-0.6B"
    assert result.engine == {} and result.engine_tables == {} and result.server == {}
    assert result.secrets == ["HF_TOKEN"] and "HF_TOKEN" not in result.env
    assert result.vllm_version is None, "latest names no version"
    container = [b.option for b in result.outcomes if b.goes_to == "container"]
    assert container == ["--runtime nvidia", "--gpus all", "-v ~/.cache/huggingface:/root/.cache/huggingface",
                         "-p 8000:8000", "--ipc host", "vllm/vllm-openai:latest"]
    assert not result.non_options()


def test_a_docker_line_with_a_tag_a_real_token_and_the_model_positional():
    result = one("docker run --gpus all -e HF_TOKEN=hf_abcdef123 -e VLLM_LOGGING_LEVEL=DEBUG "
                 "vllm/vllm-openai:v0.9.0 Qwen/Qwen3-8B -tp 2 --port 8001")
    assert result.model == "Qwen/Qwen3-8B" and result.vllm_version == "0.9.0"
    assert result.engine == {"tensor_parallel_size": 2} and result.server == {"port": 8001}
    assert result.env == {"VLLM_LOGGING_LEVEL": "DEBUG"}
    assert "hf_abcdef123" not in result.source and "HF_TOKEN=$HF_TOKEN" in result.source
    assert not any("hf_abcdef123" in str(b) for b in result.outcomes + result.messages)


def test_the_api_key_line_of_the_openai_server_docs():  # docs/serving/openai_compatible_server.md
    result = one("vllm serve NousResearch/Meta-Llama-3-8B-Instruct \\\n  --dtype auto \\\n  --api-key token-abc123")
    assert result.model == "NousResearch/Meta-Llama-3-8B-Instruct" and result.engine == {"dtype": "auto"}
    assert "token-abc123" not in result.source and result.secrets == ["--api-key"]


def test_dotted_options_merge_into_one_value():  # recipes Qwen/Qwen3-VL.md, GLM/GLM-4.5.md
    result = one("vllm serve Qwen/Qwen3-VL-235B-A22B-Instruct-FP8 --tensor-parallel 4 "
                 "--limit-mm-per-prompt.video 0 --speculative-config.method mtp "
                 "--speculative-config.num_speculative_tokens 1")
    assert result.engine == {"tensor_parallel_size": 4}, "--tensor-parallel: a unique prefix vLLM takes"
    assert result.engine_tables == {"limit_mm_per_prompt": {"video": 0},
                                    "speculative_config": {"method": "mtp", "num_speculative_tokens": 1}}


def test_compilation_optimization_and_spellings():  # recipes OpenAI/GPT-OSS.md
    result = one("vllm serve openai/gpt-oss-120b --tensor_parallel_size 8 -O3 --no-enable-prefix-caching "
                 "--compilation-config '{\"mode\": 3, \"cudagraph_capture_sizes\": [1, 2, 4]}' "
                 "--served-model-name gpt-oss gpt --max-num-batched-tokens=8192 "
                 "--enable-auto-tool-choice --tool-call-parser openai --host 0.0.0.0")
    assert result.engine == {"tensor_parallel_size": 8, "optimization_level": 3, "enable_prefix_caching": False,
                             "max_num_batched_tokens": 8192}
    assert result.engine_tables == {"compilation_config": {"mode": 3, "cudagraph_capture_sizes": [1, 2, 4]},
                                    "served_model_name": ["gpt-oss", "gpt"]}, "served_model_name: an engine field"
    assert result.server == {"enable_auto_tool_choice": True, "tool_call_parser": "openai", "host": "0.0.0.0"}
    goes = {b.option: b.goes_to for b in result.outcomes}
    assert goes["-O3"] == ENGINE and goes["--tool-call-parser openai"] == SERVER


def test_options_older_vllm_had_name_the_release_and_todays_spelling():
    result = one("vllm serve m --swap-space 16 --speculative-model ngram --use-v2-block-manager "
                 "--limit-mm-per-prompt image=2 --task generate")
    said = {m.flag: m.text for m in result.messages}
    assert result.non_options() == {"--swap-space", "--speculative-model", "--use-v2-block-manager", "--task"}
    assert "vLLM 0.18 removed" in said["--swap-space"] and "--speculative-config" in said["--speculative-model"]
    assert "--runner" in said["--task"]
    assert result.engine_tables == {"limit_mm_per_prompt": {"image": 2}}
    assert [m.kind for m in result.messages if m.flag == "--limit-mm-per-prompt"] == [NOTE]


def test_shell_text_as_people_paste_it(tmp_path):
    result = one("export MODEL=Qwen/Qwen3-8B\nnohup vllm serve $MODEL --port ${PORT} \\   \n"
                 "  --max-model-len 4096 > server.log 2>&1 &")
    assert result.model == "Qwen/Qwen3-8B" and result.engine == {"max_model_len": 4096}
    assert [m.kind for m in result.messages] == [ASK] and "$PORT" in result.messages[0].text
    piped = one("vllm serve <your-model> --gpu-memory-utilization 0.8 2>&1 | tee vllm.log \\")
    assert piped.model is None and piped.engine == {"gpu_memory_utilization": 0.8}
    assert "<your-model>" in piped.messages[0].text


def test_a_config_file_beside_the_command_is_read_by_vllm(tmp_path):
    (tmp_path / "serve.yaml").write_text("max-num-seqs: 16\nenable-prefix-caching: false\n")
    (found,) = import_text("vllm serve m --config serve.yaml --max-model-len 2048", base_dir=tmp_path)
    assert found.engine == {"max_num_seqs": 16, "enable_prefix_caching": False, "max_model_len": 2048}
    missing = one("vllm serve m --config serve.yaml")
    assert missing.messages[0].kind == ASK and "serve.yaml" in missing.messages[0].text


def test_no_engine_argument_vllms_parser_accepts_is_called_not_an_option():
    from workbench.engine.vllm_plugin.serve_parser import serve_parser

    flags = [a.option_strings[0] for a in serve_parser()._actions if a.option_strings and a.nargs == 0]
    result = one("vllm serve m " + " ".join(flags))
    assert not [m for m in result.messages if m.kind == NON_OPTION]


def test_an_indented_llm_snippet_and_a_repl_one():  # vLLM docs: docs/features/multimodal_inputs.md
    snippet = """    def make_llm():
        llm = LLM(
            model="Qwen/Qwen2.5-VL-3B-Instruct",
            max_model_len=4096,
            limit_mm_per_prompt={"image": 2},
        )
        return llm
"""
    result = one(snippet)
    assert result.model == "Qwen/Qwen2.5-VL-3B-Instruct" and result.engine == {"max_model_len": 4096}
    assert result.engine_tables == {"limit_mm_per_prompt": {"image": 2}}
    repl = one(">>> from vllm import LLM\n>>> llm = LLM(model='facebook/opt-125m',\n...           enforce_eager=True)\n")
    assert repl.model == "facebook/opt-125m" and repl.engine == {"enforce_eager": True}


ROUND_TRIP = [
    "vllm serve m --tensor-parallel 2 -O3 --no-enable-prefix-caching --max-num-seqs=64 "
    "--speculative-config.method ngram --speculative-config.num_speculative_tokens 4 --limit-mm-per-prompt.image 2",
    "docker run --gpus all vllm/vllm-openai:latest m --max-model-len 8192 --gpu-memory-utilization 0.8 --enforce-eager",
]


@pytest.mark.parametrize("line", ROUND_TRIP)
def test_an_imported_line_exported_again_gives_vllms_parser_the_same_engine_arguments(line, facts):
    import shlex

    from workbench.engine.vllm_plugin.serve_parser import parse_words
    from workbench.presets.command_in import to_document
    from workbench.presets.command_out import SERVE, deployment_of, export_command
    from workbench.presets.machine import Machine

    two_gpus = Machine("cuda", 2, 140 << 30, 139 << 30, 2 << 40)
    imported = one(line)
    text = export_command(deployment_of(to_document(imported, "x"), two_gpus, "/app/model", facts), SERVE)
    words = [w for w in shlex.split(text.split("\n#")[0].replace("\\\n", " ")) if "=" not in w or w.startswith("-")]
    exported = parse_words(words[words.index("serve") + 1:])
    expected = {**imported.engine, **imported.engine_tables}
    digits = {k: int(v) if isinstance(v, str) and v.isdigit() else v for k, v in exported.items()}  # -O's '3'
    assert {k: digits[k] for k in expected} == expected, text
