"""Searching the Hub for text-generation models (``HfApi.list_models``), each listed with what a user
weighs before choosing: parameters and dtype or quantization, the weights' size, licence, gated or not,
downloads and likes, and whether this vLLM runs its architecture."""
from __future__ import annotations

from dataclasses import dataclass

from workbench.hub.errors import hub_error
from workbench.hub.remote_model import SAFETENSORS_BYTES
from workbench.hub.settings import hub_api, hub_settings
from workbench.presets.capacity import size_text

EXPAND = ["downloads", "likes", "gated", "safetensors", "config", "tags", "library_name", "pipeline_tag",
          "cardData"]
QUANT_TAGS = {"awq": "AWQ", "gptq": "GPTQ", "fp8": "FP8", "compressed-tensors": "compressed-tensors",
              "bitsandbytes": "bitsandbytes", "gguf": "GGUF", "mlx": "MLX", "exl2": "EXL2"}


def parameters_text(count: int | None) -> str:
    if not count:
        return "?"
    return f"{count / 1e9:.1f} B" if count >= 1e8 else f"{count / 1e6:.1f} M"


@dataclass(frozen=True)
class Listing:
    repo_id: str
    parameters: int | None
    dtype: str  # the main safetensors dtype, or the quantization
    weights_bytes: int | None  # from the safetensors headers the Hub summarises
    license: str | None
    gated: bool
    downloads: int
    likes: int
    architectures: tuple[str, ...]
    runs_here: bool | None  # vLLM's registry has the architecture (None: not known)

    def row(self) -> tuple[str, ...]:
        params = parameters_text(self.parameters)
        size = size_text(self.weights_bytes) if self.weights_bytes else "?"
        return (self.repo_id, params, self.dtype or "?", size, self.license or "?", "gated" if self.gated else "open",
                f"{self.downloads:,}", f"{self.likes:,}",
                {True: "yes", False: "no", None: "?"}[self.runs_here])


def _listing(info, supported: frozenset[str]) -> Listing:
    safetensors = getattr(info, "safetensors", None)
    counts = dict(getattr(safetensors, "parameters", None) or {}) if safetensors is not None else {}
    tags = [t.lower() for t in info.tags or ()]
    quant = next((label for tag, label in QUANT_TAGS.items() if tag in tags), None)
    dtype = quant or (max(counts, key=counts.get) if counts else "")
    weights = sum(SAFETENSORS_BYTES.get(d, 2) * n for d, n in counts.items()) or None
    config = getattr(info, "config", None) or {}
    architectures = tuple(config.get("architectures") or ())
    card = info.card_data.to_dict() if getattr(info, "card_data", None) is not None else {}
    licence = card.get("license") or next((t.split(":", 1)[1] for t in tags if t.startswith("license:")), None)
    runs = None if not supported or not architectures else any(a in supported for a in architectures)
    return Listing(info.id, sum(counts.values()) or None, dtype, weights, licence, bool(info.gated),
                   info.downloads or 0, info.likes or 0, architectures, runs)


def search_models(query: str, supported: frozenset[str] = frozenset(), limit: int = 40,
                  token: str | None = None, only_runs_here: bool = False) -> list[Listing]:
    """Text-generation models matching ``query``, the most downloaded first. HubError with the fix when
    the Hub cannot be asked."""
    api = hub_api(token)
    try:
        found = list(api.list_models(search=query.strip() or None, pipeline_tag="text-generation",
                                     sort="downloads", limit=limit, expand=EXPAND))
    except Exception as exc:  # huggingface_hub's errors and the transport's, each named by hub_error
        raise hub_error(exc, query, hub_settings().endpoint, token is not None) from exc
    listings = [_listing(info, supported) for info in found]
    return [item for item in listings if item.runs_here is not False] if only_runs_here else listings
