"""A STAND-IN for the parts of the Hugging Face Hub's HTTP API that olah (the real Hub server the tests run,
see ``tests/hub_server.py``) does not serve for local repos offline; everything else it forwards to olah.

It sits in front of olah on its own loopback port, so ``HF_ENDPOINT`` names one address. What it answers
itself, following the Hub's published API (huggingface.co/docs/hub/api):

* ``GET /api/models?search=&author=&limit=``: the search (olah has no such route);
* ``GET /api/models/{repo}`` and ``.../revision/{rev}``: olah's answer (asked at ``revision/main`` where no
  revision is given: offline olah cannot resolve a default one) with what the Hub adds: ``gated``,
  ``safetensors`` (parameter counts from the files' headers), ``config``, sizes and LFS sha256 with
  ``?blobs=true`` (a header-only safetensors file listed at the size its header describes), and
  only the ``expand=`` fields when some are asked for;
* gated repos: a file or ``auth-check`` without the repo's token is refused as the Hub does (401 without a
  token, 403 with another one, ``X-Error-Code: GatedRepo``); ``whoami-v2`` knows the gated repos' tokens;
* ``GET /{repo}/resolve/{rev}/{file}`` with a ``Range`` header (206, ``Content-Range``: olah ignores ranges),
  and every GET of a file listed in ``pace`` (sent slowly, so that a test can kill the server mid-transfer);
  ETag and X-Repo-Commit are olah's, asked with a HEAD, so the client sees one file.

Files it serves itself are read from the repo's working tree (the tests' repos have one commit).

    python tests/hub_standin.py CONFIG.json

CONFIG: ``{"port", "upstream", "repos_root", "gated": {repo: token}, "pace": {"repo/file": seconds per
64 KiB}, "log"}``. Every request is appended to ``log`` as ``METHOD PATH RANGE``.
"""
from __future__ import annotations

import hashlib
import http.client
import json
import struct
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

CHUNK = 64 * 1024
HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "host", "content-length"}
EXPAND_KEEP = ("_id", "id")


def safetensors_header(path: Path) -> dict:
    """The JSON header of a safetensors file (which may be a header-only stand-in with no data)."""
    with path.open("rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(size))


def parameter_counts(folder: Path) -> dict | None:
    """The Hub's ``safetensors`` field: parameters by dtype and in total, from every safetensors header."""
    counts: dict[str, int] = {}
    for path in sorted(folder.rglob("*.safetensors")):
        for name, tensor in safetensors_header(path).items():
            if name == "__metadata__":
                continue
            n = 1
            for dim in tensor["shape"]:
                n *= dim
            counts[tensor["dtype"]] = counts.get(tensor["dtype"], 0) + n
    return {"parameters": counts, "total": sum(counts.values())} if counts else None


def declared_size(path: Path) -> int:
    """A file's size as the Hub lists it; for a header-only safetensors stand-in, the size its header
    describes (8 + header + the data its offsets reach), as the real file would have."""
    size = path.stat().st_size
    if path.suffix != ".safetensors":
        return size
    with path.open("rb") as f:
        (header_size,) = struct.unpack("<Q", f.read(8))
    ends = [t["data_offsets"][1] for k, t in safetensors_header(path).items() if k != "__metadata__"]
    return max(size, 8 + header_size + max(ends, default=0))


def lfs_oid(folder: Path, path: Path) -> str | None:
    """The sha256 of ``path``'s content where the repo keeps it in git-LFS (its object is in the store)."""
    if not path.is_file():
        return None
    oid = hashlib.sha256(path.read_bytes()).hexdigest()
    return oid if (folder / ".git" / "lfs" / "objects" / oid[:2] / oid[2:4] / oid).exists() else None


def head_commit(folder: Path) -> str:
    ref = (folder / ".git" / "HEAD").read_text().strip().removeprefix("ref: ")
    return (folder / ".git" / ref).read_text().strip()


def front_matter(readme: Path) -> dict:
    """A model card's YAML front matter, its ``key: value`` lines (the Hub's ``cardData``)."""
    text = readme.read_text(errors="replace") if readme.exists() else ""
    if not text.startswith("---\n"):
        return {}
    block = text[4:].split("\n---", 1)[0]
    return {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in block.splitlines() if ":" in line)
            if v.strip()}


