"""Which files a tool call writes, read from the text of the call: patches and shell commands.

Two kinds of call change files without naming them in an input key of their own:

- a patch text, as given to ``apply_patch``-style tools (Codex's ``input``, OpenCode's
  ``patchText``, a ``patch`` key): the ``*** Add File:`` / ``*** Update File:`` /
  ``*** Delete File:`` / ``*** Move to:`` headers of the patch format, and the ``+++ b/path``
  lines of a unified diff (the ``--- a/path`` line when the file is deleted);
- a shell command: the target of an output redirection (``> file``, ``>> file``, ``&> file``),
  the files of ``tee`` and of an in-place ``sed -i``. A quoted word or a backslash-continued
  line spanning line breaks belongs to one command. Here-document bodies are skipped, as are
  ``/dev/...`` and Windows device targets (``> nul``), descriptor duplications (``2>&1``) and
  targets known only when the command runs (``> $out``).

Both are best-effort readings of what can be seen in the text; neither runs anything.
"""

from __future__ import annotations

import re
from functools import cache

__all__ = ["patch_headers", "patch_paths", "shell_write_paths"]


@cache
def _patch_header() -> re.Pattern[str]:
    return re.compile(
        r"^\*\*\* (?:(?:Add|Update|Delete) File|Move to): (?P<path>.+?)\s*$"
        r"|^\+\+\+ (?P<new>\S.*?)\s*$"
        r"|^--- (?P<old>\S.*?)\s*$",
        re.MULTILINE,
    )


def _diff_path(text: str) -> str | None:
    path = text.split("\t", 1)[0].strip()
    if path.startswith('"') and path.endswith('"') and len(path) > 1:
        path = path[1:-1]
    if not path or path == "/dev/null":
        return None
    if path.startswith(("a/", "b/")):
        path = path[2:]
    return path or None


def patch_headers(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, path)`` of each line of ``text`` that names a file the patch changes.

    In a unified diff the ``+++`` line right after a ``---`` line names the file (the ``---``
    line when the ``+++`` side is ``/dev/null``: the file is deleted); other such lines are
    hunk lines.
    """
    found: list[tuple[int, int, str]] = []
    old: tuple[int, int, str | None] | None = None  # the "---" line just before
    for match in _patch_header().finditer(text):
        if match.group("path") is not None:
            found.append((match.start(), match.end(), match.group("path")))
            old = None
        elif match.group("old") is not None:
            old = (match.start(), match.end(), _diff_path(match.group("old")))
        else:
            if old is not None and text.find("\n", old[1]) + 1 == match.start():
                path = _diff_path(match.group("new"))
                if path is not None:
                    found.append((match.start(), match.end(), path))
                elif old[2] is not None:
                    found.append((old[0], old[1], old[2]))
            old = None  # a "+++" line not right after "---" is a hunk's line
    return found


def patch_paths(text: str) -> list[str]:
    """The files a patch text changes, in order, each once."""
    return list(dict.fromkeys(path for _, _, path in patch_headers(text)))


# -- shell commands ------------------------------------------------------------------------

_SEPARATORS = frozenset({"|", "||", "&&", ";", "&", "(", ")", ";;", "|&"})
_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>"})


@cache
def _heredoc() -> re.Pattern[str]:
    return re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


def _lines_without_heredocs(command: str) -> list[str]:
    """The lines of ``command`` with every here-document body left out."""
    lines: list[str] = []
    ending: list[str] = []
    for line in command.splitlines():
        if ending:
            if line.strip() == ending[0]:
                ending.pop(0)
            continue
        lines.append(line)
        ending = [match.group(2) for match in _heredoc().finditer(line)]
    return lines


def _commands(lines: list[str]) -> list[str]:
    """The lines joined into commands: a line whose quote is still open, or that ends with a
    backslash, goes on with the next (a multi-line ``sed`` script or ``python -c`` program
    is one command); a command still open at the end is kept as it stands."""
    commands: list[str] = []
    text: str | None = None
    joint = ""
    for line in lines:
        text = line if text is None else text + joint + line
        if text.endswith("\\") and _split(text[:-1]) is not None:
            text, joint = text[:-1], " "  # a continued line: the shell drops backslash-newline
        elif _split(text) is None:
            joint = "\n"  # inside a quote the line break is part of the word
        else:
            commands.append(text)
            text = None
    if text is not None:
        commands.append(text)
    return commands


def _split(text: str) -> list[str] | None:
    """The words of ``text`` as a shell reads them, or None while a quote is open."""
    import shlex  # noqa: PLC0415 - a shell command's, read only when one is masked or folded

    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return None


def _tokens(command: str) -> list[str]:
    words = _split(command)
    # an unclosed quote: read what can be read, word by word
    return words if words is not None else command.split()


_NOT_FILES = frozenset({"nul", "con", "prn", "aux"})  # Windows devices: "> nul"


def _target(word: str) -> str | None:
    """``word`` as a written file, or None for a descriptor, a device or an expansion."""
    if not word or word.startswith(("&", "/dev/")) or word.isdigit():
        return None
    if "$" in word or "`" in word or word.casefold() in _NOT_FILES:
        return None  # known only when the command runs
    return word


def _sed_files(words: list[str]) -> list[str]:
    """The files of an in-place ``sed`` (``words`` after ``sed``), or none without ``-i``."""
    in_place = False
    script_given = False
    operands: list[str] = []
    at = 0
    while at < len(words):
        word = words[at]
        if word in ("-e", "-f", "--expression", "--file"):
            script_given = True
            at += 2
            continue
        if word.startswith(("--expression=", "--file=")):
            script_given = True
        elif word.startswith("--in-place"):
            in_place = True
        elif word == "-":
            pass  # standard input, which sed -i refuses to edit: not a file written
        elif word == "-i" and at + 1 < len(words) and not words[at + 1]:
            in_place = True  # BSD sed: "-i ''", an empty backup suffix of its own
            at += 2
            continue
        elif word.startswith("-"):
            # a cluster of short options; "-i" may carry a suffix ("-i.bak", "-ni")
            in_place = in_place or (not word.startswith("--") and "i" in word[1:].split(".")[0])
        else:
            operands.append(word)
        at += 1
    if not in_place:
        return []
    return operands if script_given else operands[1:]


def _command_writes(words: list[str]) -> list[str]:
    """The files one simple command (no separators) writes with ``tee`` or ``sed -i``."""
    while words and "=" in words[0] and not words[0].startswith("-"):
        words = words[1:]  # VAR=value prefixes
    while words and words[0] in ("sudo", "env", "command", "time", "nohup"):
        words = words[1:]
    if not words:
        return []
    name = words[0].rsplit("/", 1)[-1]
    if name == "tee":
        return [word for word in words[1:] if not word.startswith("-") and _target(word)]
    if name in ("sed", "gsed"):
        return _sed_files(words[1:])
    return []


def shell_write_paths(command: str) -> list[str]:
    """The files ``command`` visibly writes, in order, each once (see the module docstring)."""
    found: list[str] = []
    for line in _commands(_lines_without_heredocs(command)):
        words = _tokens(line)
        simple: list[str] = []
        at = 0
        while at < len(words):
            word = words[at]
            if word in _REDIRECTS:
                if at + 1 < len(words):
                    target = _target(words[at + 1])
                    if target is not None and target not in _SEPARATORS:
                        found.append(target)
                at += 2
                continue
            if word in _SEPARATORS:
                found += _command_writes(simple)
                simple = []
            else:
                simple.append(word)
            at += 1
        found += _command_writes(simple)
    return list(dict.fromkeys(found))
