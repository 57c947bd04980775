"""Downloads of Hub models, one process each (``download_worker``), watched from a thread of their own:
progress read from the cache on disk (bytes, rate, time left), Cancel within two seconds (the process is
killed; the part file stays and the next attempt resumes it), a disk-space check before anything moves,
and a journal in the data folder so a download the app did not finish (a crash, a kill) is offered again
at the next start. No Qt: the window reads :meth:`Downloads.progress` on its timer.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from workbench.engine.vllm_plugin.process_life import die_with_parent
from workbench.hub.cache_files import bytes_on_disk
from workbench.hub.files import RepoFile
from workbench.hub.settings import hub_settings
from workbench.paths import data_dir, write_text_atomically

WORKER_MODULE = "workbench.hub.download_worker"
POLL_S = 0.25
KILL_GRACE_S = 1.0
SPACE_MARGIN = 256 << 20  # room left beside a download for the cache's own files (at most)
RUNNING, DONE, FAILED, CANCELLED = "downloading", "done", "failed", "cancelled"


def size_text(num_bytes: int) -> str:
    """As the planner writes sizes (the application model imports this module: no planner here)."""
    return f"{num_bytes / (1 << 30):.2f} GiB" if num_bytes >= 1 << 28 else f"{num_bytes / (1 << 20):.1f} MiB"


class DiskSpaceError(OSError):
    """Not enough room for a download: the folder, what it needs and what it has."""


@dataclass(frozen=True)
class DownloadPlan:
    repo_id: str
    revision: str
    files: tuple[RepoFile, ...]

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    def to_json(self) -> dict:
        return {"repo_id": self.repo_id, "revision": self.revision,
                "files": [{"name": f.name, "size": f.size, "sha256": f.sha256, "blob_id": f.blob_id}
                          for f in self.files]}

    @classmethod
    def from_json(cls, data: dict) -> "DownloadPlan":
        files = tuple(RepoFile(f["name"], f["size"], f.get("sha256"), f.get("blob_id")) for f in data["files"])
        return cls(data["repo_id"], data["revision"], files)


@dataclass(frozen=True)
class DownloadProgress:
    repo_id: str
    state: str  # RUNNING, DONE, FAILED or CANCELLED
    done_bytes: int
    total_bytes: int
    files_done: int
    num_files: int
    rate_bytes_s: float
    message: str = ""
    snapshot: str | None = None  # the model's folder once done

    @property
    def fraction(self) -> float:
        return min(1.0, self.done_bytes / self.total_bytes) if self.total_bytes else 1.0

    @property
    def eta_s(self) -> float | None:
        left = self.total_bytes - self.done_bytes
        return left / self.rate_bytes_s if self.rate_bytes_s > 0 and left > 0 else None

    def text(self) -> str:
        parts = [f"{size_text(self.done_bytes)} of {size_text(self.total_bytes)}",
                 f"{self.files_done}/{self.num_files} files"]
        if self.state == RUNNING and self.rate_bytes_s > 0:
            parts.append(f"{self.rate_bytes_s / (1 << 20):.1f} MiB/s")
            if self.eta_s is not None:
                parts.append(f"{int(self.eta_s // 60)} min {int(self.eta_s % 60)} s left")
        return " · ".join(parts) + (f" · {self.message}" if self.message else "")


def journal_dir() -> Path:
    return data_dir() / "hub" / "downloads"


def _journal(repo_id: str) -> Path:
    return journal_dir() / (repo_id.replace("/", "--") + ".json")


def unfinished() -> list[DownloadPlan]:
    """Downloads started and not finished (the app was closed, killed or crashed while they ran, or they
    were cancelled): the next start offers to resume them."""
    plans = []
    for path in sorted(journal_dir().glob("*.json")) if journal_dir().is_dir() else ():
        try:
            plans.append(DownloadPlan.from_json(json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError, KeyError, TypeError):
            path.unlink(missing_ok=True)  # a journal cut short by the kill itself: nothing to offer
    return plans


def forget(repo_id: str) -> None:
    _journal(repo_id).unlink(missing_ok=True)


def check_space(plan: DownloadPlan, cache_dir: Path) -> None:
    """DiskSpaceError naming the folder and the shortfall, before any byte moves."""
    have = bytes_on_disk(cache_dir, plan.repo_id, plan.files)
    need = plan.total_bytes - have
    folder = cache_dir
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    free = shutil.disk_usage(folder).free
    margin = min(SPACE_MARGIN, need // 20)
    if free < need + margin:
        gib = 1 << 30
        raise DiskSpaceError(f"{plan.repo_id} needs {need / gib:.2f} GiB more in {cache_dir} and {folder} has "
                             f"{free / gib:.2f} GiB free: free {(need + margin - free) / gib:.2f} GiB there, "
                             "or set HF_HOME (or HF_HUB_CACHE) to a disk with room and start the app again.")


class Download:
    """One model's download: its process, and the thread that watches it."""

    def __init__(self, plan: DownloadPlan, token: str | None = None):
        self.plan, self.token = plan, token
        self.cache_dir = hub_settings().cache_dir
        self._lock = threading.Lock()
        self._progress = DownloadProgress(plan.repo_id, RUNNING, 0, plan.total_bytes, 0, len(plan.files), 0.0,
                                          "starting")
        self._cancel = threading.Event()
        self.process: subprocess.Popen | None = None
        self.thread = threading.Thread(target=self._run, name=f"download {plan.repo_id}", daemon=True)

    def start(self) -> None:
        check_space(self.plan, self.cache_dir)
        journal_dir().mkdir(parents=True, exist_ok=True)
        write_text_atomically(_journal(self.plan.repo_id), json.dumps(self.plan.to_json()))
        self.thread.start()

    def progress(self) -> DownloadProgress:
        with self._lock:
            return self._progress

    def cancel(self) -> None:
        """Stops the transfer (the process is killed at once); the part downloaded stays to resume."""
        self._cancel.set()

    def wait(self, timeout_s: float | None = None) -> DownloadProgress:
        self.thread.join(timeout_s)
        return self.progress()

    def _set(self, **changes) -> None:
        with self._lock:
            self._progress = replace(self._progress, **changes)

    def _run(self) -> None:
        request = journal_dir() / (self.plan.repo_id.replace("/", "--") + ".request")  # not a journal (*.json)
        write_text_atomically(request, json.dumps(self.plan.to_json()))
        env = {**os.environ, "HF_HUB_DISABLE_XET": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
        if self.token:
            env["HF_TOKEN"] = self.token
        try:
            self.process = subprocess.Popen([sys.executable, "-m", WORKER_MODULE, str(request)], env=env,
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                            stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
        except OSError as exc:
            self._set(state=FAILED, message=f"the download could not start: {exc}")
            return
        events: list[dict] = []
        reader = threading.Thread(target=self._read_events, args=(events,), daemon=True)
        reader.start()
        self._watch(events)
        reader.join(2.0)
        request.unlink(missing_ok=True)
        self._finish(events)

    def _read_events(self, events: list[dict]) -> None:
        for line in self.process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            events.append(event)
            if "file" in event:
                self._set(files_done=self.progress().files_done + 1)

    def _watch(self, events: list[dict]) -> None:
        files = self.plan.files
        samples: list[tuple[float, int]] = []
        while self.process.poll() is None:
            if self._cancel.is_set():
                self._stop_process()
                break
            done = bytes_on_disk(self.cache_dir, self.plan.repo_id, files)
            now = time.monotonic()
            samples = [(t, b) for t, b in samples if now - t <= 5.0] + [(now, done)]
            rate = (samples[-1][1] - samples[0][1]) / (samples[-1][0] - samples[0][0]) if len(samples) > 1 else 0.0
            self._set(done_bytes=done, rate_bytes_s=max(0.0, rate), message="")
            self._cancel.wait(POLL_S)

    def _stop_process(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _finish(self, events: list[dict]) -> None:
        done_bytes = bytes_on_disk(self.cache_dir, self.plan.repo_id, self.plan.files)
        if self._cancel.is_set():
            self._set(state=CANCELLED, done_bytes=done_bytes, rate_bytes_s=0.0,
                      message="cancelled: the part downloaded stays, and Resume goes on from it")
            return
        ending = next((e for e in reversed(events) if "done" in e or "error" in e), None)
        if ending is not None and "done" in ending:
            forget(self.plan.repo_id)
            self._set(state=DONE, done_bytes=self.plan.total_bytes, rate_bytes_s=0.0, snapshot=ending["done"],
                      message="downloaded and checked")
            return
        stderr = (self.process.stderr.read() or "").strip().splitlines()[-1:] if self.process.stderr else []
        self._set(state=FAILED, done_bytes=done_bytes, rate_bytes_s=0.0,
                  message=failure_text(ending, stderr, self.plan.repo_id, str(self.cache_dir), self.token is not None))


def failure_text(ending: dict | None, stderr: list[str], repo_id: str, cache_dir: str, token_given: bool) -> str:
    """What went wrong, with the fix; the part downloaded stays (Resume goes on from it)."""
    if ending is None:
        return f"the download stopped ({' '.join(stderr) or 'its process ended'}); Resume goes on from what arrived"
    kind, text = ending.get("kind"), ending.get("error", "")
    if kind == "disk full":
        return (f"the disk holding {cache_dir} filled up: free space there (or set HF_HOME to a disk with room), "
                "then Resume goes on from what arrived")
    if kind == "checksum":
        return text
    status = ending.get("status")
    if status in (401, 403) or "Gated" in (kind or ""):
        return (f"the Hub refused the download ({status or kind}): {repo_id} needs a token that may read it; give "
                "one and Resume")
    if any(word in (kind or "") + text for word in ("Connect", "Timeout", "LocalEntryNotFound", "Network")):
        return f"the network went away ({kind}); Resume goes on from what arrived once the Hub can be reached"
    return f"{kind}: {text[:200]}; Resume goes on from what arrived"


class Downloads:
    """The app's downloads, one a repo at a time; the application model holds the one instance."""

    def __init__(self):
        self._downloads: dict[str, Download] = {}

    def start(self, plan: DownloadPlan, token: str | None = None) -> Download:
        """DiskSpaceError before anything moves; a repo already downloading is not started twice."""
        running = self._downloads.get(plan.repo_id)
        if running is not None and running.progress().state == RUNNING:
            return running
        download = Download(plan, token)
        download.start()
        self._downloads[plan.repo_id] = download
        return download

    def get(self, repo_id: str) -> Download | None:
        return self._downloads.get(repo_id)

    def running(self) -> list[Download]:
        return [d for d in self._downloads.values() if d.progress().state == RUNNING]

    def cancel_all(self, timeout_s: float = 3.0) -> None:
        """The app is closing: each transfer stops, its part stays to resume at the next start."""
        for download in self.running():
            download.cancel()
        for download in list(self._downloads.values()):
            download.wait(timeout_s)
