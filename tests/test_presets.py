"""Presets without an engine: shipped files valid, invalid ones refused naming key, value and choices,
broken user files reported while the others load, names that never become paths, comments kept,
values resolved per platform and per CPU feature (read as another machine's CPU from its cpuinfo
file), the capacity arithmetic, and start-failure advice with its retry."""
from __future__ import annotations

from pathlib import Path

import pytest
from chat_driver import HANG_TIMEOUT_MS

from workbench.engine.engine_log import read_log
from workbench.engine.spec import EngineConfig
from workbench.engine.start_failure import explain_start_failure, retry_label
from workbench.presets import store
from workbench.presets.capacity import plan_capacity
from workbench.presets.checks import check_preset
from workbench.presets.document import PresetFileError, parse_preset
from workbench.presets.machine import CPUINFO_ENV, Machine, parse_cpuinfo, read_cpu_features, this_machine
from workbench.presets.model_facts import read_model_facts
from workbench.presets.resolve import resolve_preset
from preset_fixtures import config_folder, facts  # noqa: F401  (fixtures)

CPU = Machine("cpu", 0, 0, 0, 24 << 30)
ONE_GPU = Machine("cuda", 1, 140 << 30, 139 << 30, 2 << 40)
LOGS = Path(__file__).parent / "data" / "engine_logs"
CPUINFO = Path(__file__).parent / "data" / "cpuinfo"
MILAN = CPUINFO / "epyc-7763-milan.txt"  # AVX2, no AVX-512, no AMX (Zen 3)
SAPPHIRE_RAPIDS = CPUINFO / "xeon-8480-sapphire-rapids.txt"  # AVX-512 and AMX


def preset(engine: str, sampling: str = "") -> object:
    return parse_preset(f'[preset]\nname = "t"\n[engine]\n{engine}\n[sampling]\n{sampling}\n'.encode(), "t.toml")


def test_every_shipped_preset_is_valid_here_and_on_a_gpu(facts):
    catalog = store.load_catalog()
    assert catalog.names()[0] == "balanced"
    assert set(catalog.names()) == {"balanced", "low-latency", "high-throughput", "long-context", "memory-limited",
                                    "multimodal"}
    for entry in catalog.entries.values():
        for machine in (CPU, ONE_GPU):
            assert problem_keys(check_preset(entry.document, machine, facts)) == on_a_text_model(entry), entry.name
        assert "#" in entry.document.text(), "each value's reason is a comment in the file"


def on_a_text_model(entry) -> list[str]:
    """The first problem a shipped preset has on a text model (the test's): the multimodal one needs a
    vision model (tests/test_preset_images.py checks it on vision models); the others have none."""
    return ["preset.needs_vision_model"] if entry.document.needs_vision_model else []


def problem_keys(problems) -> list[str]:
    """The first problem's key: the one that refuses the preset (the multimodal one's sizes are a vision
    model's, so that a text model's shorter context may add more)."""
    return [p.key for p in problems][:1]


