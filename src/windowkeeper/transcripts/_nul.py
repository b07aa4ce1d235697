"""NUL characters out of a transcript's messages: a tool's binary output holds them, the
session refuses them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ._common import Transcript

__all__ = ["without_nul"]


def without_nul(transcript: Transcript) -> Transcript:
    """``transcript`` with every NUL character of its messages replaced by U+FFFD, and a warning
    naming the first message and how many there were.

    A tool's output can hold NULs (a binary file printed, ``find -print0``); the session refuses
    them (providers and PostgreSQL do), so a transcript holding one could not be replayed. The
    transcript is returned as it is when it holds none.
    """
    messages = list(transcript.messages)
    found = 0
    first = -1
    for index, message in enumerate(messages):
        cleaned, count = _clean(message)
        if count:
            messages[index] = cleaned
            found += count
            first = index if first < 0 else first
    if not found:
        return transcript
    note = (
        f"{found} NUL character{'s' if found > 1 else ''} replaced by U+FFFD"
        f" (the first in messages[{first}])"
    )
    return replace(transcript, messages=tuple(messages), warnings=(*transcript.warnings, note))


def _clean(value: Any) -> tuple[Any, int]:
    """``value`` with NULs in its strings replaced, and how many; the same object if none."""
    if isinstance(value, str):
        count = value.count("\x00")
        return (value.replace("\x00", "\ufffd"), count) if count else (value, 0)
    if isinstance(value, (dict, list)):
        children = value.items() if isinstance(value, dict) else enumerate(value)
        total = 0
        changed: Any = None  # a copy of value, made at the first child that changes
        for key, child in children:
            cleaned, count = _clean(child)
            if count:
                if changed is None:
                    changed = dict(value) if isinstance(value, dict) else list(value)
                changed[key] = cleaned
                total += count
        return (changed, total) if changed is not None else (value, 0)
    return value, 0
