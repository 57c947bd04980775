"""A Hub model sized up before its weights are fetched: ``model_info`` (its files with their sizes and
hashes), ``config.json`` (a few KiB, into the cache) and the safetensors headers
(``get_safetensors_metadata``: range reads, no weights), turned into the capacity planner's facts."""
from __future__ import annotations

import json
from dataclasses import dataclass

from workbench.hub.architectures import architecture_problem, supported_architectures
from workbench.hub.errors import HubError, hub_error
from workbench.hub.files import FileChoice, RepoFile, choose_files
from workbench.hub.repo_id import check_repo_id
from workbench.hub.settings import hub_api, hub_settings
from workbench.presets.capacity import size_text
from workbench.presets.model_facts import ModelFacts, facts_from_config

SAFETENSORS_BYTES = {"F64": 8, "I64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2, "U16": 2,
                     "F8_E4M3": 1, "F8_E5M2": 1, "I8": 1, "U8": 1, "BOOL": 1}


@dataclass(frozen=True)
class RemoteModel:
    repo_id: str
    revision: str  # the commit the answer is for
    config: dict
    facts: ModelFacts
    choice: FileChoice
    parameters: int | None  # from the safetensors headers
    dtypes: tuple[tuple[str, int], ...]  # (safetensors dtype, parameters) as the headers count them
    gated: bool
    license: str | None
    problem: str | None  # why vLLM cannot run it (GGUF only, an architecture it lacks)

    @property
    def architectures(self) -> tuple[str, ...]:
        return tuple(self.config.get("architectures") or ())

    @property
    def quantization(self) -> str | None:
        return self.facts.quant_method

    def summary(self) -> str:
        params = f"{self.parameters / 1e9:.2f} B parameters" if self.parameters else "parameters unknown"
        if self.parameters and self.parameters < 1e8:
            params = f"{self.parameters / 1e6:.1f} M parameters"
        dtype = self.quantization or ", ".join(d for d, _ in self.dtypes[:2]) or self.facts.dtype
        return (f"{self.repo_id} @ {self.revision[:8]}: {', '.join(self.architectures) or 'no architecture'}, "
                f"{params}, {dtype}; download {size_text(self.choice.total_bytes)} "
                f"({len(self.choice.files)} files)")


def look_up(repo_id: str, revision: str | None = None, token: str | None = None,
            supported: frozenset[str] | None = None) -> RemoteModel:
    """HubInputError for an id that cannot be one, HubError for what the Hub says (with the fix)."""
    repo_id = check_repo_id(repo_id)
    api, endpoint = hub_api(token), hub_settings().endpoint
    try:
        info = api.model_info(repo_id, revision=revision or None, files_metadata=True)
        files = [RepoFile(s.rfilename, s.size or 0, (s.lfs or {}).get("sha256") if isinstance(s.lfs, dict)
                          else getattr(s.lfs, "sha256", None), s.blob_id) for s in info.siblings or ()]
        config = _config(api, repo_id, info.sha, files)
        metadata = _safetensors(api, repo_id, info.sha, files)
    except HubError:
        raise
    except Exception as exc:  # huggingface_hub's errors and the transport's, each named by hub_error
        raise hub_error(exc, repo_id, endpoint, token is not None) from exc
    weight_map = set(metadata.weight_map.values()) if metadata is not None and metadata.sharded else None
    choice = choose_files(files, weight_map)
    weights = sum(f.size for f in choice.files if f.name.endswith((".safetensors", ".bin")))
    counts = tuple(sorted((metadata.parameter_count or {}).items(), key=lambda kv: -kv[1])) if metadata else ()
    facts = facts_from_config(config, repo_id, weights or None)
    problem = choice.problem or architecture_problem(list(config.get("architectures") or ()),
                                                     supported_architectures() if supported is None else supported)
    card = info.card_data.to_dict() if getattr(info, "card_data", None) is not None else {}
    return RemoteModel(repo_id, info.sha, config, facts, choice, sum(c for _, c in counts) or None, counts,
                       bool(info.gated), card.get("license"), problem)


def _config(api, repo_id: str, revision: str, files: list[RepoFile]) -> dict:
    if not any(f.name == "config.json" for f in files):
        raise HubError(f"{repo_id} has no config.json: it is not a model vLLM can load as it is (a GGUF-only, "
                       "adapter-only or non-transformers repo). Choose the base model's repo.")
    path = api.hf_hub_download(repo_id, "config.json", revision=revision)
    try:
        with open(path, encoding="utf-8") as stream:
            return json.load(stream)
    except ValueError as exc:
        raise HubError(f"{repo_id}'s config.json is not valid JSON ({exc}): the repo is broken; choose another.")


def _safetensors(api, repo_id: str, revision: str, files: list[RepoFile]):
    if not any(f.name.endswith(".safetensors") for f in files):
        return None
    from huggingface_hub.errors import NotASafetensorsRepoError, SafetensorsParsingError

    try:
        return api.get_safetensors_metadata(repo_id, revision=revision)
    except (NotASafetensorsRepoError, SafetensorsParsingError):
        return None


def download_plan(model: RemoteModel):
    """What a download of ``model`` fetches: the files vLLM needs, at the revision sized up."""
    from workbench.hub.download import DownloadPlan

    return DownloadPlan(model.repo_id, model.revision, model.choice.files)
