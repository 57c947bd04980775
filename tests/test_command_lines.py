"""Command lines in and out: the article's commands (``shared/testdata/seed-commands.txt``, as given) each
import, naming exactly the flags that are options of neither vLLM nor ms-swift and keeping the rest where
it belongs; export then import gives back the same configuration in all four forms, for every shipped
preset and every imported command; malformed input is named; trust_remote_code still asks."""
from __future__ import annotations

from pathlib import Path

import pytest

from workbench.presets import store
from workbench.presets.checks import check_preset
from workbench.presets.command_in import CHECK, NON_OPTION, import_block, import_text, to_document
from workbench.presets.command_out import FORMS, PYTHON, SERVE, SWIFT, YAML, deployment_of, export_command
from workbench.presets.command_text import CommandTextError, decode
from workbench.presets.document import parse_preset
from workbench.presets.machine import Machine
from workbench.presets.resolve import resolve_preset
from workbench.presets.trust import is_trusted, remember_trust
from preset_fixtures import config_folder, facts  # noqa: F401  (fixtures)

SEED = Path(__file__).resolve().parents[2] / "shared" / "testdata" / "seed-commands.txt"  # ../shared, beside the checkout
if not SEED.exists():  # the checkout's own shared/ folder (a device call carries it), then this machine's
    SEED = next((path for path in (Path(__file__).resolve().parents[1] / "shared" / "testdata" / "seed-commands.txt",
                                   Path("/work/shared/testdata/seed-commands.txt")) if path.exists()), SEED)
CPU = Machine("cpu", 0, 0, 0, 24 << 30)
TWO_GPUS = Machine("cuda", 2, 140 << 30, 139 << 30, 2 << 40)
QWEN_VL = "Qwen/Qwen2.5-VL-3B-Instruct"

# Per block of the article, in order: the flags named as non-options, and values kept.
# --max_batch_size is ms-swift's, but for its transformers backend only: on a vllm line it does nothing.
# --enable_chunked_prefill and --trust_remote_code are vLLM's but not ms-swift's (ms-swift's list has only
# the --vllm_ spellings and --vllm_engine_kwargs): named, and kept as vLLM's options.
EXPECTED = [
    (set(), dict(model=QWEN_VL, env={"CUDA_VISIBLE_DEVICES": "0"},
                 engine=dict(gpu_memory_utilization=0.9, max_model_len=32768, enable_prefix_caching=True))),
    (set(), dict(model=QWEN_VL, env={"CUDA_VISIBLE_DEVICES": "0,1"}, batch_input="AI-ModelScope/LaTeX_OCR",
                 sampling=dict(max_tokens=2048),
                 engine=dict(gpu_memory_utilization=0.9, tensor_parallel_size=2, max_model_len=32768))),
    ({"--max_batch_size"}, dict(engine=dict(max_num_seqs=512))),
    ({"--vllm_quantization_bit"}, dict(engine=dict(quantization="awq"))),
    ({"--enable_chunked_prefill", "--chunked_prefill_size"},
     dict(engine=dict(max_model_len=65536, enable_chunked_prefill=True))),
    (set(), dict(model="Qwen/Qwen2.5-14B-Chat", env={"CUDA_VISIBLE_DEVICES": "0,1,2,3"},
                 engine=dict(tensor_parallel_size=4, gpu_memory_utilization=0.85, max_num_seqs=1024,
                             enable_prefix_caching=True, max_model_len=8192))),
    (set(), dict(sampling=dict(max_tokens=1024), engine=dict(gpu_memory_utilization=0.8, quantization="awq"))),
    ({"--enable_dynamic_batching", "--dynamic_batching_window_size"}, dict(engine=dict(max_num_seqs=1024))),
    ({"--trust_remote_code", "--use_flash_attn"}, dict(engine=dict(max_model_len=16384, trust_remote_code=True))),
]
# The article's scenario table (its last block, comment lines "scenario: flags"), each line a fragment.
SCENARIOS = {
    "low latency": ({"--max_batch_size"}, dict(max_num_seqs=64)),
    "high throughput": ({"--enable_dynamic_batching"}, dict(max_num_seqs=512)),
    "memory-limited": (set(), dict(quantization="awq", gpu_memory_utilization=0.8)),
    "multimodal": (set(), dict()),
    "long text": ({"--enable_chunked_prefill"}, dict(max_model_len=65536, enable_chunked_prefill=True)),
}


