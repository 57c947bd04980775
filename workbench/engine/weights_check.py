"""Damaged weights files, found by reading their headers only (no tensor is loaded).

An interrupted download leaves a truncated file; vLLM's loader then fails deep inside with an error
that names no file ("cannot fit 'int' into an index-sized integer", "MetadataIncompleteBuffer").
This names the file and says what is wrong with it.
"""
from __future__ import annotations

import json
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path

_MAX_SAFETENSORS_HEADER = 100 << 20  # the safetensors format's own limit


@dataclass(frozen=True)
class DamagedWeights:
    path: Path
    problem: str  # what is wrong, in words


def find_damaged_weights(folder: Path | str) -> list[DamagedWeights]:
    """Every weights file in ``folder`` that cannot be whole, and shards an index names but lacks."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    damaged = [d for path in sorted(folder.glob("*.safetensors")) if (d := check_safetensors(path))]
    damaged += [d for path in sorted(folder.glob("*.bin")) if (d := check_torch_zip(path))]
    for index in sorted(folder.glob("*.index.json")):
        damaged += missing_shards(index)
    return damaged


def check_safetensors(path: Path) -> DamagedWeights | None:
    """The header (8-byte length, then JSON) must parse and the tensors must end at the file's end."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                return DamagedWeights(path, f"it is {size} bytes long, too short to hold a safetensors header")
            (header_len,) = struct.unpack("<Q", head)
            if header_len > min(_MAX_SAFETENSORS_HEADER, size - 8):
                return DamagedWeights(path, f"its header claims {header_len:,} bytes but the file has {size:,}")
            header = json.loads(f.read(header_len))
    except (OSError, ValueError) as exc:
        return DamagedWeights(path, f"its header cannot be read ({type(exc).__name__}: {exc})")
    ends = [entry["data_offsets"][1] for name, entry in header.items()
            if name != "__metadata__" and isinstance(entry, dict) and "data_offsets" in entry]
    expected = 8 + header_len + max(ends, default=0)
    if expected > size:
        return DamagedWeights(path, f"it is truncated: {size:,} bytes of the {expected:,} its header describes")
    return None


def check_torch_zip(path: Path) -> DamagedWeights | None:
    """PyTorch's zip checkpoints end with a directory; a truncated one has none."""
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"PK\x03\x04":
                return None  # an older pickle checkpoint: no cheap check
        with zipfile.ZipFile(path):
            return None
    except (OSError, zipfile.BadZipFile) as exc:
        return DamagedWeights(path, f"it is not a whole PyTorch checkpoint ({exc})")


def missing_shards(index: Path) -> list[DamagedWeights]:
    try:
        weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map", {})
    except (OSError, ValueError, AttributeError) as exc:
        return [DamagedWeights(index, f"the shard index cannot be read ({type(exc).__name__}: {exc})")]
    return [DamagedWeights(index.parent / shard, f"{index.name} lists it but it is missing")
            for shard in sorted(set(weight_map.values())) if not (index.parent / shard).exists()]
