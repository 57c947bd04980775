"""Where huggingface_hub keeps a repo's files in its cache (``models--owner--name/blobs/<etag>``; the part
of one still downloading is ``<etag>.part``, the download worker's), so a download's progress is read
from the disk itself, and its files' hashes checked once complete."""
from __future__ import annotations

import hashlib
from pathlib import Path

from workbench.hub.files import RepoFile

HASH_CHUNK = 8 << 20


def repo_folder(cache_dir: Path, repo_id: str) -> Path:
    return Path(cache_dir) / ("models--" + repo_id.replace("/", "--"))


def blob_names(file: RepoFile) -> list[str]:
    """The names the file's blob may have: the LFS hash for large files, the git blob id for small ones."""
    return [name for name in (file.sha256, file.blob_id) if name]


def bytes_on_disk(cache_dir: Path, repo_id: str, files) -> int:
    """How much of ``files`` is in the cache now, complete or in part (each counted at most its size)."""
    blobs = repo_folder(cache_dir, repo_id) / "blobs"
    total = 0
    for file in files:
        for name in blob_names(file):
            for candidate in (blobs / name, blobs / f"{name}.part"):
                try:
                    total += min(file.size, candidate.stat().st_size)
                    break
                except OSError:
                    continue
            else:
                continue
            break
    return total


def sha256_of(path: Path, on_chunk=lambda n: None) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        while chunk := stream.read(HASH_CHUNK):
            digest.update(chunk)
            on_chunk(len(chunk))
    return digest.hexdigest()
