"""Loading a task folder: what the last journal line describes, repaired from what a crash left.

:func:`read_journal` finds the last complete journal line (and cuts a torn one after it);
:func:`repair` makes the history and the store what that line describes: a ``.next`` file it
describes is renamed in, one it does not is removed, appends the history is missing are
replayed from the journal, and a history another program extended is taken as it is (see
:mod:`._folder` for the layout and :mod:`._journal` for the lines). :func:`index` gives the
byte offsets each later commit appends at.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from .._errors import TaskFolderError
from ..core._messages import Message
from . import _folder_files as files
from ._files import atomic_write_bytes, fsync_folder
from ._journal import TAIL, encode_message, is_record, last_line, matches, replay, tail_digest

__all__ = ["JournalEnd", "extension", "index", "legacy_state", "read_journal", "repair"]


class JournalEnd(NamedTuple):
    """The journal as a load found it."""

    record: dict[str, Any] | None  # its last complete line, parsed (None: no line)
    size: int  # the bytes up to the end of that line (what the file is cut to)
    lines: int
    last: bytes  # that line, as written
    data: bytes  # the journal up to that line: every record, should the history need them


def read_journal(path: Path, *, writable: bool, durable: bool) -> JournalEnd:
    """The journal at ``path``; a torn line after the last complete one is cut off when the
    folder is ``writable``."""
    data = files.read(path) or b""
    start, record = last_line(data, len(data))
    end = data.index(b"\n", start) + 1 if record is not None else 0
    if end != len(data) and writable:
        files.truncate(path, end, sync=durable)
    return JournalEnd(record, end, data.count(b"\n", 0, end), data[start:end], data[:end])


def _records(data: bytes) -> list[dict[str, Any]]:
    """Every record of a journal, oldest first (only when the history must be replayed)."""
    records = []
    for line in data.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if is_record(value):
            records.append(value)
    return records


def repair(
    history_path: Path,
    store_path: Path,
    raw: bytes | None,
    record: dict[str, Any],
    journal: bytes,
    *,
    read_only: bool,
    durable: bool,
) -> tuple[bytes | None, list[Message] | None]:
    """The history the last ``record`` of ``journal`` describes (repaired on disk unless
    ``read_only``), or one another program extended; with its messages when they had to be
    parsed."""
    size, tail = record["history_bytes"], record["history_tail"]
    raw = _settle(history_path, raw, lambda data: matches(data, size, tail), read_only, durable)
    _settle_store(store_path, record.get("store_sha256"), read_only, durable)
    if raw is not None and matches(raw, size, tail):
        return raw, None
    if raw is not None:
        extended = extension(raw, record["history_length"], size, tail)
        if extended is not None:
            return raw, extended  # another program appended: taken as it is
    rebuilt = replay(raw if raw is not None else b"[]", _records(journal))
    if rebuilt is None and raw is not None and len(raw) >= size - 1:
        candidate = raw[: size - 1] + b"]"  # a journal of windowkeeper 0.2: cut back
        rebuilt = candidate if tail_digest(candidate) == tail else None
    if rebuilt is None:
        return raw, None
    if not read_only:
        _rewrite_from(history_path, raw or b"", rebuilt, durable)
    return rebuilt, None


def _rewrite_from(path: Path, old: bytes, new: bytes, durable: bool) -> None:
    """Make the file at ``path`` (holding ``old``) hold ``new``, writing only where they differ.

    The new bytes first, then the cut: a crash between the two leaves a file that the same
    repair mends on the next load.
    """
    same = 0
    limit = min(len(old), len(new))
    while same < limit and old[same] == new[same]:
        same += 1
    if not path.exists():
        atomic_write_bytes(path, new)
        return
    files.write_in_place(path, same, new[same:], sync=durable)
    files.truncate(path, len(new), sync=durable)


def _settle(
    path: Path,
    current: bytes | None,
    fits: Callable[[bytes], bool],
    read_only: bool,
    durable: bool,
) -> bytes | None:
    """Rename ``path.next`` into place when it is what the record describes, else drop it;
    the file's bytes after that."""
    pending = files.next_path(path)
    data = files.read(pending)
    if data is None:
        return current
    if fits(data) and (current is None or not fits(current)):
        if read_only:
            return data
        os.replace(pending, path)
        if durable:
            fsync_folder(path.parent)
        return data
    if not read_only:
        os.unlink(pending)
    return current


def _settle_store(path: Path, store_digest: str | None, read_only: bool, durable: bool) -> None:
    if store_digest is not None:
        current = files.read(path)
        _settle(path, current, lambda data: files.digest(data) == store_digest, read_only, durable)
    elif not read_only:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(files.next_path(path))


def index(history: list[Message], raw: bytes | None) -> tuple[list[int], bool, bytes]:
    """``(ends, foreign, tail)`` of a loaded history: the byte size of ``[`` and the first k
    messages in this writer's layout (commas between), whether the file ``raw`` is in another
    layout (to be rewritten), and its last bytes in this writer's layout."""
    ends = [1]
    encoded = [encode_message(message) for message in history]
    for position, data in enumerate(encoded):
        ends.append(ends[-1] + (1 if position else 0) + len(data))
    foreign = raw is None or len(raw) != ends[-1] + 1
    if raw is not None and not foreign:
        return ends, foreign, raw[-TAIL:]
    return ends, foreign, _layout_tail(encoded)


def extension(raw: bytes, length: int, size: int, tail: str) -> list[Message] | None:
    """The messages of ``raw`` when its first ``length`` are the ones a record describes (in this
    writer's layout: ``size`` bytes with ``tail``'s digest), however the file is laid out."""
    try:
        history = files.parse_json(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(history, list) or len(history) < length:
        return None
    try:
        prefix = b"[" + b",".join(encode_message(message) for message in history[:length]) + b"]"
    except (TypeError, ValueError):
        return None
    return history if matches(prefix, size, tail) else None


def _layout_tail(encoded: Sequence[bytes]) -> bytes:
    """The last bytes of a history of ``encoded`` messages in this writer's layout."""
    parts: list[bytes] = [b"]"]
    total = 1
    for position in range(len(encoded) - 1, -1, -1):
        parts.append(encoded[position])
        total += len(encoded[position])
        if total >= TAIL:
            break
        parts.append(b"," if position else b"[")
        total += 1
    else:
        if not encoded:
            parts.append(b"[")
    return b"".join(reversed(parts))[-TAIL:]


def legacy_state(path: Path) -> dict[str, Any] | None:
    """The state file of windowkeeper 0.1 (``windowkeeper_session.json``), as a state object."""
    raw = files.read(path)
    if raw is None:
        return None
    try:
        value = files.parse_json(raw)
    except (ValueError, RecursionError) as error:
        raise TaskFolderError(f"{path}: not JSON: {str(error)[:200]}") from None
    if not isinstance(value, dict):
        raise TaskFolderError(f"{path}: unreadable session state: expected an object")
    return value