def seed_blocks() -> list[str]:
    """The file as given, split at blank lines, its leading comment lines skipped."""
    lines = SEED.read_text(encoding="utf-8").splitlines()
    while lines and (lines[0].startswith("#") or not lines[0].strip()):
        lines.pop(0)
    return [b for b in "\n".join(lines).split("\n\n") if b.strip()]


def test_every_article_block_imports_naming_exactly_its_non_options():
    blocks = seed_blocks()
    assert len(blocks) == len(EXPECTED) + 1, "nine commands, then the scenario table"
    imported = import_text("\n\n".join(blocks))
    assert len(imported) == len(EXPECTED), "the table is comments only: not a command"
    for number, (result, (non_options, kept)) in enumerate(zip(imported, EXPECTED), start=1):
        assert result.error is None, (number, result.error)
        assert result.form == SWIFT, number
        assert result.non_options() == non_options, (number, [m.text for m in result.messages])
        named = [m.flag for m in result.messages if m.kind == NON_OPTION]
        assert len(named) == len(set(named)), f"block {number}: one message a flag"
        assert result.engine == kept["engine"], number
        assert result.model == kept.get("model") and result.env == kept.get("env", {}), number
        assert result.sampling == kept.get("sampling", {}) and result.batch_input == kept.get("batch_input"), number
        assert not [m for m in result.messages if m.kind == CHECK], number  # the GPUs named fit the TP size


def test_non_option_messages_name_the_nearest_real_option():
    by_flag = {m.flag: m.text for r in import_text(SEED.read_text()) for m in r.messages if m.kind == NON_OPTION}
    assert "vllm_max_num_seqs" in by_flag["--max_batch_size"] and "transformers backend" in by_flag["--max_batch_size"]
    assert "--vllm_quantization" in by_flag["--vllm_quantization_bit"]
    assert "max_num_batched_tokens" in by_flag["--chunked_prefill_size"]
    assert "--vllm_engine_kwargs" in by_flag["--enable_chunked_prefill"]
    assert "max_num_seqs" in by_flag["--enable_dynamic_batching"]
    assert "attn_impl" in by_flag["--use_flash_attn"] and "attention_backend" in by_flag["--use_flash_attn"]
    assert "allow it for this model" in by_flag["--trust_remote_code"]


def test_the_articles_scenario_table_lines_import_as_fragments():
    table = seed_blocks()[-1].splitlines()[1:]
    for line in table:
        scenario, _, flags = line.lstrip("# ").partition(":")
        non_options, engine = SCENARIOS[scenario.strip()]
        result = import_block(flags.strip())
        assert result.error is None and result.non_options() == non_options, (scenario, result.messages)
        assert result.engine == engine, scenario
    multimodal = import_block(dict(s.lstrip("# ").split(":", 1) for s in table)["multimodal"].strip())
    assert multimodal.env == {"MAX_PIXELS": "1003520"}
    assert multimodal.engine_tables == {"limit_mm_per_prompt": {"image": 5}, "mm_processor_kwargs": {"max_pixels": 1003520}}


def test_imported_presets_are_valid_preset_files_with_their_origin():
    for number, result in enumerate(import_text(SEED.read_text()), start=1):
        document = to_document(result, f"article {number}")
        again = parse_preset(document.text().encode(), "x.toml")  # what the user folder will hold
        assert again.engine() == result.engine and again.origin()["command"] == result.source
        problems = check_preset(again, TWO_GPUS, None)
        if number == 6:
            assert [p.key for p in problems] == ["engine.tensor_parallel_size"], "4 ranks, 2 GPUs here"
            assert "valid: 1 to 2" in problems[0].message
        else:
            assert problems == [], (number, problems)


