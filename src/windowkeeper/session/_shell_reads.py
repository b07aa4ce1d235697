"""Shell commands that only read one file: ``cat FILE``, ``sed -n 1,80p FILE``, ``head FILE``, ...

Agents that work through a shell (Codex, OpenHands, SWE-agent, Claude Code's ``Bash``) read files
with commands. :func:`shell_read_path` tells when a command is an unambiguous read of a single
file, and which, so a duplicate-read detector can treat it like a native ``read_file``.

Recognised (the file as the command names it, quotes removed):

- ``cat [-nbsvETAetu] FILE``, ``nl [options] FILE``;
- ``head`` / ``tail`` with ``-n N``, ``-nN``, ``-N``, ``--lines=N``, ``-c N`` (and ``+N`` for
  ``tail``), ``-q``, ``-v``;
- ``sed -n 'A,Bp' FILE`` (or ``Ap``, ``$p``, ``A,$p``; the script also after ``-e``);
- SWE-agent's ``open FILE [LINE]``;
- any of these as the single script of ``bash -c`` / ``bash -lc`` / ``sh -c`` / ``zsh -lc``,
  the way Codex records its shell calls, given as one string or as the argv list.

Anything else is None: pipes, ``&&``/``;`` chains, redirections, command substitution and
variables (``$``, backquotes), globs and brace expansion, ``~`` (the path depends on ``$HOME``),
several files, stdin (``-``), ``tail -f``, ``sed -i``, other ``sed`` scripts, variable
assignments before the command, unbalanced quotes. Pure: nothing is run or looked up.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

__all__ = ["shell_read", "shell_read_path"]

# The patterns are strings, compiled on first use by re's own cache: not at start-up.
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_SPECIAL = frozenset("|&;<>()$`*?[{")
_CAT_FLAGS = r"-[nbsvETAetu]+"
_CAT_LONG = frozenset(
    {
        "--number",
        "--number-nonblank",
        "--squeeze-blank",
        "--show-all",
        "--show-ends",
        "--show-tabs",
        "--show-nonprinting",
    }
)
_COUNT = r"\+?\d+"
_SED_RANGE = r"\s*(?:\d+|\$)(?:\s*,\s*(?:\d+|\$))?\s*p\s*"
_NL_VALUED = frozenset("bdfhilnsvw")
_LINE = r"-?\d+"


def shell_read_path(command: str | Sequence[str]) -> str | None:
    """The file a shell command only reads, or None when it is not such a command.

    ``command`` is a command line (``"sed -n 1,80p src/app.py"``) or an argv list
    (``["bash", "-lc", "cat src/app.py"]``).
    """
    found = shell_read(command)
    return None if found is None else found[0]


def shell_read(command: str | Sequence[str]) -> tuple[str, str] | None:
    """The file a shell command only reads and which part of it: ``(path, part)``, or None.

    ``part`` is ``""`` when the command prints the whole file (``cat``, ``nl``), else the
    command without the file (``"sed -n 1,80p"``, ``"head -n 50"``, ``"open"``): two reads are
    copies of the same text only when their parts are equal.
    """
    words = _words(command) if isinstance(command, str) else list(command)
    if words is None or any(not isinstance(word, str) for word in words):
        return None
    found = _read(words, depth=0)
    if found is None:
        return None
    inner, path = found
    program = inner[0].rsplit("/", 1)[-1]
    if program in _WHOLE:
        return path, ""
    arguments = inner[1:]
    last = len(arguments) - 1 - arguments[::-1].index(path)
    return path, " ".join([program, *arguments[:last], *arguments[last + 1 :]])


def _read(words: list[str], depth: int) -> tuple[list[str], str] | None:
    """The innermost command's words (past ``bash -c``) and the file it reads, or None."""
    if not words:
        return None
    program = words[0].rsplit("/", 1)[-1]
    if "=" in words[0]:
        return None  # an assignment before the command
    if program in _SHELLS:
        script = _shell_script(words[1:])
        inner = None if script is None or depth > 1 else _words(script)
        return None if inner is None else _read(inner, depth + 1)
    reader = _READERS.get(program)
    path = None if reader is None else reader(words[1:])
    return None if path is None else (words, path)


def _shell_script(arguments: list[str]) -> str | None:
    """The script of ``bash -c SCRIPT`` (``-lc``, ``-l -c``, ...), with no positional arguments."""
    if not arguments or not all(word.startswith("-") for word in arguments[:-1]):
        return None
    letters = "".join(word[1:] for word in arguments[:-1] if word != "--login")
    if "c" not in letters or not set(letters) <= {"c", "l"}:
        return None
    return arguments[-1]


