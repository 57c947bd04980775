"""The download itself, in a process of its own so that Cancel stops it at once (the process is
killed; huggingface_hub resumes the part file next time) and a stuck transfer never holds the window:

    python -m workbench.hub.download_worker REQUEST.json

``REQUEST.json``: ``{"repo_id", "revision", "files": [{"name", "size", "sha256"}]}``. Each file through
``hf_hub_download`` (into the standard cache; a file already there is not fetched again), then each
LFS file's SHA-256 checked against the Hub's. One JSON line per event on stdout: ``{"file": name}`` as a
file completes, ``{"verified": name}``, ``{"error": text, "kind": ...}``, and ``{"done": snapshot_path}``.
A token comes in the environment (``HF_TOKEN``) and is never written.
"""
from __future__ import annotations

import errno
import json
import sys
from pathlib import Path

from workbench.engine.vllm_plugin.process_life import die_with_parent
from workbench.hub.cache_files import sha256_of


def say(**event) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def main(request_path: str) -> int:
    die_with_parent()
    from huggingface_hub import hf_hub_download

    request = json.loads(Path(request_path).read_text(encoding="utf-8"))
    repo_id, revision = request["repo_id"], request["revision"]
    snapshot = None
    try:
        for file in request["files"]:
            path = hf_hub_download(repo_id, file["name"], revision=revision)
            snapshot = str(Path(path).parent) if "/" not in file["name"] else snapshot
            say(file=file["name"])
        for file in request["files"]:
            if file.get("sha256"):
                path = Path(hf_hub_download(repo_id, file["name"], revision=revision, local_files_only=True))
                got = sha256_of(path.resolve())
                if got != file["sha256"]:
                    path.resolve().unlink(missing_ok=True)
                    path.unlink(missing_ok=True)
                    say(error=f"{file['name']} arrived damaged (its SHA-256 is {got[:12]}…, the Hub's "
                              f"{file['sha256'][:12]}…); it was removed: download again.", kind="checksum")
                    return 3
                say(verified=file["name"])
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            say(error=str(exc), kind="disk full")
            return 4
        say(error=f"{type(exc).__name__}: {exc}", kind="io")
        return 2
    except Exception as exc:  # the Hub's and the transport's errors, named by the window with hub_error
        say(error=f"{type(exc).__name__}: {exc}", kind=type(exc).__name__,
            status=getattr(getattr(exc, "response", None), "status_code", None))
        return 2
    say(done=snapshot)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
