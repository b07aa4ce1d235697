"""The timestamped overwrite store: every content edit, kept apart from the history.

The store maps a message index (into the full history) to an entry: an edit type, fixed when the
entry is created, and a map from block index to the list of updates of that block, oldest first.
An update is ``[timestamp, "text", [new_text], metadata]``; the last update of a block is the
effective one. Rolling back to a checkpoint drops every update newer than its timestamp.

Both maps keep insertion order, because the original's JSON (``context_history.json``) lists
them in that order::

    [[messageIndex,[editType,[[blockIndex,[[ts,"text",[text],metadata],...]],...]]],...]

Updates are kept as the JSON values they are, so a file written by the original, whatever odd
values it holds, serializes back byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from ._errors import WindowkeeperError

__all__ = ["CorruptStoreError", "EditType", "OverwriteStore", "Update"]


class CorruptStoreError(WindowkeeperError, ValueError):
    """A ``context_history.json`` text that is not JSON or not the original's nested layout."""


class EditType(IntEnum):
    """Why a message was edited; fixed by the first edit of the message."""

    UNDEFINED = 0  # the truncation notice (message 1) and the task replacement (message 0)
    NO_FILE_READ = 1  # declared by the original, never used
    READ_FILE_TOOL = 2
    ALTER_FILE_TOOL = 3
    FILE_MENTION = 4


@dataclass(frozen=True, slots=True)
class Update:
    """A typed view of one stored update (the stored JSON value is kept as it is)."""

    timestamp: Any
    kind: Any
    content: Any
    metadata: Any

    @property
    def text(self) -> str | None:
        """The new text when this is a well-formed "text" update, else None."""
        if self.kind == "text" and isinstance(self.content, list) and self.content:
            first = self.content[0]
            return first if isinstance(first, str) else None
        return None

    @classmethod
    def of(cls, raw: Any) -> Update:
        """View a stored JSON value as an update; missing parts read as None."""
        parts = list(raw[:4]) if isinstance(raw, list) else []
        parts += [None] * (4 - len(parts))
        return cls(*parts)


def text_update(timestamp: int, text: str, metadata: list[Any] | None = None) -> list[Any]:
    """The JSON value of a "text" update."""
    return [timestamp, "text", [text], [] if metadata is None else metadata]


class _Entry:
    __slots__ = ("blocks", "edit_type")

    def __init__(self, edit_type: Any, blocks: dict[Any, list[Any]]) -> None:
        self.edit_type = edit_type
        self.blocks = blocks


def _is_after(update: Any, timestamp: float) -> bool:
    # JavaScript compares `update[0] > timestamp`; anything but a number there compares false.
    if not isinstance(update, list) or not update:
        return False
    stamp = update[0]
    return isinstance(stamp, int | float) and not isinstance(stamp, bool) and stamp > timestamp


