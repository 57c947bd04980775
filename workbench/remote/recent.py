"""Servers connected to before, newest first, kept in the user's settings folder, never with their key."""
from __future__ import annotations

import json
from pathlib import Path

from workbench.paths import config_dir, write_text_atomically
from workbench.remote.spec import KVEventsEndpoint, ServerSpec

MAX_RECENT = 10


def recent_path() -> Path:
    return config_dir() / "recent_servers.json"


def recent_servers() -> list[ServerSpec]:
    """The remembered servers (no key: the user types it again); [] when the file is missing or unreadable."""
    try:
        entries = json.loads(recent_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    servers = []
    for entry in entries if isinstance(entries, list) else []:
        try:
            endpoints = tuple(KVEventsEndpoint(pub, replay or None, rank) for rank, (pub, replay) in
                              enumerate(zip(entry.get("kv_events", []), entry.get("kv_replay", []) or [""] * 99)))
            servers.append(ServerSpec(str(entry["base_url"]), verify_tls=bool(entry.get("verify_tls", True)),
                                      kv_events_endpoints=endpoints))
        except (KeyError, TypeError, AttributeError):
            continue
    return servers


def remember(spec: ServerSpec) -> None:
    """Puts ``spec`` first in the list (its public part only: the key is never written)."""
    entries = [s.public() for s in recent_servers() if s.api_root != spec.api_root]
    entries.insert(0, spec.public())
    write_text_atomically(recent_path(), json.dumps(entries[:MAX_RECENT], indent=2))
