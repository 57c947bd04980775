"""Pasted command text taken apart: blocks, line continuations, comments, ``NAME=value`` prefixes,
the command and its ``--flag value`` / ``--flag=value`` / bare ``--flag`` options, in the order given.

No meaning is given here (that is ``command_in``): only the shapes a shell, a YAML file or a Python
call have. Every failure is a :class:`CommandTextError` naming the cause and the fix.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
YAML_LINE = re.compile(r"^[A-Za-z_][\w-]*\s*:(\s|$)")
NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")


class CommandTextError(ValueError):
    """Text that cannot be read as a command line: the message says why and what to do."""


@dataclass(frozen=True)
class Option:
    flag: str  # as written: "--vllm_max_model_len", "--no-enable-prefix-caching", "-tp"
    value: str | None  # None: a bare flag
    name: str  # the flag without dashes, dashes as underscores: "vllm_max_model_len"


@dataclass
class ShellCommand:
    env: dict[str, str] = field(default_factory=dict)
    program: list[str] = field(default_factory=list)  # "vllm", "serve", "<model>" / "swift", "infer"
    options: list[Option] = field(default_factory=list)


def decode(data: bytes, name: str) -> str:
    """A file's bytes as text, or CommandTextError (binary, not UTF-8, empty)."""
    if b"\x00" in data:
        raise CommandTextError(f"{name} is not a text file (it holds binary data): open the file that holds the "
                               "command line, a script or a YAML config")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise CommandTextError(f"{name}, line {line}: this is not UTF-8 text; save it as UTF-8 and open it again") \
            from exc
    return text


