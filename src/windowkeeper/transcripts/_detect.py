"""The transcripts other coding agents write, told apart and read into windowkeeper's shape.

Every reader returns a :class:`Transcript`: the conversation as Anthropic-shaped messages (tool
pairing kept: each tool_use answered by a tool_result in the next user message), and what the
transcript recorded beside it: system prompt, tool definitions, model, per-request usage
(:class:`RecordedRequest`), and what the reader did not know and left out (:class:`Unknown`,
with the JSON path where it was, for the caller to report).

==============  =========================================  =====================================
format          what                                       reader
==============  =========================================  =====================================
``claude-code`` Claude Code session ``.jsonl``             :mod:`~windowkeeper.transcripts.claude_code`
``codex``       Codex CLI rollout ``.jsonl``               :mod:`~windowkeeper.transcripts.codex`
``gemini-cli``  Gemini CLI saved chat, checkpoint, session :mod:`~windowkeeper.transcripts.gemini_cli`
``openhands``   OpenHands trajectory, V1 ``events/`` folder :mod:`~windowkeeper.transcripts.openhands`
``roo``         Roo Code task export ``.md``               :mod:`~windowkeeper.transcripts.roo`
==============  =========================================  =====================================

:func:`detect_transcript` tells which format a file holds, from its content only: JSON Lines
records are asked first (Claude Code, then Codex), then the whole JSON value (Gemini CLI, then
OpenHands), then the text (Roo). The shapes do not overlap: a Claude Code record has ``uuid``,
``parentUuid`` and a ``message``; a Codex line ``type`` and ``payload`` (or, in old rollouts, a
first line with ``id`` and ``timestamp``); Gemini CLI contents ``role`` and ``parts``, its
recordings ``sessionId`` and ``projectHash``; OpenHands events a ``source`` and an ``action`` or
an ``observation``; a Roo export opens with ``**User:**``.

Errors: a file that cannot be read, is of no known format, or holds a record of the wrong
shape raises :class:`~windowkeeper.TaskFolderError` (or :class:`~windowkeeper.MalformedMessageError`
for a message), naming the file, the line for JSON Lines files, and the JSON path.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._errors import TaskFolderError
from ._common import (
    Compaction,
    RecordedRequest,
    Transcript,
    Unknown,
    head_records,
    read_text,
)
from ._nul import without_nul
from .claude_code import looks_like_claude_code, parse_claude_code
from .codex import looks_like_codex, parse_codex
from .gemini_cli import looks_like_gemini_cli, parse_gemini_cli
from .openhands import looks_like_openhands, parse_openhands, read_openhands
from .openhands_v1 import is_openhands_folder
from .roo import looks_like_roo, parse_roo

__all__ = [
    "TRANSCRIPT_FORMATS",
    "Compaction",
    "RecordedRequest",
    "Transcript",
    "Unknown",
    "detect_transcript",
    "read_transcript",
]

TRANSCRIPT_FORMATS = ("claude-code", "codex", "gemini-cli", "openhands", "roo")
"""The format names :func:`read_transcript` accepts, as :attr:`Transcript.format` gives them."""


def detect_transcript(path: str | os.PathLike[str]) -> str | None:
    """The format of the transcript at ``path`` (one of :data:`TRANSCRIPT_FORMATS`), or None.

    Raises :class:`~windowkeeper.TaskFolderError` when the file cannot be read.
    """
    if is_openhands_folder(path):
        return "openhands"
    return _detect(read_text(path))


def read_transcript(
    path: str | os.PathLike[str], format: str | None = None, *, compaction: Compaction = "last"
) -> Transcript:
    """Read the transcript at ``path``; a ``format`` of :data:`TRANSCRIPT_FORMATS` skips detection.

    ``compaction`` says what to do where the agent compacted its history (Claude Code, Codex,
    OpenHands): ``"last"`` starts at the last compaction, ``"keep"`` keeps everything with
    each summary as a user message (see each reader). NUL characters in the messages are
    replaced by U+FFFD, with a warning (the session refuses them).
    """
    file = Path(path)
    if format is not None and format not in TRANSCRIPT_FORMATS:
        choices = ", ".join(TRANSCRIPT_FORMATS)
        raise TaskFolderError(
            f"{file}: unknown transcript format {format!r} (choose from {choices})"
        )
    if format in (None, "openhands") and is_openhands_folder(file):
        return without_nul(read_openhands(file, compaction=compaction))
    text = read_text(file)
    kind = format or _detect(text)
    if kind is None:
        choices = ", ".join(TRANSCRIPT_FORMATS)
        raise TaskFolderError(f"{file}: not a transcript of a known format ({choices})")
    return without_nul(_PARSERS[kind](text, str(file), compaction))


def _detect(text: str) -> str | None:
    try:
        value: Any = json.loads(text)
        whole = True
    except (ValueError, RecursionError):
        value, whole = None, False
    records = (
        [value] if whole and isinstance(value, dict) else None if whole else head_records(text)
    )
    if records:
        if looks_like_claude_code(records):
            return "claude-code"
        if looks_like_codex(records):
            return "codex"
    candidate = value if whole else records
    if candidate is not None:
        if looks_like_gemini_cli(candidate):
            return "gemini-cli"
        if looks_like_openhands(candidate):
            return "openhands"
    if looks_like_roo(text):
        return "roo"
    return None


_PARSERS: dict[str, Callable[[str, str, Compaction], Transcript]] = {
    "claude-code": lambda text, name, compaction: parse_claude_code(
        text, name=name, compaction=compaction
    ),
    "codex": lambda text, name, compaction: parse_codex(text, name=name, compaction=compaction),
    "gemini-cli": lambda text, name, _: parse_gemini_cli(text, name=name),
    "openhands": lambda text, name, compaction: parse_openhands(
        text, name=name, compaction=compaction
    ),
    "roo": lambda text, name, _: parse_roo(text, name=name),
}
