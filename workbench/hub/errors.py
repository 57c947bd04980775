"""huggingface_hub's errors as messages that name the cause and the fix."""
from __future__ import annotations


class HubError(RuntimeError):
    """A Hub request failed: the message says why and what to do. ``needs_token``: a token would help."""

    def __init__(self, message: str, needs_token: bool = False):
        super().__init__(message)
        self.needs_token = needs_token


def hub_error(exc: BaseException, repo_id: str, endpoint: str, token_given: bool) -> HubError:
    from huggingface_hub import errors

    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(exc, errors.OfflineModeIsEnabled):
        return HubError("HF_HUB_OFFLINE is set, so nothing is asked of the Hub: unset it (and start the app again) "
                        "to search and download, or choose a model already downloaded.")
    if isinstance(exc, errors.GatedRepoError):
        if token_given:
            return HubError(f"{repo_id} is gated and this token may not read it: accept the model's licence on "
                            f"{endpoint}/{repo_id} with the account the token belongs to, or give that account's "
                            "token.", needs_token=True)
        return HubError(f"{repo_id} is gated: accept its licence on {endpoint}/{repo_id}, then give an access token "
                        "(Settings > Access Tokens on the Hub).", needs_token=True)
    if isinstance(exc, errors.RevisionNotFoundError):
        return HubError(f"{repo_id} has no such revision: leave the revision empty for the main branch, or give a "
                        "branch, tag or commit the repo has.")
    if isinstance(exc, errors.LocalEntryNotFoundError):
        return HubError(f"The Hub cannot be reached at {endpoint}, and the file is not in the cache yet. Check the "
                        "network, or set HF_ENDPOINT to a mirror this machine reaches.")
    if isinstance(exc, errors.EntryNotFoundError):
        return HubError(f"{repo_id} lacks a file it needs ({exc}): choose another revision or repo.")
    if isinstance(exc, errors.RepositoryNotFoundError) or status == 404:
        hint = " (or a token that may read it, if it is private)" if not token_given else ""
        return HubError(f"No model {repo_id} on {endpoint}: check the owner/name spelling{hint}.",
                        needs_token=not token_given)
    if status == 401:
        return HubError(f"The Hub refused the token (401) for {repo_id}: it is wrong or revoked. Give a valid token, "
                        "or sign out to go on without one.", needs_token=True)
    if status == 403:
        return HubError(f"The token may not read {repo_id} (403): give it read access on the Hub, or use another "
                        "token.", needs_token=True)
    if isinstance(exc, (OSError, errors.HfHubHTTPError)) or "connect" in type(exc).__name__.lower():
        return HubError(f"The Hub cannot be reached at {endpoint} ({type(exc).__name__}: {str(exc)[:160]}). Check the "
                        "network, or set HF_ENDPOINT to a mirror this machine reaches.")
    return HubError(f"{repo_id}: {type(exc).__name__}: {str(exc)[:200]}")
