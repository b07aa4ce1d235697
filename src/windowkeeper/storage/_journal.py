"""The task folder's journal: one JSON line per commit, and what a line lets a loader rebuild.

A line (a *record*) names the commit (``commit``, a counter, and ``commit_id``, random), the
history it leaves (``history_length``, ``history_bytes`` and ``history_tail``, the digest of the
file's last 4 KiB), the store's digest and the session state. A commit that appends also carries
the history it started from (``base_bytes``, ``base_tail``) and the appended messages
(``append``), so that the history file need not be synced by every commit: when a crash of the
machine lost the last appends to the history file, they are replayed from the journal
(:func:`replay`). A commit that rewrites the history (a rollback) carries ``"append": null``; its
new file was synced before the line was written.

The last complete line is the task's state. Its ``commit_id`` never repeats, so a writer that
compares the journal's last line with the one it wrote last recognises every other writer's
commit, also after the journal was rewritten to the same size (no ABA).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from ..core._messages import Message

__all__ = [
    "TAIL",
    "encode_message",
    "encode_record",
    "is_record",
    "last_line",
    "matches",
    "replay",
    "tail_digest",
    "valid_prefix",
]

TAIL = 4096


def encode_message(message: Message) -> bytes:
    """A message as the history file holds it: compact JSON, non-ASCII kept, no NaN."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def tail_digest(data: bytes) -> str:
    """The digest of the last 4 KiB of ``data``: what a record says of the history file."""
    return hashlib.sha256(data[-TAIL:]).hexdigest()


def encode_record(record: dict[str, Any], append: Sequence[bytes] | None) -> bytes:
    """``record`` as a journal line, with the already encoded ``append`` messages spliced in."""
    head = json.dumps(record, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    tail = b"null" if append is None else b"[" + b",".join(append) + b"]"
    return head.encode()[:-1] + b',"append":' + tail + b"}\n"


def is_record(value: Any) -> bool:
    """True when ``value`` is a journal record (older versions' lines have no ``append``)."""
    return (
        isinstance(value, dict)
        and value.get("format") == "windowkeeper-journal"
        and isinstance(value.get("commit"), int)
        and isinstance(value.get("history_length"), int)
        and isinstance(value.get("history_bytes"), int)
        and isinstance(value.get("history_tail"), str)
        and isinstance(value.get("state"), dict)
    )


def last_line(data: bytes, end: int) -> tuple[int, dict[str, Any] | None]:
    """Where the last complete record before ``end`` starts, and the record (None: there is none)."""
    while end > 0:
        start = data.rfind(b"\n", 0, end - 1) + 1
        line = data[start:end]
        if line.endswith(b"\n"):
            try:
                value = json.loads(line)
            except ValueError:
                value = None
            if is_record(value):
                return start, value
        end = start
    return 0, None


def matches(data: bytes, size: int, tail: str) -> bool:
    """True when ``data`` is the history a record describes (its size and tail digest)."""
    return len(data) == size and tail_digest(data) == tail


def valid_prefix(data: bytes, size: int, tail: str) -> bool:
    """True when the first ``size - 1`` bytes of ``data`` are a history of ``size`` bytes minus
    its closing bracket (what a record describes, before more messages were appended)."""
    return len(data) >= size - 1 and tail_digest(data[: size - 1] + b"]") == tail


def replay(data: bytes, records: Sequence[dict[str, Any]]) -> bytes | None:
    """The history the last of ``records`` describes, rebuilt from ``data`` and their appends.

    ``records`` are the journal's records, oldest first. The newest record whose starting point
    (``base_bytes``, ``base_tail``) ``data`` still holds is found, and its appends and those of
    every later record are written after it. None when no such record is found or a rewrite
    (``append`` null) lies between: the history was changed by something else.
    """
    for first in range(len(records) - 1, -1, -1):
        record = records[first]
        if record.get("append", None) is None or not isinstance(record.get("base_bytes"), int):
            return None
        base, base_tail = record["base_bytes"], record.get("base_tail")
        if not isinstance(base_tail, str) or not valid_prefix(data, base, base_tail):
            continue
        parts = [data[: base - 1]]
        for later in records[first:]:
            appended = later.get("append")
            if not isinstance(appended, list):
                return None
            length_before = later["history_length"] - len(appended)
            if appended:
                encoded = b",".join(encode_message(message) for message in appended)
                parts.append((b"," if length_before else b"") + encoded)
        parts.append(b"]")
        rebuilt = b"".join(parts)
        last = records[-1]
        return rebuilt if matches(rebuilt, last["history_bytes"], last["history_tail"]) else None
    return None