INVALID = [  # engine lines, sampling lines, then what the message must name
    ("enable_dynamic_batching = true", "", ["engine.enable_dynamic_batching", "True", "not a vLLM option",
                                             "max_num_seqs"]),
    ("dynamic_batching_window_size = 5", "", ["engine.dynamic_batching_window_size", "5", "not a vLLM option",
                                              "max_num_batched_tokens"]),
    ("max_batch_size = 32", "", ["engine.max_batch_size", "32", "not a vLLM option", "max_num_seqs"]),
    ("vllm_quantization_bit = 4", "", ["engine.vllm_quantization_bit", "4", "not a vLLM option", "quantization"]),
    ("swap_space = 4", "", ["engine.swap_space", "4", "removed", "kv_offloading_size"]),
    ("vllm_max_model_len = 8192", "", ["engine.vllm_max_model_len", "8192", "the vLLM option is max_model_len"]),
    ("max_num_seq = 8", "", ["engine.max_num_seq", "8", "Did you mean max_num_seqs"]),
    ('kv_cache_dtype = "fp9"', "", ["engine.kv_cache_dtype", "'fp9'", "'auto'", "'fp8'", "'bfloat16'"]),
    ('scheduling_policy = "lifo"', "", ["engine.scheduling_policy", "'lifo'", "'fcfs'", "'priority'"]),
    ('quantization = "nonsense"', "", ["engine.quantization", "'nonsense'", "'awq'", "'gptq'"]),
    ("gpu_memory_utilization = 1.5", "", ["engine.gpu_memory_utilization", "1.5", "0.05 to 0.99"]),
    ("max_num_seqs = 0", "", ["engine.max_num_seqs", "0", "1 to 16384"]),
    ('max_num_seqs = "many"', "", ["engine.max_num_seqs", "'many'", "wrong type str", "int"]),
    ('enable_prefix_caching = "yes"', "", ["engine.enable_prefix_caching", "'yes'", "bool"]),
    ("block_size = 16", "", ["engine.block_size", "16", "multiple of 32", "32, 64, 128"]),
    ("tensor_parallel_size = 2", "", ["engine.tensor_parallel_size", "2", "no GPU", "valid: 1 to 1"]),
    ("max_model_len = 65536", "", ["engine.max_model_len", "65536", "model's context (4096", "32 to 4096"]),
    ('quantization = "awq"', "", ["engine.quantization", "'awq'", "no awq weights", "'auto'"]),
    ('max_num_seqs = "model max"', "", ["engine.max_num_seqs", "'model max'", "max_model_len only"]),
    ('model = "Qwen/Qwen2.5-7B"', "", ["engine.model", "'Qwen/Qwen2.5-7B'", "Choose model"]),
    ("", "temperature = 3.0", ["sampling.temperature", "3.0", "0.0 to 2.0"]),
    ("", "top_p = 0.0", ["sampling.top_p", "0.0", "0.01 to 1.0"]),
]


@pytest.mark.parametrize("engine, sampling, expected", INVALID, ids=[e[2][0] for e in INVALID])
def test_invalid_preset_is_refused_naming_key_value_and_choices(facts, engine, sampling, expected):
    problems = check_preset(preset(engine, sampling), CPU, facts)
    assert len(problems) == 1, problems
    for part in expected:
        assert part in problems[0].message, (part, problems[0].message)
    assert problems[0].key == expected[0]


def test_memory_limited_states_its_budget_above_vllms_share():
    document = store.load_catalog().entries["memory-limited"].document
    assert document.gpu_memory_budget == 0.5
    assert document.engine()["gpu_memory_utilization"]["cuda"] < document.gpu_memory_budget  # room for the rest
    assert store.load_catalog().entries["balanced"].document.gpu_memory_budget is None


def test_machine_checks_on_a_gpu(facts):
    problems = check_preset(preset('tensor_parallel_size = 4\nquantization = "fp8"'), ONE_GPU, facts)
    assert [p.key for p in problems] == ["engine.tensor_parallel_size"]  # fp8 quantizes at load on CUDA
    assert "1 GPU(s)" in problems[0].message and "valid: 1 to 1" in problems[0].message


BROKEN = [
    (b'[engine]\nmax_num_seqs = = 4\n', ["bad-toml.toml", "line 2", "not valid TOML"]),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", ["binary.toml", "binary data"]),
    (b"  \n\n", ["empty.toml", "the file is empty"]),
    (b'[sampling]\ntemperature = "hot"\n', ["wrong-type.toml", "sampling.temperature", "'hot'", "wrong type"]),
    (b'engine = 5\n', ["engine-not-table.toml", "'engine' must be a table"]),
    (b'[engine]\nblock_size = { cpu = 32, rocm = 16 }\n', ["platform.toml", "engine.block_size",
                                                        "cpu, cpu_avx512 and cuda"]),
    (b'[preset]\ngpu_memory_budget = 1.5\n', ["budget.toml", "preset.gpu_memory_budget = 1.5", "at most 1"]),
]


def test_broken_user_presets_are_reported_and_the_others_load():
    folder = store.user_dir()
    names = []
    for data, expected in BROKEN:
        (folder / expected[0]).write_bytes(data)
        names.append(expected[0])
    (folder / "mine.toml").write_text('[preset]\nname = "mine"\n[engine]\nmax_num_seqs = 4\n')
    catalog = store.load_catalog()
    assert "mine" in catalog.names() and "balanced" in catalog.names()
    assert len(catalog.problems) == len(BROKEN)
    messages = {Path(p.path).name: str(p) for p in catalog.problems}
    for _data, expected in BROKEN:
        for part in expected[1:]:
            assert part in messages[expected[0]], (part, messages[expected[0]])
    assert catalog.problems[0].line or catalog.problems[1].line  # the bad TOML names its line


