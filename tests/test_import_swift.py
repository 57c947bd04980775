"""``swift infer`` lines as ms-swift's own examples and documentation print them, of today's release and of
earlier ones (``tests/data/command_lines/swift-*.sh``, each naming its source on its first line). Each
expectation is written by hand from the line and ms-swift's documentation of the option, not computed by
the import.

The release facts the expectations rest on (github.com/modelscope/ms-swift):
- 3.0.0 renamed ``--model_id_or_path`` to ``--model``, ``--dtype bf16`` to ``--torch_dtype bfloat16``,
  ``--use_flash_attn`` to ``--attn_impl``, and dropped ``--ckpt_dir`` for ``--model``/``--adapters``
  (docs/source_en/Instruction/ReleaseNote3.0.md at v3.0.0); ``--ckpt_dir`` was still taken until 4.0.0,
  ``--load_dataset_config`` (today ``--load_data_args``) until 3.4.0.
- 3.7.0 gave vLLM's options the ``vllm_`` prefix (commit c3fbbb25); ``--gpu_memory_utilization``,
  ``--tensor_parallel_size``, ``--max_model_len``, ``--limit_mm_per_prompt`` were still taken until 3.10.0
  (commit f562d738); ``--max_model_len`` is today ms-swift's own model length, for RoPE scaling.
- ``--val_dataset data#N``: the first N rows (``--val_dataset_shuffle`` false by default, from 3.5.0:
  commit db6e0cf1); ``--dataset data#N`` samples N rows at random unless ``--dataset_shuffle false``
  (docs/source_en/Instruction/Command-line-parameters.md); ms-swift 2 sampled at random.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from workbench.presets.command_in import NON_OPTION, NOTE, VALUE, import_text, to_document
from workbench.presets.command_out import SWIFT, deployment_of, export_command
from workbench.presets.import_result import BATCH
from workbench.presets.machine import Machine
from preset_fixtures import config_folder, facts  # noqa: F401  (fixtures)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
LINES = Path(__file__).parent / "data" / "command_lines"
TWO_GPUS = Machine("cuda", 2, 140 << 30, 139 << 30, 2 << 40)
QWEN_VL = "Qwen/Qwen2.5-VL-3B-Instruct"


def one(text: str):
    (result,) = import_text(text)
    assert result.error is None, result.error
    return result


def line(name: str):
    text = (LINES / name).read_text(encoding="utf-8")
    assert text.startswith("# Source: github.com/modelscope/ms-swift"), "each file names its source"
    return one(text)


def said(result) -> dict[str, tuple[str, str]]:
    """flag -> (kind, text): one message a flag, except where a test says otherwise."""
    flags = [m.flag for m in result.messages]
    assert len(flags) == len(set(flags)), [m.text for m in result.messages]
    return {m.flag: (m.kind, m.text) for m in result.messages}


def batch_outcome(result) -> str:
    (became,) = [b.detail for b in result.outcomes if b.goes_to == BATCH]
    return became


# ------------------------------------------------------------------ today's release
def test_the_multimodal_tensor_parallel_example():  # examples/infer/vllm/mllm_tp.sh
    result = line("swift-vllm-mllm-tp.sh")
    assert result.model == QWEN_VL
    assert result.env == {"CUDA_VISIBLE_DEVICES": "0,1", "MAX_PIXELS": "1003520"}
    assert result.engine == {"gpu_memory_utilization": 0.9, "tensor_parallel_size": 2, "max_model_len": 32768}
    # MAX_PIXELS: ms-swift resizes each image to at most that many pixels; vLLM's processor, given it, does too
    assert result.engine_tables == {"limit_mm_per_prompt": {"image": 5, "video": 2},
                                    "mm_processor_kwargs": {"max_pixels": 1003520}}
    assert result.sampling == {"max_tokens": 2048}
    assert (result.batch_input, result.batch_limit) == ("AI-ModelScope/LaTeX_OCR", 1000)
    assert batch_outcome(result) == "AI-ModelScope/LaTeX_OCR, the first 1,000 rows"
    assert result.kept == {"--infer_backend": "vllm"}
    assert result.messages == [], "every option is today's ms-swift's"


def test_a_dataset_subset_with_a_row_count():  # examples/infer/vllm/mllm_ddp.sh
    result = line("swift-vllm-mllm-ddp.sh")
    assert result.model == "Qwen/Qwen2.5-Omni-7B"
    assert result.env == {"NPROC_PER_NODE": "2", "CUDA_VISIBLE_DEVICES": "0,1"}
    assert result.engine == {"gpu_memory_utilization": 0.9, "max_model_len": 8192}
    assert result.engine_tables == {"limit_mm_per_prompt": {"audio": 5}}
    assert result.sampling == {"max_tokens": 2048}
    # repo:subset#N: the subset names which part of the dataset; #N how many of its first rows
    assert result.batch_input == "speech_asr/speech_asr_aishell1_trainsets:validation"
    assert result.batch_limit == 1000 and result.messages == []


def test_speculative_decoding_example():  # examples/infer/vllm/mtp.sh
    result = line("swift-vllm-mtp.sh")
    assert result.model == "Qwen/Qwen3-Next-80B-A3B-Instruct"
    assert result.engine == {"tensor_parallel_size": 4, "max_model_len": 8192, "gpu_memory_utilization": 0.9}
    assert result.engine_tables == {"speculative_config": {"method": "qwen3_next_mtp", "num_speculative_tokens": 2}}
    assert (result.batch_input, result.batch_limit) == ("AI-ModelScope/alpaca-gpt4-data-zh", 100)
    assert result.sampling == {"max_tokens": 2048} and result.messages == []


# ------------------------------------------------------------------ before 3.7: vLLM's options unprefixed
def test_the_same_example_before_vllm_options_took_their_prefix():
    result = line("swift-3.6-vllm-mllm-tp.sh")
    # the same deployment as today's spelling of the example (test_the_multimodal_tensor_parallel_example)
    assert result.model == QWEN_VL and result.env == {"CUDA_VISIBLE_DEVICES": "0,1", "MAX_PIXELS": "1003520"}
    assert result.engine == {"gpu_memory_utilization": 0.9, "tensor_parallel_size": 2, "max_model_len": 32768}
    assert result.engine_tables == {"limit_mm_per_prompt": {"image": 5, "video": 2},
                                    "mm_processor_kwargs": {"max_pixels": 1003520}}
    assert result.sampling == {"max_tokens": 2048}
    assert (result.batch_input, result.batch_limit) == ("AI-ModelScope/LaTeX_OCR", 1000)
    messages = said(result)
    assert set(messages) == {"--gpu_memory_utilization", "--tensor_parallel_size", "--max_model_len",
                             "--limit_mm_per_prompt"}
    assert all(kind == NOTE for kind, _ in messages.values()), "imported, never refused"
    for old in ("gpu_memory_utilization", "tensor_parallel_size", "limit_mm_per_prompt"):
        text = messages[f"--{old}"][1]
        assert f"ms-swift 3.7.0 renamed this option --vllm_{old}" in text and "3.9.3 still took the old name" in text
    length = messages["--max_model_len"][1]
    assert "vLLM's max_model_len" in length and "before 3.10.0" in length and "--vllm_max_model_len 32768" in length
    assert "--gpu_memory_utilization" in length, "names the spelling that dates the line"


def test_data_parallel_example_before_the_prefix():  # examples/infer/vllm/dp_tp.sh before c3fbbb25
    result = line("swift-3.6-vllm-dp-tp.sh")
    assert result.model == "Qwen/Qwen2.5-7B-Instruct"
    assert result.env == {"NPROC_PER_NODE": "4", "CUDA_VISIBLE_DEVICES": "0,1,2,3"}
    assert result.engine == {"gpu_memory_utilization": 0.9, "max_model_len": 8192, "tensor_parallel_size": 2}
    assert result.sampling == {"max_tokens": 2048}
    assert (result.batch_input, result.batch_limit) == ("AI-ModelScope/alpaca-gpt4-data-zh", 2000)
    assert batch_outcome(result) == "AI-ModelScope/alpaca-gpt4-data-zh, the first 2,000 rows"
    assert result.kept == {"--infer_backend": "vllm", "--write_batch_size": "1000"}
    assert {flag: kind for flag, (kind, _) in said(result).items()} == {
        "--gpu_memory_utilization": NOTE, "--max_model_len": NOTE, "--tensor_parallel_size": NOTE}


# ------------------------------------------------------------------ ms-swift 2.x
def test_a_two_gpu_line_of_ms_swift_2():  # v2.6.1 docs/source_en/LLM/VLLM-inference-acceleration-and-deployment.md
    result = line("swift-2.6-vllm-tp.sh")
    assert result.model is None, "qwen2-72b-instruct is ms-swift 2's name of a model, not a hub id"
    assert result.env == {"RAY_memory_monitor_refresh_ms": "0", "CUDA_VISIBLE_DEVICES": "0,1"}
    assert result.engine == {"max_model_len": 2048, "tensor_parallel_size": 2}, "ms-swift 2 passed both to vLLM"
    assert result.kept == {"--model_type": "qwen2-72b-instruct", "--infer_backend": "vllm"}
    messages = said(result)
    assert {flag: kind for flag, (kind, _) in messages.items()} == {
        "--model_type": NOTE, "--max_model_len": NOTE, "--tensor_parallel_size": NOTE}
    assert "ms-swift 3.0.0" in messages["--model_type"][1] and "--model" in messages["--model_type"][1]
    assert "--vllm_max_model_len 2048" in messages["--max_model_len"][1]
    assert "3.7.0 renamed this option --vllm_tensor_parallel_size" in messages["--tensor_parallel_size"][1]


def test_a_checkpoint_line_of_ms_swift_2_ending_in_a_backslash():  # the same page, "Fine-tuned Models"
    text = (LINES / "swift-2.6-vllm-ckpt-dir.sh").read_text(encoding="utf-8")
    assert text.rstrip("\n").endswith("\\"), "the example as printed ends in a line continuation"
    result = one(text)
    assert result.env == {"CUDA_VISIBLE_DEVICES": "0"} and result.model is None and result.engine == {}
    assert result.kept == {"--adapters": "xxx/vx-xxx/checkpoint-xxx-merged", "--infer_backend": "vllm",
                           "--load_data_args": "true"}
    messages = said(result)
    assert {flag: kind for flag, (kind, _) in messages.items()} == {"--ckpt_dir": NOTE, "--load_dataset_config": NOTE}
    ckpt = messages["--ckpt_dir"][1]
    assert "ms-swift 3.0.0 renamed this option --adapters" in ckpt and "3.12.6 still took" in ckpt
    assert "choose xxx/vx-xxx/checkpoint-xxx-merged as the model" in ckpt, "a merged checkpoint is a model"
    load = messages["--load_dataset_config"][1]
    assert "--load_data_args" in load and "3.4.0 still took" in load


def test_a_batch_line_of_ms_swift_2_sampled_at_random():  # v2.6.1 docs/source_en/Multi-Modal/vllm-...md
    result = line("swift-2.6-mllm-batch.sh")
    assert result.env == {"CUDA_VISIBLE_DEVICES": "0"} and result.model is None and result.engine == {}
    assert (result.batch_input, result.batch_limit) == ("coco-en-2-mini", 100)
    messages = said(result)
    assert {flag: kind for flag, (kind, _) in messages.items()} == {"--model_type": NOTE, "--val_dataset": NOTE}
    rows = messages["--val_dataset"][1]
    assert "before 3.5.0" in rows and "100 rows of coco-en-2-mini at random" in rows and "the first 100" in rows


# ------------------------------------------------------------------ names that mix releases
def test_an_old_name_beside_a_newer_spelling_no_release_takes():
    result = one("--vllm_max_model_len 16384 --use_flash_attn true --enforce_eager")
    messages = said(result)
    kind, text = messages["--use_flash_attn"]
    assert kind == NON_OPTION and "3.0.0 renamed this option --attn_impl" in text
    assert "together with --vllm_max_model_len" in text and "write --attn_impl flash_attn" in text
    kind, text = messages["--enforce_eager"]
    assert kind == NON_OPTION and "--vllm_enforce_eager" in text and "keeps it as vLLM's enforce_eager" in text
    assert result.engine == {"max_model_len": 16384, "enforce_eager": True} and result.kept == {}


def test_old_names_on_their_own_are_imported_as_todays():
    result = one("swift infer --model_id_or_path qwen/Qwen2-7B-Instruct --dtype bf16 --use_flash_attn false "
                 "--gpu_memory_utilization 0.8")
    assert result.model == "qwen/Qwen2-7B-Instruct" and result.engine == {"gpu_memory_utilization": 0.8}
    assert result.kept == {"--torch_dtype": "bfloat16", "--attn_impl": "eager"}, "ms-swift 2: false loaded eager"
    messages = said(result)
    assert all(kind == NOTE for kind, _ in messages.values()) and len(messages) == 4
    assert "imported as --torch_dtype bfloat16" in messages["--dtype"][1]
    assert "imported as --model qwen/Qwen2-7B-Instruct" in messages["--model_id_or_path"][1]


def test_ms_swift_2s_unlimited_max_length():  # v2.6.1 Command-line-parameters.md: --max_length default -1
    result = one("swift infer --model_type qwen-7b-chat --max_length -1")
    assert result.kept == {"--model_type": "qwen-7b-chat"}, "today -1 would be a limit"
    kind, text = said(result)["--max_length"]
    assert kind == NOTE and "no limit" in text and "3.0.0" in text and "left out" in text


def test_the_compatibility_window_of_the_vllm_names():
    mixed = one("swift infer --model m --vllm_max_model_len 8192 --gpu_memory_utilization 0.9")
    assert mixed.engine == {"max_model_len": 8192, "gpu_memory_utilization": 0.9}
    assert said(mixed)["--gpu_memory_utilization"][0] == NOTE, "3.7.0 to 3.9.3 took both spellings"
    late = one("swift infer --model m --vllm_engine_kwargs '{\"max_num_batched_tokens\": 4096}' "
               "--gpu_memory_utilization 0.9")
    kind, text = said(late)["--gpu_memory_utilization"]
    assert kind == NON_OPTION and "ms-swift 3.10.0 on" in text, "--vllm_engine_kwargs came after the old name went"
    assert late.engine == {"max_num_batched_tokens": 4096, "gpu_memory_utilization": 0.9}


def test_todays_max_model_len_is_ms_swifts_own():
    result = one("swift infer --model m --vllm_gpu_memory_utilization 0.8 --max_model_len 65536 --rope_scaling yarn")
    assert result.engine == {"gpu_memory_utilization": 0.8}, "not vLLM's max_model_len"
    assert result.kept == {"--max_model_len": "65536", "--rope_scaling": "yarn"}
    kind, text = said(result)["--max_model_len"]
    assert kind == NOTE and "before ms-swift 3.10.0" in text and "--vllm_max_model_len 65536" in text
    alone = one("swift infer --max_model_len 4096")
    assert alone.engine == {} and alone.kept == {"--max_model_len": "4096"}, "nothing dates the line: today's"


# ------------------------------------------------------------------ dataset#N
@pytest.mark.parametrize("rows", ["abc", "0", ""])
def test_a_row_count_that_is_no_count(rows):
    result = one(f"swift infer --model m --val_dataset data.jsonl#{rows}")
    (message,) = result.messages
    assert message.kind == VALUE and "a whole number above 0" in message.text and "data.jsonl#2000" in message.text
    assert (result.batch_input, result.batch_limit) == ("data.jsonl", None)


def test_who_samples_at_random():
    train = one("swift infer --model m --dataset data.jsonl#20")
    assert (train.batch_input, train.batch_limit) == ("data.jsonl", 20)
    assert "--dataset_shuffle true by default" in said(train)["--dataset"][1]
    assert one("swift infer --model m --dataset data.jsonl#20 --dataset_shuffle false").messages == []
    shuffled = one("swift infer --model m --val_dataset data.jsonl#20 --val_dataset_shuffle true")
    assert "at random" in said(shuffled)["--val_dataset"][1]


def test_the_row_count_goes_to_origin_and_back_out(facts):
    result = line("swift-vllm-mllm-tp.sh")
    document = to_document(result, "latex")
    assert document.origin()["batch_input"] == "AI-ModelScope/LaTeX_OCR" and document.origin()["batch_limit"] == 1000
    deployment = deployment_of(document, TWO_GPUS, facts.path, facts)
    assert deployment.batch_limit == 1000
    text = export_command(deployment, SWIFT)
    assert "--val_dataset 'AI-ModelScope/LaTeX_OCR#1000'" in text
    back = one(text)
    assert (back.batch_input, back.batch_limit) == ("AI-ModelScope/LaTeX_OCR", 1000) and not back.non_options()


def test_an_old_line_exports_in_todays_spelling(facts):
    deployment = deployment_of(to_document(line("swift-3.6-vllm-mllm-tp.sh"), "old"), TWO_GPUS, facts.path, facts)
    text = export_command(deployment, SWIFT)
    assert "--vllm_max_model_len 32768" in text and "--vllm_gpu_memory_utilization 0.9" in text
    assert one(text).messages == [], "the export is today's ms-swift"


def test_a_trailing_backslash_and_spaces_after_it():
    result = one("swift infer --model m \\  \n  --vllm_max_num_seqs 8 \\")
    assert result.model == "m" and result.engine == {"max_num_seqs": 8} and result.messages == []


def test_a_column_mapping_names_the_batch_s_prompt_field():
    """ms-swift's --columns (its Data Arguments) was called "not an option of vLLM or ms-swift"."""
    result = one("swift infer --model Qwen/Qwen2.5-7B-Instruct --infer_backend vllm --val_dataset gsm8k.jsonl#100 "
                 "--columns '{\"question\": \"query\", \"answer\": \"response\"}'")
    assert said(result) == {"--columns": (NOTE, "--columns {\"question\": \"query\", \"answer\": \"response\"}: ms-swift "
                                                "reads the dataset's 'question' column as the prompt: in the Batch tab, "
                                                "open the file as \"Records: a prompt field you name\" (a CSV by its "
                                                "column) with 'question'")}
    assert result.batch_input == "gsm8k.jsonl" and result.batch_limit == 100
    result = one("swift infer --model Qwen/Qwen2.5-7B-Instruct --val_dataset d.jsonl --columns question")
    assert said(result)["--columns"][0] == VALUE and "a JSON object" in said(result)["--columns"][1]