def round_trip(deployment, form: str, machine: Machine, facts):
    text = export_command(deployment, form)
    (back,) = import_text(text)
    assert back.error is None and back.non_options() == set(), (form, text, back.messages)
    return deployment_of(to_document(back, "back"), machine, "/app/model", facts), text


@pytest.mark.parametrize("form", FORMS)
def test_every_shipped_preset_round_trips(form, facts):
    for entry in store.load_catalog().entries.values():
        for machine in (CPU, TWO_GPUS):
            deployment = deployment_of(entry.document, machine, facts.path, facts)
            back, text = round_trip(deployment, form, machine, facts)
            assert back.same_as(deployment), (entry.name, form, text, back, deployment)


@pytest.mark.parametrize("form", FORMS)
def test_every_imported_article_command_round_trips(form, facts):
    for result in import_text(SEED.read_text()):
        deployment = deployment_of(to_document(result, "article"), TWO_GPUS, "/app/model", facts)
        back, text = round_trip(deployment, form, TWO_GPUS, facts)
        assert back.same_as(deployment), (form, text)
        if form == SWIFT:
            assert back.batch_input == deployment.batch_input


def test_export_writes_only_what_differs_from_vllms_defaults_and_marks_machine_values(facts):
    document = store.load_catalog().entries["balanced"].document
    document.set_engine_value("tensor_parallel_size", 1)  # vLLM's default: not written
    deployment = deployment_of(document, CPU, facts.path, facts)
    serve = export_command(deployment, SERVE)
    assert "--tensor-parallel-size" not in serve and "--gpu-memory-utilization" not in serve
    assert "--max-num-seqs 64" in serve and "--enable-prefix-caching" in serve
    assert "# --block-size 32: resolved for this machine (the cpu value)" in serve
    assert "block-size: 32  # resolved for this machine: the cpu value" in export_command(deployment, YAML)
    assert "block_size=32,  # resolved for this machine: the cpu value" in export_command(deployment, PYTHON)
    swift = export_command(deployment, SWIFT)
    assert "--vllm_max_num_seqs 64" in swift and "--vllm_enable_prefix_caching true" in swift
    assert '"block_size": 32' in swift and "--max_new_tokens 256" in swift
    on_gpu = export_command(deployment_of(document, TWO_GPUS, facts.path, facts), SERVE)
    assert "--gpu-memory-utilization 0.85" in on_gpu and "--block-size 16" in on_gpu


def test_export_on_a_demo_model_names_its_folder(facts, tmp_path, monkeypatch):
    """``vllm serve demo`` would look for a Hub repository named "demo": every form names the demo's folder."""
    from workbench.engine.demo_model import demo_model_dir
    from workbench.engine.demo_vl_model import demo_vl_model_dir
    from workbench.engine.spec import DEMO_MODEL, DEMO_VL_MODEL

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path))
    document = store.load_catalog().entries["balanced"].document
    for demo, folder in ((DEMO_MODEL, demo_model_dir()), (DEMO_VL_MODEL, demo_vl_model_dir())):
        deployment = deployment_of(document, CPU, demo, facts)
        assert deployment.model == str(folder) and str(tmp_path) in deployment.model
        assert export_command(deployment, SERVE).startswith(f"vllm serve {folder} ")
        assert f"model: \"{folder}\"" in export_command(deployment, YAML)
    assert deployment_of(document, CPU, "/app/model", facts).model == "/app/model"  # any other model as named


SERVE_LINE = """CUDA_VISIBLE_DEVICES=0,1 vllm serve Qwen/Qwen2.5-7B-Instruct \\
    --tensor-parallel-size=2 --max_model_len 8192 \\
    --no-enable-prefix-caching --enforce-eager --enable-chunked-prefill false \\
    --host 0.0.0.0 --port 8000 --max-batch-size 8 --max-num-seq 4
"""