@pytest.mark.parametrize("name", ["../outside", "a/b", "/etc/passwd", "..", "", "x" * 65, "name.toml", "C:\\x"])
def test_preset_names_are_not_paths(name):
    document = store.load_catalog().entries["balanced"].document
    with pytest.raises(store.PresetNameError):
        store.save_user_preset(document, name)
    assert not any(store.user_dir().parent.parent.rglob("outside*"))


def test_saving_keeps_comments_and_edits_and_reset_restores(facts):
    catalog = store.load_catalog()
    document = catalog.entries["balanced"].document
    document.set_engine_value("max_num_seqs", 12)
    path = store.save_user_preset(document, "balanced")
    assert path.parent == store.user_dir().resolve()
    text = path.read_text()
    assert "# Up to 64 sequences in one batch" in text and "max_num_seqs = 12" in text
    edited = store.load_catalog().entries["balanced"]
    assert edited.source == "edited" and edited.document.engine()["max_num_seqs"] == 12
    assert store.reset_shipped("balanced")
    assert store.load_catalog().entries["balanced"].document.engine()["max_num_seqs"] == 64


def test_import_and_export(tmp_path):
    document = store.load_catalog().entries["low-latency"].document
    exported = store.export_preset(document, tmp_path / "out.toml")
    text = exported.read_text().replace('name = "low-latency"', 'name = "my fast"')
    exported.write_text(text)
    imported = store.import_preset(exported)
    assert imported == store.user_dir().resolve() / "my fast.toml"
    assert store.load_catalog().entries["my fast"].source == "user"
    (tmp_path / "bad.toml").write_bytes(b"")
    with pytest.raises(PresetFileError, match="empty"):
        store.import_preset(tmp_path / "bad.toml")


def test_values_resolve_per_platform(facts):
    base = EngineConfig(model=facts.path, scheduling_policy="priority")
    document = store.load_catalog().entries["long-context"].document
    on_cpu = resolve_preset(document, base, CPU, facts)
    on_gpu = resolve_preset(document, base, ONE_GPU, facts)
    assert on_cpu.config.max_model_len == on_gpu.config.max_model_len == 4096  # "model max"
    assert (on_cpu.config.block_size, on_gpu.config.block_size) == (32, 16)
    assert on_cpu.config.gpu_memory_utilization is None and on_cpu.config.kv_cache_memory_bytes == 1 << 30
    assert on_gpu.config.gpu_memory_utilization == 0.9 and on_gpu.config.kv_cache_memory_bytes is None
    assert on_cpu.config.scheduling_policy == "priority", "the app's own settings stay"
    assert on_cpu.sampling.max_tokens == 1024 and on_cpu.sampling.temperature == 0.5


def test_trust_remote_code_needs_the_users_word_per_model(facts):
    from workbench.presets.trust import remember_trust

    base = EngineConfig(model=facts.path)
    resolved = resolve_preset(preset("trust_remote_code = true"), base, CPU, facts)
    assert resolved.needs_trust and "trust_remote_code" not in dict(resolved.config.extra)
    remember_trust(facts.path)
    resolved = resolve_preset(preset("trust_remote_code = true"), base, CPU, facts)
    assert not resolved.needs_trust and dict(resolved.config.extra)["trust_remote_code"] is True
    other = resolve_preset(preset("trust_remote_code = true"), EngineConfig(model="/elsewhere"), CPU, facts)
    assert other.needs_trust


