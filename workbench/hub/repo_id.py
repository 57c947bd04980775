"""A repo id as a user types it, checked before anything is asked of the Hub."""
from __future__ import annotations

import re
import shlex

REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}$")
# a model's page on the Hub, as copied from the browser (with or without https://), or its git address: its id,
# and a revision where the page is of one
HUB_URL = re.compile(r"^(?:(?:https?://)?(?:www\.)?(?:huggingface\.co|hf\.co)/|git@hf\.co:)(?P<id>[\w.-]+/[\w.-]+?)"
                     r"(?:\.git)?(?:/(?:tree|blob|resolve|commit)/(?P<revision>[^/?#\s]+))?(?=$|[/?#\s])")
NOT_MODELS = {"datasets": "a dataset's page", "spaces": "a Space's page"}  # the Hub's other kinds of repo
# the commands a model card and vLLM's docs give, whose model the dialog takes from a pasted line or snippet
COMMANDS = {("vllm", "serve"), ("huggingface-cli", "download"), ("hf", "download"), ("git", "clone")}
QUOTED_ID = re.compile(r"""["']([A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96})["']""")  # from_pretrained("Qwen/…")


class HubInputError(ValueError):
    """What the user typed cannot be a repo id: the cause and the fix."""


def hub_address(text: str) -> tuple[str, str | None]:
    """A model's page copied from the browser (``https://huggingface.co/Qwen/Qwen2.5-7B-Instruct/tree/v1``), or a
    snippet that names the model (``vllm serve "Qwen/…"``, ``hf download Qwen/… --revision v1``, ``git clone
    https://huggingface.co/Qwen/…``, ``docker run … --model Qwen/…``, ``LLM(model="Qwen/…")``, the Hub's
    "Use this model" box whole), as its repo id and revision; anything else as typed (stripped), with no
    revision."""
    typed = text.strip()
    repo, revision = _from_snippet(typed) or (typed, None)
    url = HUB_URL.match(repo)
    if url is None or url["id"].split("/")[0] in NOT_MODELS:
        return repo, revision
    return url["id"], url["revision"] or revision


def _from_snippet(typed: str) -> tuple[str, str | None] | None:
    try:
        words = shlex.split(typed.replace("\\\n", " "))
    except ValueError:  # a quote left open
        words = typed.split()
    for i, word in enumerate(words[:-1]):
        if (word.rsplit("/", 1)[-1], words[i + 1]) in COMMANDS:
            rest = words[i + 2:]
            model = _option(rest, "--model") or next((w for w in rest if _names_a_model(w)), None)
            if model:
                return model, _option(rest, "--revision")
    model = _option(words, "--model")
    if model:
        return model, _option(words, "--revision")
    if len(words) == 1 and len(typed) > 2 and typed[0] in "\"'" and typed[-1] == typed[0]:  # "Qwen/…" in quotes
        return words[0], None
    quoted = QUOTED_ID.search(typed)
    return (quoted[1], None) if quoted and len(words) > 1 else None


def _option(words: list[str], name: str) -> str | None:
    for i, word in enumerate(words):
        if word == name and i + 1 < len(words):
            return words[i + 1]
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
    return None


def _names_a_model(word: str) -> bool:
    return bool(REPO_ID.match(word) or HUB_URL.match(word))


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
