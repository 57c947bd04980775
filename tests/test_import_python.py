"""Python ``LLM(...)`` snippets as vLLM's documentation and examples print them (``tests/data/command_lines/
python-*.py``, each naming its source on its first line): one command per call, named by its variable;
values with arithmetic and names bound earlier; a value that is not one named on its own option, the
rest of the call kept. Each expectation is written by hand from the snippet, not computed by the import.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from workbench.presets.command_in import NON_OPTION, NOTE, VALUE, import_block, import_text
from workbench.presets.command_out import PYTHON
from workbench.presets.import_result import ENGINE, MODEL, SAMPLING
from preset_fixtures import config_folder  # noqa: F401  (fixture)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
DATA = Path(__file__).parent / "data" / "command_lines"
MISTRAL = "mistralai/Mistral-Small-3.1-24B-Instruct-2503"
NOT_A_VALUE = "is not a value the import can read; write the value itself"


def snippet(name: str) -> list:
    results = import_text((DATA / f"python-{name}.py").read_text(encoding="utf-8"))
    assert all(r.error is None and r.form == PYTHON for r in results), [r.error for r in results]
    return results


def said(result, kind=VALUE) -> dict:
    return {m.flag: m.text for m in result.messages if m.kind == kind}


def test_two_calls_of_the_conserving_memory_page_with_arithmetic():
    qwen, intern = snippet("conserving-memory-mm-processor")
    assert (qwen.name, intern.name) == ("llm (line 5)", "llm (line 11)"), "one variable for both: the line says which"
    assert qwen.model == "Qwen/Qwen2.5-VL-3B-Instruct" and qwen.engine == {}
    assert qwen.engine_tables == {"mm_processor_kwargs": {"max_pixels": 589824}}, "768 * 768"
    assert intern.model == "OpenGVLab/InternVL2-2B"
    assert intern.engine_tables == {"mm_processor_kwargs": {"max_dynamic_patch": 4}}
    assert not qwen.messages and not intern.messages
    assert [(b.option, b.goes_to, b.detail) for b in qwen.outcomes] == [
        ('model="Qwen/Qwen2.5-VL-3B-Instruct"', MODEL, "Qwen/Qwen2.5-VL-3B-Instruct"),
        ('mm_processor_kwargs={"max_pixels": 768 * 768}', ENGINE, 'mm_processor_kwargs = {"max_pixels": 589824}')]


def test_a_config_object_is_named_and_the_rest_of_the_call_kept():
    (result,) = snippet("conserving-memory-cuda-graphs")  # indented as the page's collapsed block
    assert result.name == "llm" and result.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert result.engine == {} and result.engine_tables == {}
    assert said(result) == {"compilation_config": (
        "line 7: compilation_config=CompilationConfig(level=CompilationMode.VLLM_COMPILE, "
        f"cudagraph_capture_sizes=[1, 2, 4, 8, 16]) {NOT_A_VALUE}")}


def test_two_calls_in_a_function_share_the_one_sampling_params():
    regular, cached = snippet("prefix-caching")
    assert (regular.name, cached.name) == ("regular_llm", "prefix_cached_llm")
    assert regular.model == cached.model == "facebook/opt-125m"
    assert regular.engine == {"gpu_memory_utilization": 0.4}
    assert cached.engine == {"enable_prefix_caching": True, "gpu_memory_utilization": 0.4}
    assert regular.sampling == cached.sampling == {"temperature": 0.0}
    assert not regular.messages and not cached.messages
    assert ("enable_prefix_caching=True", ENGINE, "enable_prefix_caching = True") in \
        [(b.option, b.goes_to, b.detail) for b in cached.outcomes]


def test_each_demo_with_its_own_constants_sampling_and_unreadable_arguments():
    simple, advanced = snippet("mistral-small")
    assert (simple.name, advanced.name) == ("llm (line 12)", "llm (line 39)")
    assert simple.model == advanced.model == MISTRAL, "model=model_name, bound just above"
    assert simple.engine == {"max_model_len": 4096, "max_num_seqs": 2, "tensor_parallel_size": 2}
    assert simple.engine_tables == {"limit_mm_per_prompt": {"image": 1}}
    assert simple.sampling == {"max_tokens": 8192}
    assert advanced.engine == {"max_model_len": 12288, "tensor_parallel_size": 2}, "3 * 4096"
    assert advanced.engine_tables == {"limit_mm_per_prompt": {"image": 3}}
    assert advanced.sampling == {"max_tokens": 8192, "temperature": 0.7}, "the SamplingParams its llm.chat uses"
    for result, first, last in ((simple, 14, 21), (advanced, 41, 47)):
        texts = said(result)
        assert set(texts) == {"tokenizer_mode", "config_format", "load_format", "disable_mm_preprocessor_cache"}
        assert texts["tokenizer_mode"] == (f'line {first}: tokenizer_mode="mistral" if args.format == "mistral" '
                                           f'else "auto" {NOT_A_VALUE}')
        assert texts["disable_mm_preprocessor_cache"].startswith(
            f"line {last}: disable_mm_preprocessor_cache="
            "args.disable_mm_preprocessor_cache ")
        assert not said(result, NON_OPTION)
    labels = {b.option: b.detail for b in advanced.outcomes}
    assert labels["max_model_len=max_img_per_msg * max_tokens_per_img"] == "max_model_len = 12288"
    assert labels['limit_mm_per_prompt={"image": max_img_per_msg}'] == 'limit_mm_per_prompt = {"image": 3}'
    assert labels["model=model_name"] == MISTRAL and labels["temperature=0.7"] == "temperature = 0.7"


# ------------------------------------------------------------------ values, written by hand
def test_values_with_arithmetic_names_and_the_environment():
    (result,) = import_text('import os\nN_IMAGES = 2\nKB = 1024\nname = "Qwen/" + "Qwen2.5-1.5B"\n'
                            'llm = LLM(model=name, max_model_len=4 * KB, seed=-1, tensor_parallel_size=2,\n'
                            '          limit_mm_per_prompt={"image": N_IMAGES, "video": 0},\n'
                            '          download_dir=os.environ.get("HF_HOME", "/data/hf"), quantization=None)\n')
    assert result.name == "llm" and result.model == "Qwen/Qwen2.5-1.5B"
    assert result.engine == {"max_model_len": 4096, "seed": -1, "tensor_parallel_size": 2,
                             "download_dir": "/data/hf"}
    assert result.engine_tables == {"limit_mm_per_prompt": {"image": 2, "video": 0}}
    (note,) = said(result, NOTE).values()
    assert note.startswith('download_dir=os.environ.get("HF_HOME", "/data/hf"): line 7:') and "HF_HOME" in note
    labels = [b.option for b in result.outcomes]
    assert labels[:3] == ["model=name", "max_model_len=4 * KB", "seed=-1"] and "tensor_parallel_size=2" in labels
    assert "quantization=None" in labels and "quantization" not in result.engine, "None: vLLM's default"


@pytest.mark.parametrize("value, why", [
    ("args.model", "an attribute of something the snippet does not hold"),
    ("get_model()", "a call"),
    ("MODEL", "a name bound nowhere"),
    ("later", "a name bound only after the call"),
    ("rebound", "a name bound to a value, then to a call"),
    ('"x" * 10 ** 9', "a text too long to be a setting"),
    ("2 ** 10 ** 10", "a number too large to be one"),
    ("1 / 0", "no number at all"),
    ("__import__('os').system('true')", "code"),
])
def test_a_value_that_is_not_one_is_named_with_its_line(value, why):
    text = f'rebound = "m"\nrebound = pick()\nllm = LLM(\n    max_num_seqs=4,\n    model={value},\n)\nlater = "m"\n'
    (result,) = import_text(text)
    assert result.error is None, why
    assert said(result) == {"model": f"line 5: model={value} {NOT_A_VALUE}"}, why
    assert result.model is None and result.engine == {"max_num_seqs": 4}, "the rest is kept"


def test_unnamed_calls_are_named_by_their_place_and_one_sampling_params_goes_with_each():
    text = ("from vllm import LLM, SamplingParams\nparams = SamplingParams(temperature=0.5, max_tokens=2 * 64)\n"
            "outputs = LLM('facebook/opt-125m').generate(prompts, params)\n\n"
            "engines = [LLM(model='m', enforce_eager=True)]\n")
    first, second = import_text(text)
    assert (first.name, second.name) == ("LLM call 1 (line 3)", "LLM call 2 (line 5)")
    assert first.model == "facebook/opt-125m" and second.engine == {"enforce_eager": True}
    assert first.sampling == second.sampling == {"temperature": 0.5, "max_tokens": 128}
    assert [b.option for b in first.outcomes if b.goes_to == SAMPLING] == ["temperature=0.5", "max_tokens=2 * 64"]
    assert [b.option for b in first.outcomes if b.goes_to == MODEL] == ["'facebook/opt-125m'"]


def test_sampling_params_go_with_the_call_that_uses_them():
    text = ("greedy = SamplingParams(temperature=0.0)\nhot = SamplingParams(temperature=1.2, top_k=50)\n"
            "small = LLM(model='s')\nbig = LLM(model='b', tensor_parallel_size=2)\n"
            "big.generate(prompts, hot)\nsmall.generate(prompts, sampling_params=greedy)\n"
            "third = LLM(model='t')\nthird.chat(messages, SamplingParams(max_tokens=16))\nfourth = LLM(model='f')\n")
    small, big, third, fourth = import_text(text)
    assert small.sampling == {"temperature": 0.0} and big.sampling == {"temperature": 1.2, "top_k": 50}
    assert third.sampling == {"max_tokens": 16}, "written inside the call that uses it"
    assert fourth.sampling == {}, "three SamplingParams, none used with it"


def test_cuda_visible_devices_set_in_the_snippet_goes_with_the_calls_after_it():
    text = ('import os\nGPUS = "0"\nos.environ["CUDA_VISIBLE_DEVICES"] = GPUS\n'
            "llm = LLM(model='m', tensor_parallel_size=2)\n")
    (result,) = import_text(text)
    assert result.visible_devices == "0" and result.engine == {"tensor_parallel_size": 2}
    assert [m.flag for m in result.messages] == ["CUDA_VISIBLE_DEVICES"], "1 GPU named for 2 ranks"


def test_a_snippet_without_a_call_and_one_that_is_not_python():
    assert "no LLM(...) call" in import_block("# LLM(...) goes here, once the model is chosen\nx = 1\n").error
    (broken,) = import_text("llm = LLM(model='m',\n")
    assert "not valid Python" in broken.error and broken.form == PYTHON


# ------------------------------------------------------------------ the dialog
def test_the_import_dialog_shows_each_call_by_name_and_names_its_preset(qtbot):
    from workbench.ui.command_import import CommandImportDialog

    dialog = CommandImportDialog("facebook/opt-125m")
    qtbot.addWidget(dialog)
    with qtbot.waitSignal(dialog.read_done):
        dialog.open_file(str(DATA / "python-prefix-caching.py"))
    shown = dialog.messages.toPlainText()
    assert "Command 1 (Python LLM(...), regular_llm); model facebook/opt-125m" in shown
    assert "Command 2 (Python LLM(...), prefix_cached_llm)" in shown and 'model="facebook/opt-125m"' in shown
    assert "2 of 2 command(s) read" in dialog.status.text()
    dialog.name.setText("opt")
    assert dialog.preset_names() == ["opt-regular_llm", "opt-prefix_cached_llm"]
    assert [p.stem for p in dialog.import_presets(allow_trust=lambda model: False)] == dialog.preset_names()
    with qtbot.waitSignal(dialog.read_done):
        dialog.open_file(str(DATA / "python-mistral-small.py"))
    assert "Command 2 (Python LLM(...), llm (line 39))" in dialog.messages.toPlainText()
    assert dialog.preset_names() == ["opt-llm-line-12", "opt-llm-line-39"]


def test_f_strings_tuples_and_getenv():
    (result,) = import_text('import os\nORG = "Qwen"\nSIZE = 1.5\n'
                            'llm = LLM(f"{ORG}/Qwen2.5-{SIZE}B", served_model_name=("qwen", "q"),\n'
                            '          max_num_seqs=int(os.getenv("SEQS", "8")), tokenizer=f"{ORG!r}")\n')
    assert result.model == "Qwen/Qwen2.5-1.5B"
    assert result.engine_tables == {"served_model_name": ["qwen", "q"]}
    assert set(said(result)) == {"max_num_seqs", "tokenizer"}, "int(...) is a call; !r is code"


def test_engine_args_spread_into_llm_and_a_dict_of_settings_are_read():
    # the shape of vLLM's examples/offline_inference scripts: EngineArgs(...) then LLM(**asdict(engine_args))
    text = ('from dataclasses import asdict\nfrom vllm import LLM, EngineArgs\n'
            'engine_args = EngineArgs(model="facebook/opt-125m", max_model_len=2 * 1024, enforce_eager=True)\n'
            'llm = LLM(**asdict(engine_args), seed=0)\n'
            'settings = {"model": "Qwen/Qwen2.5-0.5B", "gpu_memory_utilization": 0.5}\n'
            'other = LLM(**settings)\n'
            'unknown = LLM(**load_settings())\n')
    first, second, third = import_text(text)
    assert (first.name, first.model, first.engine) == ("llm", "facebook/opt-125m",
                                                       {"max_model_len": 2048, "enforce_eager": True, "seed": 0})
    assert (second.name, second.model, second.engine) == ("other", "Qwen/Qwen2.5-0.5B", {"gpu_memory_utilization": 0.5})
    assert [m.text for m in third.messages] == ["**load_settings(): not read: write each engine argument as name=value in "
                                                "the call"]