def test_cpu_capacity_arithmetic(facts):
    """On CPU the pool is set in bytes: 2 layers × 1 KV head × 64 × 2 bytes (float32 weights are served in
    16 bits) × 2 = 512 bytes a token; 512 MiB / (512 × 32) = 32,768 blocks; 4,096 tokens take 128 blocks,
    so 256 sequences. (The engine tests check these counts against vLLM's own.)"""
    config = EngineConfig(model=facts.path, max_model_len=4096, block_size=32, kv_cache_memory_bytes=512 << 20)
    plan = plan_capacity(config, facts, CPU)
    assert (plan.kv_bytes_per_token, plan.num_blocks, plan.max_concurrent_seqs) == (512, 32768, 256)
    fp8 = plan_capacity(config.with_changes((("kv_cache_dtype", "fp8"),)), facts, CPU)
    assert fp8.kv_bytes_per_token == 256 and fp8.num_blocks == 65536
    fp32 = plan_capacity(config.with_changes((("dtype", "float32"),)), facts, CPU)
    assert fp32.kv_bytes_per_token == 1024
    assert plan.weights_bytes == 1000 and plan.weights_from_files


def test_gpu_capacity_uses_the_share_left_after_weights(facts):
    config = EngineConfig(model=facts.path, max_model_len=4096, gpu_memory_utilization=0.5)
    plan = plan_capacity(config, facts, ONE_GPU)
    assert plan.block_size == 16 and 0 < plan.budget_bytes < 70 << 30
    assert plan.num_blocks == plan.budget_bytes // (512 * 16)


def explain(log_text: str, utilization: float | None = None):
    error = RuntimeError("Engine core initialization failed. See root cause above. Failed core proc(s): {}")
    return explain_start_failure(error, log_text, "/models/none", 4096, None, utilization)


def test_h200_out_of_memory_retries_with_less_of_the_gpu():
    message, retry = explain(read_log(LOGS / "h200-cuda-out-of-memory.log"), 0.85)
    assert retry == (("gpu_memory_utilization", 0.75),) and retry_label(retry) == "Retry with gpu_memory_utilization=0.75"
    assert "torch.OutOfMemoryError: CUDA out of memory." in message


def test_h200_free_memory_below_utilization_retries_with_what_is_free():
    message, retry = explain(read_log(LOGS / "h200-free-memory-below-utilization.log"))
    assert retry == (("gpu_memory_utilization", 0.05),)
    assert "ValueError: Free memory on device cuda:0" in message


def engine_core_log(error: str) -> str:
    return (f"(EngineCore pid=9) ERROR 11-29 22:00:00 [core.py:1] EngineCore failed to start.\n"
            f"(EngineCore pid=9) ERROR 11-29 22:00:00 [core.py:1] Traceback (most recent call last):\n"
            f"(EngineCore pid=9) ERROR 11-29 22:00:00 [core.py:1]   File \"x.py\", line 1, in f\n"
            f"(EngineCore pid=9) ERROR 11-29 22:00:00 [core.py:1] {error}\n")


def test_kv_cache_too_small_names_sizes_and_retries_shorter():
    said = ("ValueError: To serve at least one request with the model's max seq len (32768), (2.1 GiB KV cache is "
            "needed, which is larger than the available KV cache memory (1.2 GiB). Based on the available memory, "
            "the estimated maximum model length is 18724. Try increasing `gpu_memory_utilization`")
    message, retry = explain(engine_core_log(said))
    assert "max_model_len 32768 needs 2.1 GiB of KV cache, 1.2 GiB is available: use 18720, or fp8 KV cache" in message
    assert retry == (("max_model_len", 18720),)


def test_tensor_parallel_larger_than_the_gpus_retries_with_the_gpus():
    said = ("ValueError: World size (2) is larger than the number of available GPUs (1) in this node. If this is "
            "intentional and you are using:")  # vLLM's text (config/parallel.py), raised on CUDA only
    message, retry = explain(engine_core_log(said))
    assert "tensor parallelism asks for 2 GPUs, and this machine has 1" in message
    assert retry == (("tensor_parallel_size", 1),)


def test_quantization_the_files_lack_retries_without_it():
    said = ("ValueError: Quantization method specified in the model config (gptq) does not match the quantization "
            "method specified in the `quantization` argument (awq).")
    message, retry = explain(engine_core_log(said))
    assert "the model lacks the requested quantization awq (its files are quantized with gptq)" in message
    assert retry == (("quantization", None),) and retry_label(retry) == "Retry with quantization=auto"


class ValidationError(ValueError):
    """Stands for pydantic's: vLLM raises these config errors in the app's process, before any engine starts."""


