"""The models in the Hugging Face cache, through huggingface_hub's own cache API (``scan_cache_dir``,
``delete_revisions``): size on disk, revisions, last use; and their deletion."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from workbench.hub.settings import hub_settings


@dataclass(frozen=True)
class CachedModel:
    repo_id: str
    size_bytes: int
    revisions: tuple[str, ...]  # commit hashes, newest first
    refs: tuple[str, ...]  # branch names pointing at them ("main")
    last_used_s: float  # the files' last access (or change, where the disk keeps no access times)
    snapshot: str  # the newest revision's folder, the one the app loads
    incomplete: bool  # part files remain: a download did not finish


def cached_models(cache_dir: Path | None = None) -> list[CachedModel]:
    """The cache's model repos, the most recently used first; none where there is no cache yet."""
    from huggingface_hub import scan_cache_dir
    from huggingface_hub.errors import CacheNotFound

    folder = cache_dir or hub_settings().cache_dir
    try:
        info = scan_cache_dir(folder)
    except CacheNotFound:
        return []
    models = []
    for repo in info.repos:
        if repo.repo_type != "model":
            continue
        revisions = sorted(repo.revisions, key=lambda r: r.last_modified, reverse=True)
        blobs = Path(repo.repo_path) / "blobs"
        models.append(CachedModel(
            repo.repo_id, repo.size_on_disk, tuple(r.commit_hash for r in revisions),
            tuple(sorted({ref for r in revisions for ref in r.refs})), max(repo.last_accessed, repo.last_modified),
            str(revisions[0].snapshot_path) if revisions else "", any(blobs.glob("*.part"))))
    return sorted(models, key=lambda m: m.last_used_s, reverse=True)


def delete_model(repo_id: str, cache_dir: Path | None = None) -> int:
    """Deletes every revision of ``repo_id`` from the cache; the bytes freed."""
    from huggingface_hub import scan_cache_dir

    info = scan_cache_dir(cache_dir or hub_settings().cache_dir)
    hashes = [r.commit_hash for repo in info.repos if repo.repo_id == repo_id and repo.repo_type == "model"
              for r in repo.revisions]
    if not hashes:
        return 0
    strategy = info.delete_revisions(*hashes)
    freed = strategy.expected_freed_size
    strategy.execute()
    return freed


def is_downloaded(repo_id: str, revision: str, names, cache_dir: Path | None = None) -> bool:
    """Every one of ``names`` is in the cache's snapshot of ``revision`` (a look-up leaves config.json
    there alone: that is not a downloaded model)."""
    from workbench.hub.cache_files import repo_folder

    snapshot = repo_folder(cache_dir or hub_settings().cache_dir, repo_id) / "snapshots" / revision
    return all((snapshot / name).exists() for name in names)
