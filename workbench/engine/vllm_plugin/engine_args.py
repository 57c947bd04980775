"""vLLM's own engine arguments, read from its ``EngineArgs`` dataclass: names, types, Literal choices.

Supported vLLM versions: 0.26 to 0.33. Read here: ``vllm.engine.arg_utils.EngineArgs`` (a dataclass
whose field annotations are strings evaluated in its module), ``vllm.model_executor.layers.
quantization.QUANTIZATION_METHODS`` and, in a running client, ``vllm_config.cache_config``
(``num_gpu_blocks``, ``block_size``), which the engine core's handshake fills. Imported lazily: the
presets package and the panel use it without importing vLLM until a preset is checked.
"""
from __future__ import annotations

import dataclasses
import sys
import types
import typing
from dataclasses import dataclass
from functools import lru_cache

_NO_DEFAULT = object()


@dataclass(frozen=True)
class ArgType:
    """What one engine argument accepts: Python types, Literal choices, whether None is allowed."""

    name: str
    types: tuple[type, ...]  # empty: not known (an annotation this vLLM cannot evaluate)
    choices: tuple = ()  # Literal choices, or () for any value of the types
    optional: bool = False
    default: object = _NO_DEFAULT

    def describe(self) -> str:
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        return " or ".join(t.__name__ for t in self.types) or "any value"


def _flatten(annotation) -> tuple[list[type], list, bool]:
    """The plain types, the Literal choices and whether None is allowed, of one annotation."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return [type(c) for c in typing.get_args(annotation)], list(typing.get_args(annotation)), False
    if origin in (typing.Union, types.UnionType):
        kinds, choices, optional = [], [], False
        for arg in typing.get_args(annotation):
            if arg is type(None):
                optional = True
                continue
            k, c, o = _flatten(arg)
            kinds += k
            choices += c
            optional = optional or o
        return kinds, choices, optional
    if isinstance(origin, type):
        return [origin], [], False
    return ([annotation], [], False) if isinstance(annotation, type) else ([], [], False)


@lru_cache(maxsize=1)
def engine_arg_types() -> dict[str, ArgType]:
    """Every field of vLLM's ``EngineArgs``, with what it accepts."""
    from vllm.engine.arg_utils import EngineArgs

    namespace = vars(sys.modules[EngineArgs.__module__])
    found = {}
    for field in dataclasses.fields(EngineArgs):
        try:
            annotation = eval(field.type, namespace) if isinstance(field.type, str) else field.type  # noqa: S307
            kinds, choices, optional = _flatten(annotation)
        except Exception:  # an annotation only a type checker can read: the name is still known
            kinds, choices, optional = [], [], True
        if choices and any(isinstance(c, str) for c in choices) and str in kinds and len(set(kinds)) > 1:
            choices = []  # a Literal beside plain str: any string goes
        default = _default_of(field)
        found[field.name] = ArgType(field.name, tuple(dict.fromkeys(kinds)), tuple(choices), optional, default)
    quant = found.get("quantization")
    if quant is not None and not quant.choices:
        found["quantization"] = dataclasses.replace(quant, choices=tuple(quantization_methods()))
    return found


def loaded() -> bool:
    """True once vLLM's engine arguments have been read in this process: asking again costs nothing
    (the first time imports vLLM, seconds; never on the GUI thread)."""
    return engine_arg_types.cache_info().currsize > 0


def usage_context(name: str | None):
    """vLLM's ``UsageContext`` for an ``EngineConfig.usage_context``: ``vllm serve``'s (OPENAI_API_SERVER)
    for ``SERVE_CONTEXT``, an ``LLMEngine``'s own (ENGINE_CONTEXT) otherwise."""
    from vllm.usage.usage_lib import UsageContext

    from workbench.engine.spec import SERVE_CONTEXT

    return UsageContext.OPENAI_API_SERVER if name == SERVE_CONTEXT else UsageContext.ENGINE_CONTEXT


@lru_cache(maxsize=4)
def default_values(world_size: int = 1) -> dict[str, object]:
    """Each engine argument's default as vLLM applies it to an ``LLMEngine`` here: the ``EngineArgs``
    field's default, and for the batch limits it leaves open (``max_num_batched_tokens``,
    ``max_num_seqs``) vLLM's own choice for ``LLMEngine.from_engine_args`` (its usage context
    ``ENGINE_CONTEXT``) on this platform with ``world_size`` ranks. None where vLLM decides only as the
    engine starts (from the model's own config), or where the field has no default."""
    values = {name: (arg.default if has_default(arg) else None) for name, arg in engine_arg_types().items()}
    try:
        from vllm.config import SchedulerConfig
        from vllm.engine.arg_utils import EngineArgs
        from vllm.usage.usage_lib import UsageContext

        tokens, seqs = EngineArgs.get_batch_defaults(world_size)
    except (ImportError, AttributeError, TypeError):  # a vLLM without these: the fields' own defaults
        return values
    for name, chosen, fallback in (("max_num_batched_tokens", tokens, "DEFAULT_MAX_NUM_BATCHED_TOKENS"),
                                   ("max_num_seqs", seqs, "DEFAULT_MAX_NUM_SEQS")):
        if values.get(name) is None:
            values[name] = chosen.get(UsageContext.ENGINE_CONTEXT, getattr(SchedulerConfig, fallback, None))
    return values