def explain_captured(cause: str, max_model_len: int = 4096):
    """A start failure captured on the H200 (packaging/gpu_start_failures.py --only config): vLLM's words and
    the engine log of that start, as they came."""
    said = (LOGS / f"h200-{cause}.said.txt").read_text(encoding="utf-8").rstrip("\n")
    error = ValidationError(said)
    return explain_start_failure(error, read_log(LOGS / f"h200-{cause}.log"), "/models/none", max_model_len)


def test_h200_tensor_parallel_above_the_gpus_present():
    message, retry = explain_captured("tensor-parallel-too-large")
    assert message.startswith("The engine did not start: tensor parallelism asks for 4 GPUs, and this machine has 2.")
    assert "Use tensor_parallel_size=2" in message
    assert "World size (4) is larger than the number of available GPUs (2) in this node" in message  # vLLM's words
    assert retry == (("tensor_parallel_size", 2),)


def test_h200_quantization_the_files_do_not_have():
    message, retry = explain_captured("quantization-missing")
    assert "the model lacks the requested quantization awq (its files are not quantized)" in message
    assert "Cannot find the config file for awq" in message
    assert retry == (("quantization", None),) and retry_label(retry) == "Retry with quantization=auto"


def test_h200_quantization_other_than_the_files_have():
    message, retry = explain_captured("quantization-mismatch")
    assert "the model lacks the requested quantization awq (its files are quantized with fp8)" in message
    assert "Quantization method specified in the model config (fp8) does not match" in message
    assert retry == (("quantization", None),)


def test_config_with_changes():
    config = EngineConfig(model="m", extra=(("quantization", "awq"),))
    changed = config.with_changes((("quantization", None), ("max_model_len", 1024), ("kv_cache_dtype", "fp8")))
    assert changed.max_model_len == 1024 and dict(changed.extra) == {"kv_cache_dtype": "fp8"}


SEVEN_B = dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
               num_key_value_heads=4, max_position_embeddings=32768, vocab_size=152064, torch_dtype="bfloat16")


def model_folder(tmp_path, name: str, quantization: dict | None = None):
    import json

    folder = tmp_path / name
    folder.mkdir()
    config = dict(SEVEN_B, **({"quantization_config": quantization} if quantization else {}))
    (folder / "config.json").write_text(json.dumps(config))
    return read_model_facts(folder)


def test_low_latency_takes_fp8_weights_on_a_gpu_and_the_planner_counts_them(tmp_path):
    sixteen_bit = model_folder(tmp_path, "bf16")
    document = store.load_catalog().entries["low-latency"].document
    resolved = resolve_preset(document, EngineConfig(model=sixteen_bit.path), ONE_GPU, sixteen_bit)
    assert resolved.config.option("quantization") == "fp8"
    assert check_preset(document, ONE_GPU, sixteen_bit) == []
    # Linear layers at a byte a parameter, embeddings (untied: two tables) still at two bytes.
    linear = 28 * (2 * 3584 * 3584 + 2 * 3584 * 512 + 3 * 3584 * 18944)
    embeddings = 2 * 152064 * 3584
    assert sixteen_bit.served_weights_bytes("fp8") == pytest.approx(linear + embeddings * 2, rel=1e-6)
    assert sixteen_bit.served_weights_bytes(None) == (linear + embeddings) * 2
    as_loaded, as_is = plan_capacity(resolved.config, sixteen_bit, ONE_GPU), \
        plan_capacity(resolved.config.with_changes((("quantization", None),)), sixteen_bit, ONE_GPU)
    assert as_loaded.weights_bytes == sixteen_bit.served_weights_bytes("fp8")
    assert as_loaded.budget_bytes - as_is.budget_bytes == sixteen_bit.weights_bytes - as_loaded.weights_bytes
    on_cpu = resolve_preset(document, EngineConfig(model=sixteen_bit.path), CPU, sixteen_bit)
    assert on_cpu.config.option("quantization") is None  # the CPU build has no fp8 weights