def test_a_vllm_serve_line_with_every_spelling():
    (result,) = import_text(SERVE_LINE)
    assert result.form == SERVE and result.model == "Qwen/Qwen2.5-7B-Instruct"
    # --max-num-seq is a unique prefix of --max-num-seqs, which vLLM's parser takes as it
    assert result.engine == dict(tensor_parallel_size=2, max_model_len=8192, enable_prefix_caching=False,
                                 enforce_eager=True, enable_chunked_prefill=False, max_num_seqs=4)
    assert result.server == {"host": "0.0.0.0", "port": 8000}, "server options are vLLM's: kept for Serve"
    assert result.non_options() == {"--max-batch-size"}
    assert "max_num_seqs" in [m.text for m in result.messages if m.flag == "--max-batch-size"][0]
    said = [m.text for m in result.messages if m.flag == "--enable-chunked-prefill"][0]
    assert "would refuse" in said and "--no-enable-chunked-prefill" in said
    assert result.visible_devices == "0,1"


def test_tensor_parallel_against_the_commands_own_gpus():
    (result,) = import_text("CUDA_VISIBLE_DEVICES=0 swift infer --model m --vllm_tensor_parallel_size 2")
    (check,) = [m for m in result.messages if m.kind == CHECK]
    assert "CUDA_VISIBLE_DEVICES=0 names 1 GPU(s)" in check.text and "CUDA_VISIBLE_DEVICES=0,1" in check.text


def test_tensor_parallel_against_this_machines_visible_gpus():
    from workbench.presets.checks import check_tensor_parallel

    narrowed = Machine("cuda", 2, 140 << 30, 139 << 30, 2 << 40, visible_devices="1")
    problem = check_tensor_parallel(2, narrowed)
    assert "CUDA_VISIBLE_DEVICES=1 leaves 1" in problem.message and "unset CUDA_VISIBLE_DEVICES" in problem.message
    assert check_tensor_parallel(2, TWO_GPUS) is None
    assert "no GPU" in check_tensor_parallel(2, CPU).message


MALFORMED = [
    ("", "nothing to import"),
    ("   \n\n  ", "nothing to import"),
    ("# only a comment\n", "only comments"),
]


@pytest.mark.parametrize("text, expected", MALFORMED)
def test_empty_input_is_named(text, expected):
    with pytest.raises(CommandTextError, match=expected):
        import_text(text)


@pytest.mark.parametrize("text, expected", [
    ("swift infer --vllm_limit_mm_per_prompt '{\"image\": 5}", "quotes do not balance"),
    ("llm = LLM(model='m', max_num_seqs=\n", "not valid Python"),
    ("model: m\nmax-num-seqs: [1,\n", "not a valid YAML config"),
])
def test_unreadable_commands_say_why(text, expected):
    (result,) = import_text(text)
    assert result.error and expected in result.error


def test_a_flag_missing_its_value_or_with_a_bad_one():
    (result,) = import_text("vllm serve m --max-model-len --enforce-eager --gpu-memory-utilization lots")
    texts = [m.text for m in result.messages]
    assert any(t.startswith("--max-model-len: --max-model-len needs a value") for t in texts), texts
    assert any("invalid float value: 'lots'" in t for t in texts), texts
    assert result.engine == {"enforce_eager": True}, "the rest is kept"
    (default,) = import_text("vllm serve m --quantization None --max-num-seqs 8")
    assert default.engine == {"max_num_seqs": 8} and not default.messages
    (swift,) = import_text("swift infer --enable_chunked_prefill maybe")
    assert swift.non_options() == {"--enable_chunked_prefill"} and "expected true or false" in swift.messages[0].text
    assert len(swift.messages) == 1 and swift.engine == {}
    (stray,) = import_text("vllm serve m --max-model-len 1024 stray")
    assert stray.engine == {"max_model_len": 1024} and "stray: stands alone after --max-model-len 1024" in \
        stray.messages[0].text


def test_a_binary_file_is_named():
    with pytest.raises(CommandTextError, match="binary data"):
        decode(b"\x7fELF\x00\x00\x01", "a.out")
    with pytest.raises(CommandTextError, match="not UTF-8"):
        decode(b"vllm serve \xff\xfe", "cmd.sh")


