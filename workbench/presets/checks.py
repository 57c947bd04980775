"""A preset's values checked before anything starts: names against vLLM's own ``EngineArgs``, values
against their types, choices and ranges, and against this machine and the model.

Each problem names the key, the value, and the valid choices or range.
"""
from __future__ import annotations

import difflib
import enum
import re
from dataclasses import dataclass

from workbench.presets.document import TABLE_KEYS, PresetDocument, is_platform_table
from workbench.presets.image_checks import value_problem, vision_model_problem
from workbench.presets.machine import CPU_AVX512, Machine, count_devices
from workbench.presets.model_facts import QUANTIZE_AT_LOAD, ModelFacts

AUTO, MODEL_MAX = "auto", "model max"
# Names that widely copied articles give as vLLM options; vLLM has none of them.
NOT_VLLM_OPTIONS = {
    "enable_dynamic_batching": "vLLM always batches continuously; the nearest option is max_num_seqs "
                               "(how many sequences run in one batch)",
    "dynamic_batching_window_size": "vLLM has no batching window: requests join the running batch at the next "
                                    "step; the nearest option is max_num_batched_tokens",
    "max_batch_size": "the nearest option is max_num_seqs",
    "vllm_quantization_bit": "the bits come with the method: the nearest option is quantization (e.g. 'awq' "
                             "for 4-bit AWQ weights)",
    "chunked_prefill_size": "that is SGLang's name; vLLM's prefill chunk is max_num_batched_tokens (tokens per step), "
                            "with enable_chunked_prefill",
    "use_flash_attn": "vLLM chooses its attention kernels itself (FlashAttention where the GPU has it); the nearest "
                      "option is attention_backend",
    "swap_space": "vLLM removed it; the nearest options are kv_offloading_size (KV blocks to CPU memory) "
                  "and cpu_offload_gb (weights)",
}
APP_OWNED = {"model": "the model is chosen with Model > Choose model, not by a preset",
             "tokenizer": "the tokenizer comes with the model, not with a preset"}
# Ranges of the numeric options the panel edits (vLLM's types give no bounds): (low, high).
RANGES = {
    "max_num_seqs": (1, 16384), "max_num_batched_tokens": (32, 1 << 21), "max_model_len": (32, 1 << 21),
    "gpu_memory_utilization": (0.05, 0.99), "block_size": (1, 1024), "cpu_offload_gb": (0, 4096),
    "tensor_parallel_size": (1, 64), "kv_cache_memory_bytes": (1 << 20, 1 << 42),
    "num_gpu_blocks_override": (2, 1 << 26), "mm_processor_cache_gb": (0, 1024),
}
SAMPLING_RANGES = {"temperature": (0.0, 2.0), "top_p": (0.01, 1.0), "top_k": (0, 1000), "max_tokens": (1, 32768),
                   "seed": (-1, 2**31 - 1)}
BLOCK_MULTIPLE = {"cpu": 32, "cuda": 16}
SIZE = re.compile(r"^\s*([\d.]+)\s*(B|KiB|MiB|GiB|TiB)\s*$")
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


@dataclass(frozen=True)
class Problem:
    key: str  # "engine.max_num_seqs", "sampling.top_p"
    value: object
    message: str  # names the key, the value, and what is valid

    def __str__(self) -> str:
        return self.message


def parse_size(value):
    """'1 GiB' -> 1073741824; other values as they are."""
    if isinstance(value, str) and (match := SIZE.match(value)):
        return int(float(match.group(1)) * UNITS[match.group(2)])
    return value


def for_platform(value, keys: str | tuple[str, ...]):
    """A value as it applies where ``keys`` apply (``Machine.platform_keys``, the most specific first, or
    one platform): a per-platform table gives the first of them it names, AUTO where it names none."""
    if not is_platform_table(value):
        return value
    return next((value[key] for key in ((keys,) if isinstance(keys, str) else keys) if key in value), AUTO)


def quantized_kv_cache(dtype) -> bool:
    """vLLM's is_quantized_kv_cache (vllm/utils/torch_utils.py), which its CPU attention asks of a
    kv_cache_dtype before it refuses one: fp8 of any kind, per-token-head and nvfp4 caches."""
    return isinstance(dtype, str) and (dtype.startswith(("fp8", "nvfp4")) or dtype.endswith("per_token_head"))


def check_preset(document: PresetDocument, machine: Machine, model: ModelFacts | None,
                 ask_registry: bool = True) -> list[Problem]:
    """Every problem of the preset on this machine with this model (None: not known). ``ask_registry``:
    whether vLLM's registry may be asked (a process, seconds, the first time for a vLLM version) where
    the model's config cannot tell whether it reads images; False: only a kept answer is used."""
    from workbench.engine.vllm_plugin.engine_args import engine_arg_types

    args = engine_arg_types()
    problems: list[Problem] = []
    if document.needs_vision_model and (problem := check_vision_model(document, model, ask_registry)):
        problems.append(problem)
    for key, value in document.engine().items():
        problem = check_name(key, value, args)
        if problem is None:
            values = value.values() if is_platform_table(value) else [value]
            problem = next((p for v in values if (p := check_value(key, v, args[key])) is not None), None)
        if problem is None:
            problem = check_on_machine(key, for_platform(value, machine.platform_keys), machine, model)
        if problem is not None:
            problems.append(problem)
    problems += check_sampling(document.sampling())
    return problems