def test_a_model_quantized_already_keeps_its_own_under_low_latency(tmp_path):
    awq = model_folder(tmp_path, "awq", {"quant_method": "awq", "bits": 4})
    document = store.load_catalog().entries["low-latency"].document
    resolved = resolve_preset(document, EngineConfig(model=awq.path), ONE_GPU, awq)
    assert resolved.config.option("quantization") is None
    note = next(v.note for v in resolved.values if v.key == "quantization")
    assert note == "the model's files are quantized with awq: kept as they are"
    assert check_preset(document, ONE_GPU, awq) == []
    assert awq.served_weights_bytes("fp8") == awq.weights_bytes


def machine_with_cpu(cpuinfo: Path, monkeypatch) -> Machine:
    """This machine as the app reads it, with the processor of ``cpuinfo`` (WORKBENCH_CPUINFO)."""
    monkeypatch.setenv(CPUINFO_ENV, str(cpuinfo))
    machine = this_machine()
    assert machine.on_cpu and machine.cpu.source == str(cpuinfo)
    return machine


def test_cpu_features_are_vllms_condition_for_an_fp8_kv_cache():
    import torch

    milan, sapphire = read_cpu_features(str(MILAN)), read_cpu_features(str(SAPPHIRE_RAPIDS))
    assert milan.name == "AMD EPYC 7763 64-Core Processor" and "avx2" in milan.flags
    assert (milan.avx512, milan.amx, milan.holds_fp8_kv) == (False, False, False)
    assert (sapphire.avx512, sapphire.amx, sapphire.holds_fp8_kv) == (True, True, True)
    here = read_cpu_features()
    assert here.source == "/proc/cpuinfo"
    # What vLLM's CPU attention asks (cpu_attn._get_attn_isa), on this machine's own processor.
    assert here.avx512 == torch.cpu._is_avx512_supported() and here.amx == torch.cpu._is_amx_tile_supported()
    arm = parse_cpuinfo("processor : 0\nFeatures : fp asimd sve\n", "arm")
    assert not arm.holds_fp8_kv


def test_every_shipped_preset_is_valid_on_a_cpu_without_avx512_and_with_it(facts, monkeypatch):
    for cpuinfo in (MILAN, SAPPHIRE_RAPIDS):
        machine = machine_with_cpu(cpuinfo, monkeypatch)
        for entry in store.load_catalog().entries.values():
            assert problem_keys(check_preset(entry.document, machine, facts)) == on_a_text_model(entry), \
                (cpuinfo.name, entry.name)


def test_memory_limited_keeps_vllms_kv_dtype_where_the_cpu_has_no_fp8_kernels(facts, monkeypatch):
    document = store.load_catalog().entries["memory-limited"].document
    base = EngineConfig(model=facts.path)
    milan = resolve_preset(document, base, machine_with_cpu(MILAN, monkeypatch), facts)
    assert milan.config.option("kv_cache_dtype") is None, "vLLM's default, the model's dtype"
    note = next(v.note for v in milan.values if v.key == "kv_cache_dtype")
    assert note == ("vLLM's default; the cpu value: this CPU (AMD EPYC 7763 64-Core Processor) has neither AVX-512 "
                    f"nor AMX ({MILAN}); the cpu_avx512 value (fp8) is for CPUs with them")
    sapphire = resolve_preset(document, base, machine_with_cpu(SAPPHIRE_RAPIDS, monkeypatch), facts)
    assert sapphire.config.option("kv_cache_dtype") == "fp8"
    assert next(v.note for v in sapphire.values if v.key == "kv_cache_dtype") == "the cpu_avx512 value"
    assert resolve_preset(document, base, ONE_GPU, facts).config.option("kv_cache_dtype") == "fp8"
    planned = plan_capacity(milan.config, facts, CPU), plan_capacity(sapphire.config, facts, CPU)
    assert planned[0].kv_bytes_per_token == 2 * planned[1].kv_bytes_per_token