def _default_of(field):
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        try:
            return field.default_factory()
        except Exception:  # a factory that needs a platform: no default to compare with
            return _NO_DEFAULT
    return _NO_DEFAULT


def has_default(arg: ArgType) -> bool:
    return arg.default is not _NO_DEFAULT


@lru_cache(maxsize=1)
def cli_spellings() -> dict[str, str]:
    """Each command-line spelling of an engine argument that is not its field name in dashes
    (``-tp``, ``-O``...) -> the field name, from vLLM's own parser (``EngineArgs.add_cli_args``)."""
    try:
        from vllm.engine.arg_utils import EngineArgs
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        try:
            from vllm.engine.arg_utils import EngineArgs
            from vllm.utils import FlexibleArgumentParser
        except ImportError:
            return {}
    spellings = {}
    for action in EngineArgs.add_cli_args(FlexibleArgumentParser())._actions:
        for option in action.option_strings:
            if option.lstrip("-").replace("-", "_") not in (action.dest, f"no_{action.dest}"):
                spellings[option] = action.dest
    return spellings


@lru_cache(maxsize=1)
def server_options() -> frozenset[str]:
    """The options of ``vllm serve`` that are not engine arguments (host, port, api_key, ...), by
    field name, from vLLM's ``FrontendArgs``; empty where this vLLM keeps them elsewhere."""
    for module in ("vllm.entrypoints.launchers.cli_args", "vllm.entrypoints.openai.cli_args"):
        try:
            frontend = __import__(module, fromlist=["FrontendArgs"]).FrontendArgs
        except (ImportError, AttributeError):
            continue
        try:
            return frozenset(f.name for f in dataclasses.fields(frontend))
        except TypeError:  # not a dataclass in this vLLM
            break
    return frozenset()


def quantization_methods() -> list[str]:
    try:
        from vllm.model_executor.layers.quantization import QUANTIZATION_METHODS
    except ImportError:
        return []
    return list(QUANTIZATION_METHODS)


def real_pool(engine) -> tuple[int | None, int | None]:
    """(number of KV blocks, tokens per block) of a running ``LLMEngine``, as its engine core reported."""
    cache = getattr(getattr(engine, "vllm_config", None), "cache_config", None)
    if cache is None:
        return None, None
    return getattr(cache, "num_gpu_blocks", None), getattr(cache, "block_size", None)


# What vLLM resolved for a running engine, read from its ``vllm_config``: the values it chose where the
# configuration left them to it (budgets, block size, chunked prefill, the KV pool), under the names of
# the engine arguments. (section, attribute, engine argument); a field a version lacks is left out.
RESOLVED_FIELDS = (
    ("model_config", "max_model_len", "max_model_len"),
    ("model_config", "dtype", "dtype"),
    ("model_config", "quantization", "quantization"),
    ("model_config", "enforce_eager", "enforce_eager"),
    ("cache_config", "block_size", "block_size"),
    ("cache_config", "num_gpu_blocks", "num_gpu_blocks"),
    ("cache_config", "cache_dtype", "kv_cache_dtype"),
    ("cache_config", "enable_prefix_caching", "enable_prefix_caching"),
    ("cache_config", "gpu_memory_utilization", "gpu_memory_utilization"),
    ("cache_config", "kv_cache_memory_bytes", "kv_cache_memory_bytes"),
    ("scheduler_config", "max_num_seqs", "max_num_seqs"),
    ("scheduler_config", "max_num_batched_tokens", "max_num_batched_tokens"),
    ("scheduler_config", "enable_chunked_prefill", "enable_chunked_prefill"),
    ("scheduler_config", "policy", "scheduling_policy"),
    ("scheduler_config", "async_scheduling", "async_scheduling"),
    ("parallel_config", "tensor_parallel_size", "tensor_parallel_size"),
    ("parallel_config", "pipeline_parallel_size", "pipeline_parallel_size"),
    ("parallel_config", "data_parallel_size", "data_parallel_size"),
)


def resolved_settings(engine) -> dict[str, object]:
    """The engine arguments as vLLM resolved them for a running ``LLMEngine``: plain values (str, int,
    float, bool or None), keyed by engine-argument name."""
    config = getattr(engine, "vllm_config", None)
    settings: dict[str, object] = {}
    for section_name, attribute, name in RESOLVED_FIELDS:
        section = getattr(config, section_name, None)
        if section is None or not hasattr(section, attribute):
            continue
        value = getattr(section, attribute)
        if value is not None and not isinstance(value, (str, int, float, bool)):
            # enums: their names; a torch.dtype as its --dtype name ("bfloat16", not "torch.bfloat16")
            value = str(getattr(value, "name", value)).removeprefix("torch.")
        settings[name] = value
    return settings