def test_python_and_yaml_forms():
    (python,) = import_text("from vllm import LLM\nllm = LLM('m', max_num_seqs=8, enforce_eager=True, foo_bar=1)\n"
                            "params = SamplingParams(temperature=0.2, max_tokens=64)\n")
    assert python.form == PYTHON and python.model == "m" and python.engine == dict(max_num_seqs=8, enforce_eager=True)
    assert python.sampling == dict(temperature=0.2, max_tokens=64) and python.non_options() == {"foo_bar"}
    (spread,) = import_text("llm = LLM(model='m', **settings)")
    assert spread.messages[0].text.startswith("**settings: not read") and spread.model == "m"
    (yaml,) = import_text("model: m\nmax-num-seqs: 8\nenable-prefix-caching: false\nswap-space: 4\n")
    assert yaml.form == YAML and yaml.engine == dict(max_num_seqs=8, enable_prefix_caching=False)
    assert yaml.non_options() == {"--swap-space"}, "vLLM's own loader reads the YAML as its flags"


def test_trust_remote_code_from_a_command_still_asks_per_model(facts):
    (result,) = import_text(f"vllm serve {facts.path} --trust-remote-code --max-model-len 1024")
    assert result.engine["trust_remote_code"] is True
    assert any("allow it for this model" in m.text for m in result.messages)
    document = parse_preset(to_document(result, "x").text().encode(), "x.toml")
    from workbench.engine.spec import EngineConfig

    resolved = resolve_preset(document, EngineConfig(model=facts.path), CPU, facts)
    assert resolved.needs_trust and "trust_remote_code" not in dict(resolved.config.extra)
    assert not is_trusted(facts.path)
    remember_trust(facts.path)
    resolved = resolve_preset(document, EngineConfig(model=facts.path), CPU, facts)
    assert not resolved.needs_trust and dict(resolved.config.extra)["trust_remote_code"] is True


# ------------------------------------------------------------------ the dialogs (real parsing, no engine)
@pytest.fixture
def panel(qtbot, facts):
    from workbench.engine.spec import EngineConfig
    from workbench.model.app_model import AppModel
    from workbench.ui.preset_panel import PresetPanel

    widget = PresetPanel(AppModel(EngineConfig(model=facts.path)), abort=lambda _r: None, restart=lambda: 0)
    qtbot.addWidget(widget)
    return widget


def test_export_as_shows_each_form_one_copy_away(panel, qtbot):
    from PySide6.QtGui import QGuiApplication

    panel.choose("low-latency")
    dialog = panel.export_as(show=False)
    qtbot.addWidget(dialog)
    assert dialog.text.isReadOnly() and dialog.text.toPlainText().startswith("vllm serve ")
    assert "--max-num-seqs 8" in dialog.text.toPlainText()
    for form in FORMS:
        dialog.choose(form)
        assert dialog.text.toPlainText() == export_command(dialog.deployment, form)
    dialog.copy_button.click()
    assert QGuiApplication.clipboard().text() == export_command(dialog.deployment, SWIFT)


def test_import_dialog_lists_messages_per_command_and_saves_presets(panel, qtbot, tmp_path):
    dialog = panel.import_command(show=False)
    qtbot.addWidget(dialog)
    dialog.paste.setPlainText("")
    with qtbot.waitSignal(dialog.read_done):
        dialog.read()
    assert "nothing to import" in dialog.status.text() and not dialog.import_button.isEnabled()
    (tmp_path / "cmd.txt").write_bytes(SEED.read_bytes())
    with qtbot.waitSignal(dialog.read_done):
        dialog.open_file(str(tmp_path / "cmd.txt"))
    shown = dialog.messages.toPlainText()
    assert "Command 9 (ms-swift); keeps max_model_len=16384, trust_remote_code=True" in shown and "Command 10" not in shown
    last = shown[shown.index("Command 9"):]
    said = [m.text for m in dialog.results[8].messages]
    assert [t.split(":")[0] for t in said] == ["--trust_remote_code true", "--use_flash_attn true"]
    assert all(t in last for t in said), "each message shown"
    outcome = last[:last.index(said[0])]
    assert "--vllm_max_model_len 16384" in outcome and "engine argument" in outcome, "what each option became"
    assert "8 flag(s) that are not options named" in dialog.status.text()
    dialog.name.setText("article")
    asked = []
    saved = dialog.import_presets(allow_trust=lambda model: asked.append(model) or False)
    assert [p.stem for p in saved] == [f"article-{i}" for i in range(1, 10)]
    assert asked == [panel.model.config.model], "block 9 has no --model: the app's model is the one asked about"
    assert not is_trusted(panel.model.config.model), "refused: not remembered"
    dialog.done(0)
    assert panel.choice.currentText() == "article-9" and "article-2" in panel.catalog.names()
    panel.choose("article-2")
    assert "batch input AI-ModelScope/LaTeX_OCR, the first 1,000 rows" in panel.origin.text()
    assert "CUDA_VISIBLE_DEVICES=0,1" in panel.origin.text()
    (tmp_path / "bin").write_bytes(b"\x00\x01\x02")
    dialog.open_file(str(tmp_path / "bin"))
    assert "binary data" in dialog.status.text()


