"""The Hub's parts that ask nothing of a server: repo ids as typed, which files vLLM needs, and the
will-it-fit answer for a 7B shape (Qwen2.5-7B-Instruct's published config.json) on the machines users
have. Each expected figure is worked out by hand below from the config."""
from __future__ import annotations

import pytest

from workbench.engine.spec import EngineConfig
from workbench.hub.files import RepoFile, choose_files
from workbench.hub.fit import quantized_variants, will_it_fit
from workbench.hub.repo_id import HubInputError, check_repo_id
from workbench.presets.machine import Machine
from workbench.presets.model_facts import facts_from_config

# Qwen/Qwen2.5-7B-Instruct's config.json (huggingface.co, as published)
QWEN7B = {"architectures": ["Qwen2ForCausalLM"], "hidden_size": 3584, "intermediate_size": 18944,
          "max_position_embeddings": 32768, "num_attention_heads": 28, "num_hidden_layers": 28,
          "num_key_value_heads": 4, "torch_dtype": "bfloat16", "vocab_size": 152064, "tie_word_embeddings": False}
QWEN7B_WEIGHTS = 15_231_233_024  # the four safetensors shards' sizes as the Hub lists them
GIB = 1 << 30


@pytest.mark.parametrize("typed, words", [
    ("", "No model named"),
    ("https://huggingface.co/datasets/openai/gsm8k", "a dataset's page on the Hub, not a model's"),
    ("https://huggingface.co/spaces/a/b", "a Space's page on the Hub, not a model's"),
    ("http://example.com/model", "web address"),
    ("../etc/passwd", "without '..'"),
    ("Qwen/../secret", "without '..'"),
    ("/models/qwen", "Model > Choose model"),
    ("justaname", "owner/name"),
    ("a/b/c", "owner/name"),
])
def test_what_cannot_be_a_repo_id_is_named_with_the_fix(typed, words):
    with pytest.raises(HubInputError, match=words.replace("(", r"\(").replace(".", r"\.")):
        check_repo_id(typed)


def test_a_repo_id_is_taken_as_typed_without_spaces():
    assert check_repo_id("  Qwen/Qwen2.5-0.5B-Instruct ") == "Qwen/Qwen2.5-0.5B-Instruct"


@pytest.mark.parametrize("page, revision", [
    ("https://huggingface.co/Qwen/Qwen2.5-7B-Instruct", None),
    ("https://hf.co/Qwen/Qwen2.5-7B-Instruct/tree/main", "main"),
    ("https://huggingface.co/Qwen/Qwen2.5-7B-Instruct/blob/a09a3545/config.json", "a09a3545"),
    (" https://www.huggingface.co/Qwen/Qwen2.5-7B-Instruct?library=vllm ", None),
])
def test_a_model_s_page_copied_from_the_browser_is_its_id_and_revision(page, revision):
    """It was refused ("That is a web address, not a repo id: write Qwen/Qwen2.5-7B-Instruct"): the page names the
    model, so it is taken."""
    from workbench.hub.repo_id import hub_address

    assert hub_address(page) == ("Qwen/Qwen2.5-7B-Instruct", revision)
    assert check_repo_id(page) == "Qwen/Qwen2.5-7B-Instruct"


@pytest.mark.parametrize("pasted, repo, revision", [
    ('vllm serve "Qwen/Qwen2.5-0.5B-Instruct"', "Qwen/Qwen2.5-0.5B-Instruct", None),  # the Hub's vLLM box
    ("# Load and run the model:\nvllm serve \"Qwen/Qwen2.5-0.5B-Instruct\"\n# Call the server using curl:\n"
     "curl -X POST \"http://localhost:8000/v1/chat/completions\"", "Qwen/Qwen2.5-0.5B-Instruct", None),
    ("vllm serve Qwen/Qwen2.5-0.5B-Instruct \\\n  --revision v2 --max-model-len 4096", "Qwen/Qwen2.5-0.5B-Instruct", "v2"),
    ("hf download Qwen/Qwen2.5-0.5B-Instruct --local-dir models/qwen", "Qwen/Qwen2.5-0.5B-Instruct", None),
    ("huggingface-cli download Qwen/Qwen2.5-0.5B-Instruct --revision=main", "Qwen/Qwen2.5-0.5B-Instruct", "main"),
    ("git clone https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct", None),
    ("git clone git@hf.co:Qwen/Qwen2.5-0.5B-Instruct.git", "Qwen/Qwen2.5-0.5B-Instruct", None),
    ("docker run --gpus all -p 8000:8000 vllm/vllm-openai:latest --model Qwen/Qwen2.5-0.5B-Instruct",
     "Qwen/Qwen2.5-0.5B-Instruct", None),
    ('llm = LLM(model="Qwen/Qwen2.5-0.5B-Instruct")', "Qwen/Qwen2.5-0.5B-Instruct", None),
    ("'Qwen/Qwen2.5-0.5B-Instruct'", "Qwen/Qwen2.5-0.5B-Instruct", None),
    ("huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/tree/v1", "Qwen/Qwen2.5-0.5B-Instruct", "v1"),  # no https://
    ("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct", None),
    ("a/b/c", "a/b/c", None),  # left as typed, for check_repo_id to say why
    ("C:\\models\\qwen", "C:\\models\\qwen", None),  # a Windows folder, its backslashes kept for the message
])
def test_a_snippet_that_names_the_model_is_its_id(pasted, repo, revision):
    """A model card's "Use this model" box or a download line pasted in was "not a repo id"."""
    from workbench.hub.repo_id import hub_address

    assert hub_address(pasted) == (repo, revision)