def parse_range(value: str, total: int) -> tuple[int, int] | None:
    """``bytes=a-b`` / ``bytes=a-`` / ``bytes=-n`` -> (first, last) inclusive; None where unsatisfiable."""
    spec = value.strip().removeprefix("bytes=").split(",")[0].strip()
    first, _, last = spec.partition("-")
    if not first:
        start, end = max(total - int(last), 0), total - 1
    else:
        start, end = int(first), min(int(last), total - 1) if last else total - 1
    return (start, end) if start <= end and start < total else None


class StandIn(BaseHTTPRequestHandler):
    config: dict  # set on the class by main()
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # the request log below says what was asked
        pass

    # -- plumbing ---------------------------------------------------------------------------------------
    def _log(self) -> None:
        with open(self.config["log"], "a", encoding="utf-8") as f:
            f.write(f"{self.command} {self.path} {self.headers.get('Range', '-')}\n")

    def _send(self, status: int, body: bytes = b"", headers: dict | None = None, length: int | None = None) -> None:
        """One answer; ``length`` is the Content-Length a HEAD announces (the body's own otherwise)."""
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, value, status: int = 200, headers: dict | None = None) -> None:
        self._send(status, json.dumps(value).encode(), {"Content-Type": "application/json", **(headers or {})})

    def _upstream(self, method: str, path: str) -> tuple[int, dict, bytes, int | None]:
        host, port = urlsplit(self.config["upstream"]).netloc.split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
        body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0)) if method == "POST" else None
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        data = response.read()
        conn.close()
        length = response.getheader("Content-Length")
        headers = {k: v for k, v in response.getheaders() if k.lower() not in HOP_HEADERS}
        return response.status, headers, data, int(length) if method == "HEAD" and length else None

    def _forward(self) -> None:
        try:
            status, headers, data, length = self._upstream(self.command, self.path)
        except OSError as error:  # olah is not there (killed, or not up yet): the Hub's gateway error
            return self._json({"error": f"upstream Hub server unreachable: {error}"}, 502)
        self._send(status, data, headers, length)

    def _folder(self, repo: str) -> Path | None:
        folder = Path(self.config["repos_root"]) / repo
        return folder if (folder / ".git").is_dir() else None

    def _refused(self, repo: str) -> bool:
        """True (and the Hub's answer sent) where ``repo`` is gated and the request lacks its token."""
        token = self.config.get("gated", {}).get(repo)
        if token is None:
            return False
        given = self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if given == token:
            return False
        status = 403 if given else 401
        message = (f"Access to model {repo} is restricted. You must have access to it and be authenticated "
                   "to access it. Please log in." if status == 401 else
                   f"Access to model {repo} is restricted and you are not in the authorized list.")
        self._json({"error": message}, status, {"X-Error-Code": "GatedRepo", "X-Error-Message": message})
        return True

    # -- routes -----------------------------------------------------------------------------------------
    def do_HEAD(self) -> None:
        self._route()

    def do_GET(self) -> None:
        self._route()

    def do_POST(self) -> None:
        self._route()

    def _route(self) -> None:
        self._log()
        url = urlsplit(self.path)
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        query = parse_qs(url.query)
        try:
            if parts[:2] == ["api", "models"] and len(parts) == 2:
                return self._search(query)
            if parts[:2] == ["api", "whoami-v2"]:
                return self._whoami()
            if parts[:2] == ["api", "models"] and len(parts) >= 4:
                repo = "/".join(parts[2:4])
                rest = parts[4:]
                if not rest or rest[0] == "revision":
                    return self._model_info(repo, rest[1] if len(rest) > 1 else "main", query)
                if rest == ["auth-check"]:
                    return self._refused(repo) or self._json({})
                return self._forward()
            if len(parts) >= 5 and parts[2] == "resolve":
                return self._resolve("/".join(parts[:2]), "/".join(parts[4:]))
            return self._forward()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away (or the test killed it mid-transfer)
        except Exception as error:  # a stand-in bug: said to the client, which shows it, not a dropped connection
            self._json({"error": f"stand-in failed: {type(error).__name__}: {error}"}, 500)

    def _search(self, query: dict) -> None:
        search = query.get("search", [""])[0].lower()
        author = query.get("author", [None])[0]
        limit = int(query.get("limit", ["1000"])[0])
        found = []
        for git_dir in sorted(Path(self.config["repos_root"]).glob("*/*/.git")):
            folder = git_dir.parent
            repo = f"{folder.parent.name}/{folder.name}"
            if search in repo.lower() and (author is None or folder.parent.name == author):
                found.append(self._card(repo, folder, query.get("expand", [])))
        self._json(found[:limit])

    def _card(self, repo: str, folder: Path, expand: list[str] = ()) -> dict:
        """A search result; ``expand`` (the Hub's ``expand=`` list) adds the repo's config and safetensors
        parameter counts, as the Hub's listing does."""
        gated = "manual" if repo in self.config.get("gated", {}) else False
        card = {"_id": hashlib.sha1(repo.encode()).hexdigest()[:24], "id": repo, "modelId": repo,
                "author": folder.parent.name, "sha": head_commit(folder), "private": False, "gated": gated,
                "disabled": False, "downloads": 0, "likes": 0, "tags": ["safetensors"], "library_name": "transformers",
                "pipeline_tag": "text-generation", "createdAt": "2026-01-01T00:00:00.000Z"}
        if "config" in expand:
            card["config"] = self._config_summary(folder)
        if "safetensors" in expand:
            card["safetensors"] = parameter_counts(folder)
        if "cardData" in expand:
            card["cardData"] = front_matter(folder / "README.md")
        return card

    @staticmethod
    def _config_summary(folder: Path) -> dict:
        config = folder / "config.json"
        full = json.loads(config.read_text()) if config.exists() else {}
        return {k: full[k] for k in ("architectures", "model_type") if k in full}

    def _whoami(self) -> None:
        given = self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if given and given in self.config.get("gated", {}).values():
            return self._json({"type": "user", "name": "hub-test-user", "auth": {"type": "access_token"}})
        self._json({"error": "Invalid credentials in Authorization header"}, 401)

    def _model_info(self, repo: str, revision: str, query: dict) -> None:
        folder = self._folder(repo)
        status, headers, data, _ = self._upstream("GET", f"/api/models/{repo}/revision/{quote(revision, safe='')}")
        if status != 200 or folder is None:
            return self._send(status, data, headers)
        info = json.loads(data)
        info["gated"] = "manual" if repo in self.config.get("gated", {}) else False
        info["safetensors"] = parameter_counts(folder)
        if (folder / "config.json").exists():
            info["config"] = self._config_summary(folder)
        if query.get("blobs", ["false"])[0] == "true":
            for sibling in info.get("siblings", []):
                path = folder / sibling["rfilename"]
                sibling["size"] = declared_size(path)
                oid = lfs_oid(folder, path)
                if oid:
                    size = path.stat().st_size
                    pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {size}\n"
                    sibling["lfs"] = {"sha256": oid, "size": sibling["size"], "pointerSize": len(pointer)}
        expand = query.get("expand")
        if expand:
            info = {k: v for k, v in info.items() if k in EXPAND_KEEP or k in expand}
        self._json(info)

    def _resolve(self, repo: str, filename: str) -> None:
        if self._refused(repo):
            return
        paced = self.config.get("pace", {}).get(f"{repo}/{filename}")
        folder = self._folder(repo)
        if self.command != "GET" or folder is None or (paced is None and "Range" not in self.headers):
            return self._forward()
        status, headers, _, _ = self._upstream("HEAD", self.path)  # olah's ETag and commit, or its error
        path = folder / filename
        if status != 200 or not path.is_file():
            return self._forward()
        total = path.stat().st_size
        start, end = 0, total - 1
        out = {"ETag": headers.get("etag", ""), "X-Repo-Commit": headers.get("x-repo-commit", ""),
               "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
        code = 200
        if "Range" in self.headers:
            wanted = parse_range(self.headers["Range"], total)
            if wanted is None:
                return self._send(416, b"", {"Content-Range": f"bytes */{total}"})
            (start, end), code = wanted, 206
            out["Content-Range"] = f"bytes {start}-{end}/{total}"
        self.send_response(code)
        for key, value in out.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(end - start + 1))
        self.end_headers()
        with path.open("rb") as f:
            f.seek(start)
            left = end - start + 1
            while left > 0:
                chunk = f.read(min(CHUNK, left))
                self.wfile.write(chunk)
                self.wfile.flush()
                left -= len(chunk)
                if paced:
                    time.sleep(paced)


def main(argv: list[str]) -> int:
    config = json.loads(Path(argv[1]).read_text())
    StandIn.config = config
    server = ThreadingHTTPServer(("127.0.0.1", config["port"]), StandIn)
    server.daemon_threads = True
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