def test_import_dialog_trust_yes_is_remembered_for_that_model(panel, qtbot):
    dialog = panel.import_command(show=False)
    qtbot.addWidget(dialog)
    dialog.paste.setPlainText("vllm serve Org/Model --trust-remote-code")
    with qtbot.waitSignal(dialog.read_done):
        dialog.read()
    dialog.import_presets(allow_trust=lambda model: True)
    assert is_trusted("Org/Model") and not is_trusted(panel.model.config.model)


def test_nothing_saved_replaces_a_preset_unasked(panel, qtbot, tmp_path):
    """Import command line, Save as and Import file each ask before a preset of the same name is replaced; the
    import dialog suggests a name no preset has; a shipped name is a taken one (saving would hide the shipped)."""
    assert store.taken_by("balanced") == "shipped" and store.taken_by("mine") == ""
    assert store.free_name("balanced") == "balanced-2"
    dialog = panel.import_command(show=False)
    qtbot.addWidget(dialog)
    assert dialog.name.text() == "imported"
    dialog.paste.setPlainText("vllm serve Org/Model --max-num-seqs 8")
    with qtbot.waitSignal(dialog.read_done, timeout=120_000):
        dialog.read()
    first = dialog.import_presets(allow_replace=lambda names: pytest.fail(f"asked about {names}"))
    assert [p.stem for p in first] == ["imported"] and store.taken_by("imported") == "user"
    again = panel.import_command(show=False)
    qtbot.addWidget(again)
    assert again.name.text() == "imported-2", "the next import suggests a free name"
    again.name.setText("imported")
    again.paste.setPlainText("vllm serve Org/Other --max-num-seqs 16")
    with qtbot.waitSignal(again.read_done, timeout=120_000):
        again.read()
    asked = []
    assert again.import_presets(allow_replace=lambda names: asked.append(names) or False) == []
    assert asked == [["imported"]] and "Nothing imported" in again.status.text()
    assert "max_num_seqs = 8" in store.user_path("imported").read_text(), "the first import kept"
    assert [p.stem for p in again.import_presets(allow_replace=lambda names: True)] == ["imported"]
    assert "max_num_seqs = 16" in store.user_path("imported").read_text()

    panel.reload("balanced")
    panel.confirm_replace = lambda names: asked.append(names) or False
    assert panel.save_as("imported") is None and asked[-1] == ["imported"]
    assert "max_num_seqs = 16" in store.user_path("imported").read_text(), "kept: the user said no"
    assert panel.save_as("balanced") is not None, "its own name: the user's edit of it, nothing else replaced"
    assert len(asked) == 2
    outside = tmp_path / "from-a-colleague.toml"
    outside.write_text('[preset]\nname = "imported"\n[engine]\nmax_num_seqs = 4\n')
    assert panel.import_file(str(outside)) is None and asked[-1] == ["imported"]
    assert "max_num_seqs = 16" in store.user_path("imported").read_text()
    panel.confirm_replace = lambda names: True
    assert panel.import_file(str(outside)) == store.user_path("imported")
    assert "max_num_seqs = 4" in store.user_path("imported").read_text()