class OverwriteStore:
    """Message index -> (edit type, block index -> [update, ...]), in insertion order.

    Not thread-safe; one store per task. Values handed out are copies or immutable views, so the
    store changes only through its methods.
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[Any, _Entry] = {}

    # -- reading ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, message_index: object) -> bool:
        return message_index in self._entries

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OverwriteStore):
            return NotImplemented
        return self.to_json_value() == other.to_json_value()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"OverwriteStore({self.to_json()})"

    def message_indices(self) -> list[Any]:
        """The edited message indices, in insertion order."""
        return list(self._entries)

    def edit_type(self, message_index: int) -> Any:
        """The edit type of a message's entry, or None when it has none."""
        entry = self._entries.get(message_index)
        return None if entry is None else entry.edit_type

    def block_updates(self, message_index: int) -> Iterator[tuple[Any, list[Any]]]:
        """``(block index, updates)`` of a message, in insertion order; updates are raw JSON."""
        entry = self._entries.get(message_index)
        if entry is not None:
            yield from entry.blocks.items()

    def updates(self, message_index: int, block_index: int) -> list[Update]:
        """Every update of a block, oldest first."""
        entry = self._entries.get(message_index)
        raw = entry.blocks.get(block_index, []) if entry is not None else []
        return [Update.of(update) for update in raw]

    def latest(self, message_index: int, block_index: int) -> Update | None:
        """The effective (last) update of a block, or None."""
        entry = self._entries.get(message_index)
        if entry is None:
            return None
        raw = entry.blocks.get(block_index)
        return Update.of(raw[-1]) if raw else None

    def effective_text(self, message_index: int, block_index: int) -> str | None:
        """The text a block shows after its effective update, or None when it has none."""
        latest = self.latest(message_index, block_index)
        return None if latest is None else latest.text

    def first_block_latest(self, message_index: int) -> Update | None:
        """The last update of the message's first-inserted block (how the original reads mentions)."""
        entry = self._entries.get(message_index)
        if entry is None:
            return None
        for updates in entry.blocks.values():
            return Update.of(updates[-1]) if updates else None
        return None

    # -- writing ---------------------------------------------------------------------------

    def record(
        self, message_index: int, edit_type: int, block_index: int, update: list[Any]
    ) -> None:
        """Append ``update`` to a block, creating the message entry with ``edit_type`` if new.

        An existing entry keeps the edit type it was created with, as in the original.
        """
        entry = self._entries.get(message_index)
        if entry is None:
            entry = self._entries[message_index] = _Entry(int(edit_type), {})
        entry.blocks.setdefault(block_index, []).append(update)

    def rollback(self, timestamp: float) -> None:
        """Drop every update newer than ``timestamp`` (updates at ``timestamp`` stay).

        Blocks left without updates are removed, and so are messages left without blocks. As in
        the original, each block is cut from its end, assuming its updates are in time order.
        """
        for message_index in list(self._entries):
            entry = self._entries[message_index]
            for block_index in list(entry.blocks):
                updates = entry.blocks[block_index]
                keep = len(updates)
                while keep > 0 and _is_after(updates[keep - 1], timestamp):
                    keep -= 1
                if keep == 0:
                    del entry.blocks[block_index]
                elif keep < len(updates):
                    del updates[keep:]
            if not entry.blocks:
                del self._entries[message_index]

    def clear(self) -> None:
        """Forget every update."""
        self._entries.clear()

    def copy(self) -> OverwriteStore:
        """An independent copy (no list is shared with this store)."""
        return OverwriteStore.from_json_value(self.to_json_value())

    # -- the original's JSON ---------------------------------------------------------------

    def to_json_value(self) -> list[Any]:
        """The store as the nested lists of ``context_history.json`` (fresh lists, safe to keep)."""
        return json.loads(self.to_json())  # type: ignore[no-any-return]

    def to_json(self) -> str:
        """The exact text the original writes: compact, insertion order, non-ASCII raw."""
        value = [
            [index, [entry.edit_type, list(entry.blocks.items())]]
            for index, entry in self._entries.items()
        ]
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> OverwriteStore:
        """Parse the original's ``context_history.json``; raise :class:`CorruptStoreError` if unusable."""
        try:
            value = json.loads(text)
        except ValueError as error:
            raise CorruptStoreError(f"not JSON: {error}") from None
        return cls.from_json_value(value)

    @classmethod
    def from_json_value(cls, value: Any) -> OverwriteStore:
        """Build a store from parsed JSON in the nested layout, as the original's loader reads it.

        The original rebuilds its maps from ``[key, value]`` pairs (a repeated key keeps its first
        position and takes the later value) and ignores extra elements; anything else makes it
        start empty, which here raises :class:`CorruptStoreError` naming the place.
        """
        value = _js_numbers(value)
        if not isinstance(value, list):
            raise CorruptStoreError(f"top level: expected a list, got {_kind(value)}")
        store = cls()
        for position, item in enumerate(value):
            where = f"[{position}]"
            if not isinstance(item, list) or len(item) < 2:
                raise CorruptStoreError(f"{where}: expected [messageIndex, [editType, blocks]]")
            message_index, body = item[0], item[1]
            if not isinstance(body, list) or len(body) < 2:
                raise CorruptStoreError(f"{where}[1]: expected [editType, blocks]")
            _check_key(message_index, f"{where}[0]")
            edit_type, pairs = body[0], body[1]
            if not isinstance(pairs, list):
                raise CorruptStoreError(f"{where}[1][1]: expected a list of [blockIndex, updates]")
            blocks: dict[Any, list[Any]] = {}
            for block_position, pair in enumerate(pairs):
                pair_where = f"{where}[1][1][{block_position}]"
                if not isinstance(pair, list) or len(pair) < 2:
                    raise CorruptStoreError(f"{pair_where}: expected [blockIndex, updates]")
                _check_key(pair[0], f"{pair_where}[0]")
                if not isinstance(pair[1], list):
                    raise CorruptStoreError(f"{pair_where}[1]: expected a list of updates")
                blocks[pair[0]] = pair[1]
            store._entries[message_index] = _Entry(edit_type, blocks)
        return store


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _check_key(key: Any, where: str) -> None:
    # JSON keys that Python can hold in a dict; the original only ever writes integers.
    if not isinstance(key, int | float | str | bool) and key is not None:
        raise CorruptStoreError(f"{where}: expected an index, got {_kind(key)}")


def _js_numbers(value: Any) -> Any:
    """Integral floats become ints, as JavaScript reads and writes them (``2.0`` -> ``2``)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_js_numbers(item) for item in value]
    if isinstance(value, dict):
        return {key: _js_numbers(item) for key, item in value.items()}
    return value
