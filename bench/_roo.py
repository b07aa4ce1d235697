"""Roo Code's "export task" Markdown, read back into Anthropic-shaped messages (bench only).

Roo Code (a Cline fork) exports a task as Markdown: turns headed ``**User:**`` or
``**Assistant:**``, separated by a ``---`` line, with the text of each turn verbatim. Tools are
called in XML inside the assistant's text, and each result comes back in the next user turn as
``[tool for 'target'] Result:`` followed by the output and Roo's ``<environment_details>``.

The messages are rebuilt in the shape Cline stores for XML tool calls: an assistant message is
one text block; a user message is a list of text blocks: the result header alone, the result,
and the environment details (the layout the original's duplicate-read detector expects), or
the turn's text and its environment details. What the export does not hold (images, exact
block boundaries, timestamps, usage) is not invented.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

__all__ = ["load_roo_export"]

_TURN = re.compile(r"\n\n---\n\n(?=\*\*(?:User|Assistant):\*\*\n)")
_HEAD = re.compile(r"\*\*(User|Assistant):\*\*\n\n?")
_RESULT = re.compile(r"\[[^\s\]]+(?: for '(?s:.*?)')?\] Result:")
_ENVIRONMENT = "<environment_details>"


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _user_blocks(body: str) -> list[dict[str, Any]]:
    at = body.find(_ENVIRONMENT)
    main, environment = (body, "") if at < 0 else (body[:at].rstrip("\n"), body[at:])
    blocks: list[dict[str, Any]] = []
    header = _RESULT.match(main)
    if header is not None and header.start() == 0:
        blocks.append(_text(header.group(0)))
        main = main[header.end() :].lstrip("\n")
    if main:
        blocks.append(_text(main))
    if environment:
        blocks.append(_text(environment))
    return blocks or [_text(body)]


def load_roo_export(path: str | Path) -> list[dict[str, Any]]:
    """The conversation of a Roo Code Markdown export, first turn the user's."""
    text = Path(path).read_text(encoding="utf-8").replace("\r\n", "\n")
    messages: list[dict[str, Any]] = []
    for turn in _TURN.split(text.strip("\n")):
        head = _HEAD.match(turn)
        if head is None:
            raise ValueError(f"{path}: a turn does not start with **User:** or **Assistant:**")
        body = turn[head.end() :].strip("\n")
        if head.group(1) == "Assistant":
            messages.append({"role": "assistant", "content": [_text(body)]})
        else:
            messages.append({"role": "user", "content": _user_blocks(body)})
    return messages
