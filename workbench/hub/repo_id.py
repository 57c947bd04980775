"""A repo id as a user types it, checked before anything is asked of the Hub."""
from __future__ import annotations

import re

REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}$")
HUB_URL = re.compile(r"^https?://(?:www\.)?(?:huggingface\.co|hf\.co)/(?P<id>[\w.-]+/[\w.-]+)")


class HubInputError(ValueError):
    """What the user typed cannot be a repo id: the cause and the fix."""


def check_repo_id(text: str) -> str:
    """The repo id (``owner/name``), stripped; HubInputError naming what is wrong otherwise."""
    repo = text.strip()
    if not repo:
        raise HubInputError("No model named: type a repo id such as Qwen/Qwen2.5-0.5B-Instruct, or search by name.")
    url = HUB_URL.match(repo)
    if url:
        raise HubInputError(f"That is a web address, not a repo id: write {url['id']}.")
    if "://" in repo or repo.startswith("www."):
        raise HubInputError("That is a web address, not a repo id: give the model's owner/name as the Hub shows it "
                            "(for example Qwen/Qwen2.5-0.5B-Instruct).")
    if ".." in repo or repo.startswith(("/", "~", ".")) or "\\" in repo:
        raise HubInputError(f"'{repo}' is not a repo id: an id is owner/name, without '..' or a path. For a model "
                            "folder on this machine use Model > Choose model….")
    if not REPO_ID.match(repo):
        raise HubInputError(f"'{repo}' is not a repo id: it is owner/name, letters, digits, '-', '_' and '.' "
                            "(for example Qwen/Qwen2.5-0.5B-Instruct).")
    return repo
