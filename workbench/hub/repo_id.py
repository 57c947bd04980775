"""A repo id as a user types it, checked before anything is asked of the Hub."""
from __future__ import annotations

import re

REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}$")
# a model's page on the Hub, as copied from the browser: its id, and a revision where the page is of one
HUB_URL = re.compile(r"^https?://(?:www\.)?(?:huggingface\.co|hf\.co)/(?P<id>[\w.-]+/[\w.-]+)"
                     r"(?:/(?:tree|blob|resolve|commit)/(?P<revision>[^/?#\s]+))?")
NOT_MODELS = {"datasets": "a dataset's page", "spaces": "a Space's page"}  # the Hub's other kinds of repo


class HubInputError(ValueError):
    """What the user typed cannot be a repo id: the cause and the fix."""


def hub_address(text: str) -> tuple[str, str | None]:
    """A model's page copied from the browser (``https://huggingface.co/Qwen/Qwen2.5-7B-Instruct/tree/v1``) as its
    repo id and revision; anything else as typed (stripped), with no revision."""
    url = HUB_URL.match(text.strip())
    if url is None or url["id"].split("/")[0] in NOT_MODELS:
        return text.strip(), None
    return url["id"], url["revision"]


def check_repo_id(text: str) -> str:
    """The repo id (``owner/name``), stripped, a model's page on the Hub as its id; HubInputError naming what is
    wrong otherwise."""
    repo = text.strip()
    if not repo:
        raise HubInputError("No model named: type a repo id such as Qwen/Qwen2.5-0.5B-Instruct, or search by name.")
    url = HUB_URL.match(repo)
    if url:
        kind = NOT_MODELS.get(url["id"].split("/")[0])
        if kind:
            raise HubInputError(f"That is {kind} on the Hub, not a model's: give a model's page or its owner/name "
                                "(for example Qwen/Qwen2.5-0.5B-Instruct).")
        return url["id"]
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