def _files(*names: str, size: int = 10) -> list[RepoFile]:
    return [RepoFile(name, size) for name in names]


def test_only_the_files_vllm_needs_one_copy_of_the_weights():
    files = _files("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "vocab.json",
                   "merges.txt", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                   "model.safetensors.index.json", "pytorch_model.bin", "consolidated.safetensors", "README.md",
                   ".gitattributes", "original/consolidated.00.pth", "onnx/model.onnx", "model-q4.gguf")
    choice = choose_files(files, {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"})
    assert {f.name for f in choice.files} == {
        "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "vocab.json",
        "merges.txt", "model.safetensors.index.json", "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors"}
    assert choice.weights_format == "safetensors" and choice.problem is None
    assert {"pytorch_model.bin", "consolidated.safetensors", "model-q4.gguf", "original/consolidated.00.pth"} \
        <= set(choice.left_out)


def test_a_bin_only_repo_is_fetched_with_a_warning_and_a_gguf_only_one_is_refused():
    bins = choose_files(_files("config.json", "tokenizer.json", "pytorch_model.bin"))
    assert bins.weights_format == "bin" and bins.problem is None and "pickle" in bins.note
    assert "pytorch_model.bin" in {f.name for f in bins.files}
    gguf = choose_files(_files("config.json", "qwen2.5-7b-instruct-q4_k_m.gguf", "qwen2.5-7b-instruct-q8_0.gguf"))
    assert gguf.weights_format == "" and "GGUF files only" in gguf.problem and "without GGUF" in gguf.problem
    empty = choose_files(_files("config.json", "README.md"))
    assert "no weights vLLM loads" in empty.problem


def _facts():
    return facts_from_config(QWEN7B, "Qwen/Qwen2.5-7B-Instruct", QWEN7B_WEIGHTS)


def test_the_7b_shape_on_an_h200_fits_with_its_full_context():
    # KV per token: 28 layers × 4 KV heads × 128 head size × 2 bytes × 2 (K and V) = 57,344 bytes.
    h200 = Machine("cuda", 1, 143_771 << 20, 143_771 << 20, 2 << 40)
    answer = will_it_fit(EngineConfig("x", gpu_memory_utilization=0.9), _facts(), h200)
    assert answer.plan.kv_bytes_per_token == 57_344
    assert answer.fits and answer.max_len_that_fits == 32_768 and not answer.suggestions
    # 0.9 × 140.4 GiB = 126.4 GiB, less 14.2 GiB of weights and under 1.2 GiB of activations and slack:
    # about 111 GiB of KV, 111 GiB / 57,344 B ≈ 2.08 M tokens; 16-token blocks, 2,048 a 32k sequence.
    assert 2.0e6 < answer.plan.num_blocks * 16 < 2.15e6
    assert answer.seqs_at_that_len == answer.plan.num_blocks // 2048
    assert answer.headline.startswith("Fits on 1 × 140 GiB GPU")


def test_the_7b_shape_on_a_16_gib_gpu_does_not_fit_and_quantized_variants_are_offered():
    small = Machine("cuda", 1, 16 * GIB, 16 * GIB, 64 * GIB)
    found = ["Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct-AWQ", "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4",
             "Qwen/Qwen2.5-14B-Instruct"]
    answer = will_it_fit(EngineConfig("x", gpu_memory_utilization=0.9), _facts(), small, found)
    assert not answer.fits and answer.headline.startswith("Does not fit: the weights (14.19 GiB)")
    assert answer.suggestions == ("a quantized variant: Qwen/Qwen2.5-7B-Instruct-AWQ",
                                  "a quantized variant: Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4")


def test_tight_memory_suggests_a_shorter_context_fp8_kv_and_tensor_parallelism():
    # 24 GiB × 0.9 = 21.6 GiB; less 14.2 GiB weights and ~1.2 GiB: about 6.2 GiB of KV, ~116 k tokens.
    # With gpu_memory_utilization 0.7: 16.8 − 15.4 ≈ 1.4 GiB: ~26 k tokens, less than the model's 32,768.
    two = Machine("cuda", 2, 24 * GIB, 24 * GIB, 64 * GIB)
    answer = will_it_fit(EngineConfig("x", gpu_memory_utilization=0.7), _facts(), two)
    assert answer.fits and answer.max_len_that_fits < 32_768
    ideas = " | ".join(answer.suggestions)
    assert f"max_model_len {answer.max_len_that_fits:,}" in ideas
    assert "kv_cache_dtype fp8" in ideas and "tensor_parallel_size 2" in ideas
    wider = will_it_fit(EngineConfig("x", gpu_memory_utilization=0.7, extra=(("tensor_parallel_size", 2),)),
                        _facts(), two)
    assert wider.plan.num_blocks > 2 * answer.plan.num_blocks, "each GPU holds half the weights"


def test_quantized_variants_are_named_from_the_same_search():
    assert quantized_variants("Qwen/Qwen2.5-7B-Instruct", ["Qwen/Qwen2.5-7B-Instruct-AWQ", "x/Qwen2.5-7B-fp8",
                                                           "Qwen/Qwen2.5-7B-Instruct", "meta/Llama-3-8B-AWQ"]) \
        == ["Qwen/Qwen2.5-7B-Instruct-AWQ", "x/Qwen2.5-7B-fp8"]
