"""Where the Hub is and what the client may do, as ``huggingface_hub`` reads it from the environment:
``HF_ENDPOINT`` (a mirror), ``HF_HUB_OFFLINE``, ``HF_HOME`` / ``HF_HUB_CACHE`` and the token (``HF_TOKEN``,
or the file ``huggingface_hub.login`` writes). Read at each call, shown in the window as they are."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_ENDPOINT = "https://huggingface.co"
TRUE = {"1", "on", "yes", "true"}


@dataclass(frozen=True)
class HubSettings:
    endpoint: str
    offline: bool
    home: Path
    cache_dir: Path
    token_source: str  # "HF_TOKEN", "the token file", or "none"

    def lines(self) -> list[str]:
        return [f"Hub: {self.endpoint}" + (" (HF_ENDPOINT)" if self.endpoint != DEFAULT_ENDPOINT else ""),
                f"Cache: {self.cache_dir}" + (" (HF_HOME)" if os.environ.get("HF_HOME") else ""),
                "Offline: HF_HUB_OFFLINE is set, nothing is fetched" if self.offline else "Online",
                f"Token: {self.token_source}"]


def hub_settings() -> HubSettings:
    home = Path(os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser()
                / "huggingface").expanduser()
    cache = Path(os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE") or home / "hub")
    token_file = Path(os.environ.get("HF_TOKEN_PATH") or home / "token")
    if os.environ.get("HF_TOKEN"):
        source = "HF_TOKEN"
    elif token_file.is_file() and token_file.read_text(encoding="utf-8", errors="replace").strip():
        source = f"the token file ({token_file})"
    else:
        source = "none"
    return HubSettings((os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/"),
                       os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in TRUE, home, cache.expanduser(), source)


def hub_api(token: str | None = None):
    """huggingface_hub's client for the endpoint the environment names now (a token given here is used
    for this client only: it is never written anywhere)."""
    from huggingface_hub import HfApi

    return HfApi(endpoint=hub_settings().endpoint, token=token)


def remember_token(token: str) -> None:
    """Keeps the token where huggingface_hub keeps it (``huggingface_hub.login``: the token file under
    HF_HOME), never in the app's own files."""
    from huggingface_hub import login

    login(token=token, add_to_git_credential=False, skip_if_logged_in=False)
