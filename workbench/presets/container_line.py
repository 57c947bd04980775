"""A ``docker run`` / ``podman run`` line around vLLM's image: the container's own flags set apart from
vLLM's, its ``-e NAME=value`` environment, the image and its tag, and the words the image's entrypoint
(``vllm serve``) is given.

The flags are Docker's (``docker run --help``, Docker 28) and Podman's that take a value; any other flag
before the image is taken as a bare one (``--rm``, ``-it``, ``--privileged``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from workbench.presets.command_text import CommandTextError

RUNTIMES = ("docker", "podman", "nerdctl")
TAKES_VALUE = {
    "-e", "--env", "--env-file", "-p", "--publish", "-v", "--volume", "--mount", "--name", "--ipc", "--gpus",
    "--device", "--security-opt", "--shm-size", "--network", "--net", "--runtime", "--ulimit", "-w", "--workdir",
    "--entrypoint", "-u", "--user", "--cap-add", "--cap-drop", "--group-add", "--memory", "-m", "--cpus",
    "--cpuset-cpus", "--label", "-l", "--hostname", "-h", "--add-host", "--platform", "--pull", "--restart",
    "--log-driver", "--log-opt", "--tmpfs", "--pid", "--userns", "--hooks-dir", "--annotation",
}
VLLM_IMAGE = re.compile(r"(^|/)vllm[-\w]*(:|$)")  # vllm/vllm-openai, docker.io/vllm/vllm-openai-cpu, ...
VERSION_TAG = re.compile(r"^v?(\d+\.\d+(\.\d+)?)")


@dataclass
class ContainerLine:
    runtime: str
    image: str
    tag: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)  # the container's own, as written
    words: list[str] = field(default_factory=list)  # what the entrypoint is given

    @property
    def vllm_version(self) -> str | None:
        found = VERSION_TAG.match(self.tag or "")
        return found.group(1) if found else None


def is_container_line(words: list[str]) -> bool:
    return len(words) > 1 and words[0].split("/")[-1] in RUNTIMES and words[1] in ("run", "container")


def _env_word(word: str, env: dict[str, str]) -> None:
    name, has_value, value = word.partition("=")
    env[name] = value if has_value else f"${name}"  # -e HF_TOKEN: the host's own value, not in the text


def read_container_line(words: list[str]) -> ContainerLine:
    """The parts of ``docker run [flags] IMAGE [vllm serve] [ARGS]``; CommandTextError when there is no
    image."""
    index = 2 if words[1] == "run" else 3  # "docker run" / "podman container run"
    env, flags = {}, []
    while index < len(words) and words[index].startswith("-"):
        flag, has_equals, value = words[index].partition("=")
        index += 1
        if not has_equals and flag in TAKES_VALUE and index < len(words):
            value, has_equals = words[index], True
            index += 1
        if flag in ("-e", "--env"):
            _env_word(value, env)
        flags.append(f"{flag} {value}" if has_equals else flag)
    if index >= len(words):
        raise CommandTextError(f"this {words[0]} line names no image: write the image after the container's "
                               "flags, e.g. vllm/vllm-openai:latest, then the model and vLLM's options")
    image, _, tag = words[index].partition(":")
    rest = words[index + 1:]
    if rest[:2] == ["vllm", "serve"]:
        rest = rest[2:]  # an image whose entrypoint is a shell, given the whole command
    return ContainerLine(words[0].split("/")[-1], image, tag or None, env, flags, rest)