def check_vision_model(document: PresetDocument, model: ModelFacts | None, ask_registry: bool) -> Problem | None:
    from workbench.engine.vllm_architectures import kept_registry_answer, registry_answer

    multimodal = None
    if model is not None and not model.vision_config:
        answer = registry_answer() if ask_registry else kept_registry_answer()
        multimodal = answer.multimodal if answer is not None and answer.architectures else None
    message = vision_model_problem(document.name, model, multimodal)
    return None if message is None else Problem("preset.needs_vision_model", True, message)


def check_name(key: str, value, args: dict) -> Problem | None:
    name = f"engine.{key}"
    if key in APP_OWNED:
        return Problem(name, value, f"{name} = {value!r}: {APP_OWNED[key]}.")
    reason = non_option_reason(key, args)
    return None if reason is None else Problem(name, value, f"{name} = {value!r}: {reason}")


def non_option_reason(key: str, args: dict) -> str | None:
    """Why ``key`` is not one of vLLM's engine arguments, with the nearest real one; None when it is one.
    Shared by the preset checks and the command-line import."""
    if key in NOT_VLLM_OPTIONS:
        return f"not a vLLM option; {NOT_VLLM_OPTIONS[key]}."
    if key in args:
        return None
    if key.startswith("vllm_") and key[5:] in args:
        return f"not a vLLM option (a launcher's spelling); the vLLM option is {key[5:]}."
    near = difflib.get_close_matches(key, list(args), n=3, cutoff=0.6)
    hint = f" Did you mean {' or '.join(near)}?" if near else ""
    return f"not a vLLM option (vLLM's EngineArgs has no such field).{hint}"


def _type_ok(value, arg) -> bool:
    if not arg.types:
        return True
    if isinstance(value, bool):
        return bool in arg.types
    if isinstance(value, int) and float in arg.types:
        return True
    if isinstance(value, int) and any(issubclass(t, int) for t in arg.types):  # an IntEnum (-O3)
        return True
    if isinstance(value, str) and any(issubclass(t, enum.Enum) and value in t.__members__ for t in arg.types):
        return True  # an enum by its member's name, as vLLM's parser hands it on (--attention-backend)
    return isinstance(value, arg.types)


def check_value(key: str, value, arg) -> Problem | None:
    """Type, choices and range of one value (one platform's, where the preset gives several)."""
    name = f"engine.{key}"
    if value == AUTO or (key == "max_model_len" and value in (MODEL_MAX, -1)):  # -1: vLLM's "auto"
        return None
    if value == MODEL_MAX:
        return Problem(name, value, f"{name} = {value!r}: 'model max' applies to max_model_len only; "
                                    f"valid: {arg.describe()} or 'auto'.")
    value = parse_size(value) if key.endswith("_bytes") else value
    if not _type_ok(value, arg):
        extra = " or 'model max'" if key == "max_model_len" else ""
        table = f"; per-platform values take the keys {', '.join(TABLE_KEYS)}" if isinstance(value, dict) else ""
        return Problem(name, value, f"{name} = {value!r} has the wrong type {type(value).__name__}; "
                                    f"valid: {arg.describe()}, 'auto'{extra}{table}.")
    if isinstance(value, dict) and (reason := value_problem(key, value)):
        return Problem(name, value, f"{name} = {value!r}: {reason}.")
    if arg.choices and value not in arg.choices:
        return Problem(name, value, f"{name} = {value!r} is not a valid choice; valid: {arg.describe()}.")
    levels = [t for t in arg.types if isinstance(t, type) and issubclass(t, enum.IntEnum)]  # -O's OptimizationLevel
    if levels and isinstance(value, int) and not isinstance(value, bool) and value not in {int(m) for m in levels[0]}:
        return Problem(name, value, f"{name} = {value!r} is not a valid level; valid: "
                                    f"{', '.join(str(int(m)) for m in levels[0])}.")
    low, high = RANGES.get(key, (None, None))
    if low is not None and isinstance(value, (int, float)) and not low <= value <= high:
        return Problem(name, value, f"{name} = {value!r} is out of range; valid: {low} to {high}.")
    return None


