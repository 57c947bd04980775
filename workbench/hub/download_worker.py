"""The download itself, in a process of its own so that Cancel stops it at once (the process is killed)
and a stuck transfer never holds the window:

    python -m workbench.hub.download_worker REQUEST.json

``REQUEST.json``: ``{"repo_id", "revision", "files": [{"name", "size", "sha256"}]}``.

huggingface_hub (2.4) writes each file to a temporary file of its own call and starts it over on the next
call, so a transfer cut by a kill, a crash or Cancel would begin again from zero. Here each file's bytes go
to ``blobs/<etag>.part`` in the standard cache, appended with HTTP ``Range`` requests from where the
last attempt stopped; the URL, the headers (the token), the ETag that names the blob and the cache's
layout are huggingface_hub's own (``hf_hub_url``, ``get_hf_file_metadata``, ``build_hf_headers``). A file
complete and its SHA-256 checked (LFS files: the Hub's hash) becomes ``blobs/<etag>``, and
``hf_hub_download`` then links it into the snapshot without fetching anything.

One JSON line per event on stdout: ``{"file": name}`` as a file completes, ``{"error": text, "kind": ...,
"status": ...}``, and ``{"done": snapshot_folder}``. A token comes in the environment (``HF_TOKEN``) and
is never written.
"""
from __future__ import annotations

import errno
import json
import os
import sys
from pathlib import Path

from workbench.engine.vllm_plugin.process_life import die_with_parent
from workbench.hub.cache_files import repo_folder, sha256_of

CHUNK = 1 << 20
PART_SUFFIX = ".part"


def say(**event) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


class Damaged(Exception):
    """A file's bytes do not hash to the Hub's SHA-256."""


def fetch(url: str, part: Path, size: int, headers: dict) -> None:
    """Appends ``url``'s bytes to ``part`` from its current length until it holds ``size`` bytes."""
    import httpx

    have = part.stat().st_size if part.exists() else 0
    if have > size:
        part.unlink()
        have = 0
    if have == size:
        return
    wanted = {**headers, "Range": f"bytes={have}-"} if have else dict(headers)
    with httpx.Client(follow_redirects=True, timeout=httpx.Timeout(30.0, read=60.0)) as client, \
            client.stream("GET", url, headers=wanted) as response:
        response.raise_for_status()
        mode = "ab" if have and response.status_code == 206 else "wb"  # a 200 to a Range: the whole file
        with open(part, mode) as out:
            for chunk in response.iter_bytes(CHUNK):
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
    if part.stat().st_size != size:
        raise OSError(errno.EIO, f"the transfer ended at {part.stat().st_size:,} of {size:,} bytes")


def fetch_file(repo_id: str, revision: str, file: dict, cache: Path, token: str | None) -> str:
    """One file into the cache, resumed from its part; returns the snapshot's path of it."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url
    from huggingface_hub.utils import build_hf_headers

    endpoint = os.environ.get("HF_ENDPOINT") or None
    url = hf_hub_url(repo_id, file["name"], revision=revision, endpoint=endpoint)
    meta = get_hf_file_metadata(url, token=token, endpoint=endpoint)
    etag = (meta.etag or "").strip('"')
    blobs = repo_folder(cache, repo_id) / "blobs"
    blob = blobs / etag
    if etag and not blob.exists():
        blobs.mkdir(parents=True, exist_ok=True)
        part = blobs / (etag + PART_SUFFIX)
        fetch(meta.location or url, part, meta.size if meta.size is not None else file["size"],
              build_hf_headers(token=token))
        if file.get("sha256"):
            got = sha256_of(part)
            if got != file["sha256"]:
                part.unlink(missing_ok=True)
                raise Damaged(f"{file['name']} arrived damaged (its SHA-256 is {got[:12]}…, the Hub's "
                              f"{file['sha256'][:12]}…); it was removed: download again.")
        os.replace(part, blob)
    return hf_hub_download(repo_id, file["name"], revision=revision, token=token, endpoint=endpoint)


def main(request_path: str) -> int:
    die_with_parent()
    from huggingface_hub import constants

    request = json.loads(Path(request_path).read_text(encoding="utf-8"))
    repo_id, revision = request["repo_id"], request["revision"]
    cache, token = Path(constants.HF_HUB_CACHE), os.environ.get("HF_TOKEN") or None
    snapshot = None
    try:
        for file in request["files"]:
            path = fetch_file(repo_id, revision, file, cache, token)
            snapshot = str(Path(path).parent) if "/" not in file["name"] else snapshot
            say(file=file["name"])
    except Damaged as exc:
        say(error=str(exc), kind="checksum")
        return 3
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            say(error=str(exc), kind="disk full")
            return 4
        say(error=f"{type(exc).__name__}: {exc}", kind=type(exc).__name__)
        return 2
    except Exception as exc:  # the Hub's and the transport's errors, named by the window
        say(error=f"{type(exc).__name__}: {exc}", kind=type(exc).__name__,
            status=getattr(getattr(exc, "response", None), "status_code", None))
        return 2
    say(done=snapshot)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