def test_fp8_kv_cache_on_a_cpu_without_avx512_is_refused_before_a_start(facts, monkeypatch):
    milan = machine_with_cpu(MILAN, monkeypatch)
    problems = check_preset(preset('kv_cache_dtype = "fp8"'), milan, facts)
    assert [p.key for p in problems] == ["engine.kv_cache_dtype"]
    for part in ("engine.kv_cache_dtype = 'fp8'", "only on x86 with AVX-512 or AMX",
                 "this CPU (AMD EPYC 7763 64-Core Processor) has neither AVX-512 nor AMX", str(MILAN),
                 "valid here: 'auto' (vLLM's default", 'kv_cache_dtype = { cpu = "auto", cpu_avx512 = "fp8" }'):
        assert part in problems[0].message, (part, problems[0].message)
    assert check_preset(preset('kv_cache_dtype = "fp8_e5m2"'), milan, facts) != []
    assert check_preset(preset('kv_cache_dtype = "bfloat16"'), milan, facts) == []
    per_platform = preset('kv_cache_dtype = { cpu = "auto", cpu_avx512 = "fp8", cuda = "fp8" }')
    assert check_preset(per_platform, milan, facts) == []
    sapphire = machine_with_cpu(SAPPHIRE_RAPIDS, monkeypatch)
    assert check_preset(preset('kv_cache_dtype = "fp8"'), sapphire, facts) == []
    assert check_preset(preset('kv_cache_dtype = "fp8"'), ONE_GPU, facts) == []


def test_fp8_kv_cache_for_a_head_size_of_16_is_refused_on_any_cpu(tmp_path, monkeypatch):
    import json

    folder = tmp_path / "heads16"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(dict(hidden_size=128, num_attention_heads=8, num_key_value_heads=4,
                                                        num_hidden_layers=2, max_position_embeddings=4096)))
    heads16 = read_model_facts(folder)
    assert heads16.head_size == 16
    problems = check_preset(preset('kv_cache_dtype = "fp8"'), machine_with_cpu(SAPPHIRE_RAPIDS, monkeypatch), heads16)
    assert [p.key for p in problems] == ["engine.kv_cache_dtype"]
    assert "only for a head size divisible by 32, and the model's is 16 (config.json)" in problems[0].message


def test_editing_a_per_cpu_value_edits_the_one_that_applies(monkeypatch):
    sapphire, milan = machine_with_cpu(SAPPHIRE_RAPIDS, monkeypatch), machine_with_cpu(MILAN, monkeypatch)
    table = {"cpu": "auto", "cpu_avx512": "fp8", "cuda": "fp8"}
    keys = sapphire.table_key(table), milan.table_key(table), ONE_GPU.table_key(table)
    assert keys == ("cpu_avx512", "cpu", "cuda")
    assert sapphire.table_key({"cpu": 32, "cuda": 16}) == "cpu" and milan.table_key({"cuda": 0.9}) == "cpu"


def test_fp8_kv_cache_refused_by_vllm_on_a_cpu_without_avx512_retries_with_vllms_default():
    """vLLM's words on an AMD EPYC 7763: the log of a real start that failed on this machine's CPU
    (cpu-fp8-kv-head-size-16.log, where the same function of vLLM refused the same fp8 cache), with
    the exception that function raises where the CPU has neither AVX-512 nor AMX."""
    message, retry = explain(read_log(LOGS / "cpu-fp8-kv-without-avx512.log"))
    assert message.startswith("The engine did not start: this CPU cannot hold an fp8 KV cache: vLLM's CPU build "
                              "needs x86 with AVX-512 or AMX for one.")
    assert "vLLM said (in vLLM's Worker process): NotImplementedError: FP8 KV cache on CPU requires x86 with " \
           "AVX-512 or AMX." in message
    assert retry == (("kv_cache_dtype", None),) and retry_label(retry) == "Retry with kv_cache_dtype=auto"
    fixed = EngineConfig(model="m", extra=(("kv_cache_dtype", "fp8"),)).with_changes(retry)
    assert fixed.option("kv_cache_dtype") is None and fixed.extra == ()


def test_fp8_kv_cache_refused_for_the_models_head_size_retries_with_vllms_default():
    message, retry = explain(read_log(LOGS / "cpu-fp8-kv-head-size-16.log"))
    assert "fp8 KV cache only for a head size divisible by 32" in message
    assert "NotImplementedError: FP8 KV cache requires head_size divisible by 32 on CPU." in message
    assert retry == (("kv_cache_dtype", None),)


def preset_panel(qtbot, facts, restarts: list):
    from workbench.model.app_model import AppModel
    from workbench.ui.preset_panel import PresetPanel

    widget = PresetPanel(AppModel(EngineConfig(model=facts.path)), abort=lambda _r: None,
                         restart=lambda: restarts.append(1) or 1)
    qtbot.addWidget(widget)
    return widget