def check_on_machine(key: str, value, machine: Machine, model: ModelFacts | None) -> Problem | None:
    """What this machine and the model allow; ``value`` is this platform's."""
    name = f"engine.{key}"
    if value == AUTO:
        return None
    if key == "block_size" and isinstance(value, int) and value % BLOCK_MULTIPLE[machine.platform]:
        step = BLOCK_MULTIPLE[machine.platform]
        return Problem(name, value, f"{name} = {value!r}: on {machine.platform.upper()} vLLM needs a multiple of "
                                    f"{step}; valid: {step}, {2 * step}, {4 * step}, … up to 256.")
    if key == "tensor_parallel_size" and isinstance(value, int):
        return check_tensor_parallel(value, machine)
    if key == "kv_cache_dtype" and machine.on_cpu and quantized_kv_cache(value):
        return check_cpu_kv_cache_dtype(value, machine, model)
    if model is not None and key == "max_model_len" and isinstance(value, int) \
            and value > model.max_position_embeddings:
        return Problem(name, value, f"{name} = {value!r} is longer than the model's context "
                                    f"({model.max_position_embeddings}, config.json); valid: 32 to "
                                    f"{model.max_position_embeddings}, or 'model max'.")
    if model is not None and key == "quantization" and value is not None:
        return _check_quantization(name, value, machine, model)
    return None


def check_tensor_parallel(value: int, machine: Machine, visible_devices: str | None = None) -> Problem | None:
    """One tensor-parallel rank a GPU: the GPUs present, narrowed by CUDA_VISIBLE_DEVICES (the app's own,
    or ``visible_devices``, a command line's)."""
    name = "engine.tensor_parallel_size"
    most = max(1, machine.num_usable_gpus)
    if value > most:
        what = f"{machine.num_gpus} GPU(s)" if machine.num_gpus else "no GPU (the CPU build runs on one)"
        if machine.num_gpus and machine.num_usable_gpus < machine.num_gpus:
            what += f", of which CUDA_VISIBLE_DEVICES={machine.visible_devices} leaves {machine.num_usable_gpus}"
        fix = " (or unset CUDA_VISIBLE_DEVICES)" if machine.num_usable_gpus < machine.num_gpus else ""
        return Problem(name, value, f"{name} = {value!r}: this machine has {what}; valid: 1 to {most}{fix}.")
    if visible_devices is not None and value > count_devices(visible_devices):
        named = count_devices(visible_devices)
        return Problem(name, value, f"{name} = {value!r}: CUDA_VISIBLE_DEVICES={visible_devices} names {named} GPU(s), "
                                    f"one a rank; valid: 1 to {max(1, named)}, or name {value} GPUs "
                                    f"(CUDA_VISIBLE_DEVICES={','.join(str(i) for i in range(value))}).")
    return None


def check_cpu_kv_cache_dtype(value: str, machine: Machine, model: ModelFacts | None) -> Problem | None:
    """vLLM's own conditions for a quantized KV cache on CPU (vllm/v1/attention/backends/cpu_attn.py,
    _get_attn_isa), known before a start: a head size divisible by 32 where it is one of 16, and x86 with
    AVX-512 or AMX."""
    name = "engine.kv_cache_dtype"
    valid = "valid here: 'auto' (vLLM's default: the model's own dtype, twice the bytes of fp8) or 'bfloat16'"
    if model is not None and model.head_size % 32 and not model.head_size % 16:
        return Problem(name, value, f"{name} = {value!r}: vLLM's CPU build keeps an fp8 KV cache only for a head "
                                    f"size divisible by 32, and the model's is {model.head_size} (config.json); "
                                    f"{valid}.")
    if machine.cpu.holds_fp8_kv:
        return None
    return Problem(name, value, f"{name} = {value!r}: vLLM's CPU build keeps an fp8 KV cache only on x86 with "
                                f"AVX-512 or AMX, and {machine.cpu.describe()}; "
                                f"{valid}; to keep {value} on CPUs that have them, give it per platform: "
                                f"kv_cache_dtype = {{ cpu = \"auto\", {CPU_AVX512} = \"{value}\" }}.")


def _check_quantization(name: str, value: str, machine: Machine, model: ModelFacts) -> Problem | None:
    if model.quant_method:
        if value in QUANTIZE_AT_LOAD:  # a preset's "fp8 as it loads" yields to the files' own (resolve_preset)
            return None
        if value != model.quant_method:
            return Problem(name, value, f"{name} = {value!r}: the model's files are quantized with "
                                        f"{model.quant_method!r}; valid: {model.quant_method!r} or 'auto'.")
        return None
    if value in QUANTIZE_AT_LOAD and not machine.on_cpu:
        return None
    at_load = ", ".join(repr(m) for m in sorted(QUANTIZE_AT_LOAD)) + " on CUDA, " if not machine.on_cpu else ""
    return Problem(name, value, f"{name} = {value!r}: the model's files hold no {value} weights (config.json has "
                                f"no quantization_config); valid: {at_load}'auto' (the model as it is).")


def check_sampling(sampling: dict) -> list[Problem]:
    problems = []
    for key, value in sampling.items():
        low, high = SAMPLING_RANGES.get(key, (None, None))
        if low is not None and not isinstance(value, bool) and not low <= value <= high:
            problems.append(Problem(f"sampling.{key}", value,
                                    f"sampling.{key} = {value!r} is out of range; valid: {low} to {high}."))
    return problems