def _lines_of(block: str) -> list[str]:
    return [line.strip() for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _starts_command(line: str) -> bool:
    """``vllm serve ...``, ``NAME=value docker run ...``, ``nohup python -m ...``: a line that runs a program
    the import reads."""
    words = [w for w in line.split() if not ENV.match(w)]
    words = words[1:] if words[:1] == ["nohup"] else words
    return bool(words) and words[0].split("/")[-1] in PROGRAMS


def _commands_of(block: str) -> list[str]:
    """A block cut where a line that does not continue the one before (no backslash at its end) runs a
    program again, or exports again, after a command: the shell runs each such line on its own. The
    comments just above a command go with it."""
    pieces, current, has_command, continued = [], [], False, False
    for line in block.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            current.append(line)
            continue
        if has_command and not continued and (_starts_command(stripped) or stripped.startswith("export ")):
            cut = len(current)
            while not current[cut - 1].strip() or current[cut - 1].lstrip().startswith("#"):
                cut -= 1  # a command line is above, so this stops
            pieces.append("\n".join(current[:cut]))
            current, has_command = current[cut:], False
        current.append(line)
        has_command = has_command or not stripped.startswith("export ")
        continued = bool(re.search(r"\\[ \t]*$", line))
    return pieces + ["\n".join(current)]


def split_blocks(text: str) -> list[str]:
    """Commands separated by blank lines, or each on lines of its own (``_commands_of``); a block of
    comments only is not a command. A block of ``export NAME=value`` lines only is the environment of
    every command after it (as the shell keeps an export for the rest of the script), not a command of
    its own."""
    blocks = [b.strip("\n") for b in re.split(r"\n[ \t]*\n", text.replace("\r\n", "\n"))]
    blocks = [piece for block in blocks for piece in _commands_of(block)]
    commands, exports, unused = [], [], []
    for block in (b for b in blocks if _lines_of(b)):
        if all(line.startswith("export ") for line in _lines_of(block)):
            exports.append(block)
            unused.append(block)
        else:
            commands.append("\n".join(exports + [block]))
            unused = []
    return commands + unused  # exports after the last command: as before, blocks of their own


def looks_like_python(text: str) -> bool:
    return bool(re.search(r"\bLLM\s*\(", text))


def looks_like_yaml(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return bool(lines) and all(YAML_LINE.match(line.strip()) for line in lines) and \
        not any(line.lstrip().startswith("-") for line in lines)


SEPARATORS = {"&", "&&", ";", "|", "||"}
REDIRECT = re.compile(r"^(\d*|&)>>?(&\d+)?$")  # >, >>, 2>, &>, 2>&1 (the target is the next word)
REDIRECT_TO = re.compile(r"^(\d*|&)>>?\S+$")  # >log.txt, 2>>err.log, 2>&1
PROGRAMS = ("vllm", "swift", "docker", "podman", "python", "python3")


def _exports_first(lines: list[str]) -> list[str]:
    """``export NAME=value`` lines as ``NAME=value`` words before the command (how the shell hands them on)."""
    exports = [line.strip()[len("export "):] for line in lines if line.strip().startswith("export ")]
    rest = [line for line in lines if not line.strip().startswith("export ")]
    return ([" ".join(exports)] if exports else []) + rest


def _the_command(words: list[str]) -> list[str]:
    """Of a line with ``&``, ``| tee log``, ``2>&1``, ``> log``, ``nohup``: the command that runs a
    program the import reads (the first one otherwise), without its redirections."""
    pieces, piece, skip = [], [], False
    for word in words:
        if skip:
            skip = False
        elif word in SEPARATORS:
            pieces.append(piece)
            piece = []
        elif REDIRECT.match(word):
            skip = not word.endswith(("&1", "&2"))
        elif not REDIRECT_TO.match(word):
            piece.append(word[:-1] if word.endswith("&") and not word.endswith("&&") and len(word) > 1 else word)
    pieces.append(piece)
    pieces = [[w for w in p if w != "nohup"] for p in pieces if p]
    ours = [p for p in pieces if any(w.split("/")[-1] in PROGRAMS or w.startswith("-") for w in p)]
    return (ours or pieces or [[]])[0]


def shell_words(text: str) -> list[str]:
    """The words of a shell command: comment lines dropped, backslash-newline continuations joined (with
    spaces after the backslash too, and one at the very end), ``export`` lines as the command's
    environment, and of ``cmd & ``, ``cmd 2>&1 | tee log``... only the command itself."""
    lines = _exports_first([line for line in text.splitlines() if not line.lstrip().startswith("#")])
    joined = re.sub(r"\\[ \t]*(\n|$)", " ", "\n".join(lines).rstrip())
    try:
        words = shlex.split(joined)  # not comments=True: "LaTeX_OCR#1000" is a dataset's sample count
    except ValueError as exc:  # shlex: "No closing quotation", "No escaped character"
        raise CommandTextError(f"the command's quotes do not balance ({exc}): close the quote that is open, "
                               "e.g. --vllm_limit_mm_per_prompt '{\"image\": 5}'") from exc
    comment = next((i for i, word in enumerate(words) if word.startswith("#")), len(words))
    return _the_command(words[:comment])  # a trailing "# ..." comment, as the shell reads it


def _is_value(word: str) -> bool:
    return not word.startswith("-") or bool(NUMBER.match(word))


def parse_shell(words: list[str]) -> ShellCommand:
    """Env prefixes, then the program words, then the options. A flag takes the next word as its value
    unless that word is itself a flag (then it is bare: a bool flag, or a flag missing its value)."""
    command = ShellCommand()
    index = 0
    while index < len(words) and ENV.match(words[index]):
        name, _, value = words[index].partition("=")
        command.env[name] = value
        index += 1
    while index < len(words) and not words[index].startswith("-"):
        command.program.append(words[index])
        index += 1
    while index < len(words):
        word = words[index]
        index += 1
        if not word.startswith("-") and command.options and command.options[-1].value is not None:
            last = command.options[-1]  # a list option's next item: --val_dataset a b
            command.options[-1] = Option(last.flag, f"{last.value} {word}", last.name)
            continue
        if not word.startswith("-"):
            raise CommandTextError(f"'{word}' stands alone: each value follows its flag (--flag value or "
                                   "--flag=value); put it after the flag it belongs to")
        flag, has_equals, value = word.partition("=")
        if not has_equals:
            value = None
            if index < len(words) and _is_value(words[index]):
                value = words[index]
                index += 1
        command.options.append(Option(flag, value, flag.lstrip("-").replace("-", "_")))
    return command