def applied(qtbot, panel) -> bool:
    """Presses Apply and waits for the check that runs off the GUI thread: True when the switch went ahead."""
    with qtbot.waitSignal(panel.checked, timeout=HANG_TIMEOUT_MS) as outcome:
        assert panel.apply(), "a check started"
    return outcome.args == [True]


def values_row(panel, key: str) -> int:
    return next(r for r in range(panel.values.rowCount()) if panel.values.item(r, 0).text() == key)


def test_the_panel_on_a_cpu_without_avx512_shows_why_and_refuses_fp8_before_a_start(qtbot, facts, monkeypatch):
    monkeypatch.setenv(CPUINFO_ENV, str(MILAN))
    restarts = []
    panel = preset_panel(qtbot, facts, restarts)
    panel.choose("memory-limited")
    row = values_row(panel, "kv_cache_dtype")
    assert panel.values.cellWidget(row, 1).text() == "auto", "the value written for this CPU"
    here = panel.values.item(row, 2)
    assert "neither AVX-512 nor AMX" in here.toolTip() and "vLLM's default" in here.toolTip()
    assert "fp8 KV cache where the processor can hold one" in panel.description.text()
    assert applied(qtbot, panel) and restarts == [1]
    assert panel.model.config.option("kv_cache_dtype") is None

    store.user_dir().joinpath("mine.toml").write_text('[preset]\nname = "mine"\n[engine]\nkv_cache_dtype = "fp8"\n')
    panel.reload("mine")
    assert not applied(qtbot, panel) and restarts == [1], "nothing started"
    assert panel.problem_text.text().startswith("Not applied:\nengine.kv_cache_dtype = 'fp8': vLLM's CPU build")
    assert 'cpu_avx512 = "fp8"' in panel.problem_text.text()


def test_the_panel_edits_the_value_for_this_cpu(qtbot, facts, monkeypatch):
    monkeypatch.setenv(CPUINFO_ENV, str(SAPPHIRE_RAPIDS))
    panel = preset_panel(qtbot, facts, [])
    panel.choose("memory-limited")
    row = values_row(panel, "kv_cache_dtype")
    assert panel.values.cellWidget(row, 1).text() == "fp8" and panel.values.item(row, 2).text() == "fp8"
    editor = panel.values.cellWidget(row, 1)
    editor.setText("bfloat16")
    editor.editingFinished.emit()
    assert panel.document.engine()["kv_cache_dtype"] == {"cpu": "auto", "cpu_avx512": "bfloat16", "cuda": "fp8"}
    assert panel.resolved.config.option("kv_cache_dtype") == "bfloat16"


def test_the_table_marks_only_real_changes_and_shows_no_none(qtbot, facts):
    """vLLM's default written out is no change (not marked); a row the preset leaves unset (the CPU's KV budget)
    shows an empty editor saying so, never "None", and leaving it empty changes nothing."""
    from workbench.ui.preset_values import CHANGED, PresetValuesTable

    edits = []
    table = PresetValuesTable(lambda key, value: edits.append((key, value)))
    qtbot.addWidget(table)
    document = preset("max_num_batched_tokens = 2048\nmax_num_seqs = 12")
    resolved = resolve_preset(document, EngineConfig(model=facts.path), CPU, facts)
    running = {"max_num_seqs": 64, "kv_cache_memory_bytes": 1 << 30}
    table.show_preset(resolved, running, CPU.platform_keys, {"max_num_batched_tokens": 2048, "max_num_seqs": 256})
    rows = {table.item(row, 0).text(): row for row in range(table.rowCount())}
    marked = {key for key, row in rows.items() if table.item(row, 0).background().color() == CHANGED}
    assert marked == {"max_num_seqs"}, "2048 is vLLM's default: the same as the running engine's"
    budget = table.cellWidget(rows["kv_cache_memory_bytes"], 1)
    assert budget.text() == "" and budget.placeholderText() == "not set: auto"
    budget.editingFinished.emit()
    assert edits == []
    budget.setText("512 MiB")
    budget.editingFinished.emit()
    assert edits == [("kv_cache_memory_bytes", "512 MiB")]