def _words(line: str) -> list[str] | None:
    """The words of a simple command line, or None when the shell would do more than split it."""
    words: list[str] = []
    current: list[str] = []
    in_word = False
    position, size = 0, len(line)
    while position < size:
        char = line[position]
        if char in " \t":
            if in_word:
                words.append("".join(current))
                current, in_word = [], False
            position += 1
        elif char == "\n":
            if line[position:].strip():
                return None  # a second command
            break
        elif char == "'":
            end = line.find("'", position + 1)
            if end < 0:
                return None
            current.append(line[position + 1 : end])
            in_word, position = True, end + 1
        elif char == '"':
            closing = _double_quoted(line, position + 1, current)
            if closing is None:
                return None
            in_word, position = True, closing + 1
        elif char == "\\":
            if position + 1 >= size:
                return None
            if line[position + 1] != "\n":  # a backslash-newline joins lines
                current.append(line[position + 1])
                in_word = True
            position += 2
        elif char == "#" and not in_word:
            break  # a comment
        elif char in _SPECIAL or (char == "~" and not in_word):
            return None
        else:
            current.append(char)
            in_word, position = True, position + 1
    if in_word:
        words.append("".join(current))
    return words


def _double_quoted(line: str, position: int, current: list[str]) -> int | None:
    """Append the text of a double-quoted string to ``current``; the index of its closing quote."""
    while position < len(line):
        char = line[position]
        if char == '"':
            return position
        if char in "$`":
            return None  # an expansion inside the quotes
        if char == "\\" and position + 1 < len(line) and line[position + 1] in '$`"\\\n':
            if line[position + 1] != "\n":
                current.append(line[position + 1])
            position += 2
            continue
        current.append(char)
        position += 1
    return None


def _operand(words: list[str]) -> str | None:
    """The single file operand left after the options, or None."""
    if len(words) != 1 or words[0] in ("", "-"):
        return None
    return words[0]


def _cat(arguments: list[str]) -> str | None:
    files: list[str] = []
    options = True
    for word in arguments:
        if options and word == "--":
            options = False
        elif options and (re.fullmatch(_CAT_FLAGS, word) or word in _CAT_LONG):
            continue
        elif options and word.startswith("-") and word != "-":
            return None
        else:
            files.append(word)
    return _operand(files)


def _head_tail(arguments: list[str], *, tail: bool) -> str | None:
    files: list[str] = []
    position = 0
    options = True
    while position < len(arguments):
        word = arguments[position]
        position += 1
        if not options or not word.startswith("-") or word == "-":
            files.append(word)
            continue
        if word == "--":
            options = False
        elif word in ("-n", "-c", "--lines", "--bytes"):
            if position >= len(arguments) or not _counted(arguments[position], tail=tail):
                return None
            position += 1
        elif not _harmless(word, tail=tail):
            return None  # -f, --follow, or an option not known
    return _operand(files)


def _harmless(option: str, *, tail: bool) -> bool:
    """An option of head or tail that only says how much to print."""
    if option[:2] in ("-n", "-c") and _counted(option[2:], tail=tail):
        return True
    if option.startswith(("--lines=", "--bytes=")):
        return _counted(option.split("=", 1)[1], tail=tail)
    return option[1:].isdigit() or option in ("-q", "-v", "--quiet", "--silent", "--verbose")


def _counted(value: str, *, tail: bool) -> bool:
    return bool(re.fullmatch(_COUNT, value)) and (tail or not value.startswith("+"))


def _sed(arguments: list[str]) -> str | None:
    quiet = False
    scripts: list[str] = []
    operands: list[str] = []
    position = 0
    while position < len(arguments):
        word = arguments[position]
        position += 1
        if word in ("-n", "--quiet", "--silent"):
            quiet = True
        elif word in ("-e", "--expression"):
            if position >= len(arguments):
                return None
            scripts.append(arguments[position])
            position += 1
        elif word == "-ne":
            if position >= len(arguments):
                return None
            quiet = True
            scripts.append(arguments[position])
            position += 1
        elif word.startswith("-") and word != "-":
            return None  # -i edits in place; other options change what is printed
        else:
            operands.append(word)
    if not scripts and operands:
        scripts.append(operands.pop(0))
    if not quiet or len(scripts) != 1 or not re.fullmatch(_SED_RANGE, scripts[0]):
        return None
    return _operand(operands)


def _nl(arguments: list[str]) -> str | None:
    files: list[str] = []
    position = 0
    while position < len(arguments):
        word = arguments[position]
        position += 1
        if not word.startswith("-") or word == "-":
            files.append(word)
        elif word == "-p":
            continue
        elif len(word) >= 2 and word[1] in _NL_VALUED:
            if len(word) == 2:  # the value is the next word
                if position >= len(arguments):
                    return None
                position += 1
        else:
            return None
    return _operand(files)


def _open(arguments: list[str]) -> str | None:
    """SWE-agent's ``open FILE [LINE]``."""
    if len(arguments) == 2 and re.fullmatch(_LINE, arguments[1]):
        arguments = arguments[:1]
    return _operand(arguments)


_WHOLE = frozenset({"cat", "nl"})
"""The readers that print the whole file, whatever their options."""

_READERS: dict[str, Callable[[list[str]], str | None]] = {
    "cat": _cat,
    "head": lambda arguments: _head_tail(arguments, tail=False),
    "tail": lambda arguments: _head_tail(arguments, tail=True),
    "sed": _sed,
    "nl": _nl,
    "open": _open,
}
