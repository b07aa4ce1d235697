"""How Gemini CLI's recorded model turns make the history: one turn, or two records of one.

A recording writes a model turn as a ``gemini`` record. Two in a row (only info, warning or
error records between) are usually two turns, but two cases are one: a cancelled turn's calls
written in a record of their own, and a retried request whose first attempt never joined the
history (see :func:`place_turn`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core._usage import TokenUsage

__all__ = ["Turn", "continues", "place_turn"]


@dataclass(slots=True)
class Turn:
    """One Gemini API content (a turn), with where its parts came from and what its response cost."""

    role: str
    where: str
    parts: list[tuple[str, Any]] = field(default_factory=list)
    usage: TokenUsage | None = None
    model: str | None = None


def continues(contents: list[Turn], content: Turn) -> bool:
    """Whether ``content``, a model turn, is part of the model turn ``contents`` ends with, or
    replaces it (see :func:`place_turn`), rather than a turn of its own."""
    previous = contents[-1] if contents else None
    if previous is None or previous.role != "model":
        return False
    return _calls_only(content) or _retry_of(previous, content)


def place_turn(contents: list[Turn], content: Turn) -> None:
    """Add ``content``, a model turn, to ``contents``; right after another one (only info,
    warning or error records between), it may be part of it or replace it:

    - A record of calls alone (no text, no tokens): Gemini CLI records the calls of a turn
      cancelled while they ran in a record of their own (after the "Request cancelled."
      notice, in the sessions seen). They join the turn.
    - A turn sent with the same prompt size as the one before, which made no call: a retry
      (after a malformed function call Gemini CLI asks again, and the first attempt never
      joins the history). The attempt's parts go; its usage stays, as a request of its own.
    """
    previous = contents[-1] if contents else None
    if previous is not None and previous.role == "model":
        if _calls_only(content):
            previous.parts.extend(content.parts)
            return
        if _retry_of(previous, content):
            previous.parts.clear()
    contents.append(content)


def _calls_only(content: Turn) -> bool:
    return (
        content.usage is None
        and bool(content.parts)
        and all(isinstance(p, dict) and set(p) == {"functionCall"} for _, p in content.parts)
    )


def _retry_of(previous: Turn, content: Turn) -> bool:
    """Whether ``content`` was sent with the same prompt as ``previous``, a turn that made no
    call: a prompt of some size (a proxy reporting zeros tells nothing) and an answer."""
    if content.usage is None or previous.usage is None:
        return False
    size = content.usage.tokens_in + content.usage.cache_reads
    return (
        size > 0
        and size == previous.usage.tokens_in + previous.usage.cache_reads
        and previous.usage.tokens_out > 0
        and not any(isinstance(p, dict) and "functionCall" in p for _, p in previous.parts)
    )
