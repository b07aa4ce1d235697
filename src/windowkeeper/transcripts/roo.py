"""Roo Code's "export task" Markdown, read back into Anthropic-shaped messages.

The format. Roo Code (a Cline fork) exports a task as Markdown: turns headed ``**User:**`` or
``**Assistant:**``, separated by a ``---`` line between blank lines, with the text of each turn
verbatim. Tools are called in XML inside the assistant's text (``<read_file>...</read_file>``),
and each result comes back in the next user turn as ``[tool for 'target'] Result:`` followed by
the output and Roo's ``<environment_details>``.

Mapping rules (the same as ``bench/_roo.py``, which this module promotes into the package):
the messages are rebuilt in the shape Cline stores for XML tool calls. An assistant message is
one text block. A user message is a list of text blocks: the result header alone, the result,
and the environment details (the layout the original's duplicate-read detector expects), or
the turn's text and its environment details. Tool calls stay text, so there is no tool_use to
pair. What the export does not hold (images, exact block boundaries, timestamps, usage, the
system prompt, tool definitions) is not invented; ``model`` is the last ``<model>`` the
environment details name, when they name one.
"""

from __future__ import annotations

import os
import re
from typing import Any

from .._errors import TaskFolderError
from ..core._messages import Message
from ._common import Transcript, read_text, text_block

__all__ = ["FORMAT", "looks_like_roo", "parse_roo", "read_roo"]

FORMAT = "roo"

_HEADER = re.compile(r"\*\*(User|Assistant):\*\*\n\n?")
_SEPARATOR = re.compile(r"\n\n---\n\n(?=\*\*(?:User|Assistant):\*\*\n)")
_RESULT = re.compile(r"\[[^\s\]]+(?: for '(?s:.*?)')?\] Result:")
_MODEL = re.compile(r"<model>([^<\n]+)</model>")
_ENVIRONMENT = "<environment_details>"


def read_roo(path: str | os.PathLike[str]) -> Transcript:
    """Read a Roo Code task export; errors name the file and the line."""
    return parse_roo(read_text(path), name=str(path))


def parse_roo(text: str, *, name: str = "<string>") -> Transcript:
    """The conversation of an export's Markdown text.

    Raises :class:`~windowkeeper.TaskFolderError` naming ``name`` and the line when the text
    does not start with a ``**User:**`` or ``**Assistant:**`` turn (every later turn starts at a
    separator followed by such a header, so only the first can lack one).
    """
    text = text.replace("\r\n", "\n")
    body = text.strip("\n")
    if _HEADER.match(body) is None:
        line = text[: len(text) - len(text.lstrip("\n"))].count("\n") + 1
        raise TaskFolderError(
            f"{name}:{line}: a turn does not start with **User:** or **Assistant:**"
        )
    messages: list[Message] = []
    model: str | None = None
    for turn in _SEPARATOR.split(body):
        head = _HEADER.match(turn)
        assert head is not None  # the separator is followed by a header
        content = turn[head.end() :].strip("\n")
        if head.group(1) == "Assistant":
            messages.append({"role": "assistant", "content": [text_block(content)]})
            continue
        messages.append({"role": "user", "content": _user_blocks(content)})
        at = content.find(_ENVIRONMENT)
        named = _MODEL.findall(content[at:]) if at >= 0 else []
        model = named[-1].strip() if named else model
    return Transcript(format=FORMAT, messages=tuple(messages), model=model)


def looks_like_roo(text: str) -> bool:
    """Whether a text file is a Roo Code task export: it opens with a ``**User:**`` turn."""
    return text.lstrip("\ufeff\r\n").startswith("**User:**")


def _user_blocks(body: str) -> list[dict[str, Any]]:
    at = body.find(_ENVIRONMENT)
    main, environment = (body, "") if at < 0 else (body[:at].rstrip("\n"), body[at:])
    blocks: list[dict[str, Any]] = []
    header = _RESULT.match(main)
    if header is not None:
        blocks.append(text_block(header.group(0)))
        main = main[header.end() :].lstrip("\n")
    if main:
        blocks.append(text_block(main))
    if environment:
        blocks.append(text_block(environment))
    return blocks or [text_block(body)]
