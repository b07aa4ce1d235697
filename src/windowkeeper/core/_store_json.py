"""The original's loader of ``context_history.json``: what it rebuilds its maps from.

The loader destructures each item as ``[messageIndex, [editType, pairs]]`` and rebuilds the block
map with ``new Map(pairs)``: a repeated key keeps its first position and takes the later value,
extra elements are ignored, missing ones read as undefined, and missing or null ``pairs`` give
an empty map. Whatever makes that throw raises :class:`CorruptStoreError` naming the place, as
the original then starts empty. :class:`~windowkeeper.core._overwrites.OverwriteStore` builds
its entries from what :func:`parse_entries` returns.

An entry is then kept as the text the original writes for it (:data:`StoredEntry`, made by
:func:`stored_entry`, read back by :func:`parsed_blocks`), which the store's file is the join of.
"""

from __future__ import annotations

import json
from typing import Any, Final

from .._errors import CorruptStoreError
from ._javascript import UNDEFINED, OpaqueKey, dumps, loads, map_key, to_number

__all__ = [
    "COUNT",
    "EXOTIC",
    "FILLED",
    "KEYS",
    "KIND",
    "MASK_BITS",
    "REVISION",
    "TEXT_AT",
    "StoredEntry",
    "count_key",
    "is_after",
    "parse_entries",
    "parsed_blocks",
    "stored_entry",
]


def parse_entries(value: Any) -> tuple[list[tuple[Any, Any, dict[Any, Any]]], bool]:
    """``(message key, edit type, block map)`` of each item of a parsed file, in file order,
    and whether any key is exotic (a float, an opaque key); raises :class:`CorruptStoreError`."""
    if not isinstance(value, list):
        raise CorruptStoreError(f"top level: expected a list, got {_kind(value)}")
    entries = []
    exotic = False
    for position, item in enumerate(value):
        where = f"[{position}]"
        message_index, body = _destructure(item, where, _ITEM)
        if body is UNDEFINED:
            raise CorruptStoreError(
                f"{where}: expected {_ITEM}, got {_kind(item)} of length {len(item)}"
            )
        edit_type, pairs = _destructure(body, f"{where}[1]", "[editType, blocks]")
        blocks, odd_blocks = _new_map(pairs, f"{where}[1][1]")
        key, odd_key = map_key(message_index)
        entries.append((key, None if edit_type is UNDEFINED else edit_type, blocks))
        exotic = exotic or odd_blocks or odd_key
    return entries, exotic


_ITEM = "[messageIndex, [editType, blocks]]"


def _destructure(value: Any, where: str, shape: str) -> tuple[Any, Any]:
    """JavaScript's ``const [a, b] = value``: any iterable (a list, or a string by code points)."""
    if isinstance(value, list | str):
        items = list(value[:2])
        items += [UNDEFINED] * (2 - len(items))
        return items[0], items[1]
    if value is UNDEFINED:
        raise CorruptStoreError(f"{where}: missing, expected {shape}")
    raise CorruptStoreError(f"{where}: expected {shape}, got {_kind(value)}")


def _new_map(pairs: Any, where: str) -> tuple[dict[Any, Any], bool]:
    """JavaScript's ``new Map(pairs)``, and whether any key is exotic."""
    blocks: dict[Any, Any] = {}
    exotic = False
    if pairs is UNDEFINED or pairs is None or pairs == "":
        return blocks, exotic
    if not isinstance(pairs, list):
        raise CorruptStoreError(
            f"{where}: expected a list of [blockIndex, updates], got {_kind(pairs)}"
        )
    for position, pair in enumerate(pairs):
        if isinstance(pair, list):
            key = pair[0] if pair else UNDEFINED
            updates = pair[1] if len(pair) > 1 else None
        elif isinstance(pair, dict):  # an object works too: its "0" and "1" properties
            key = pair.get("0", UNDEFINED)
            updates = pair.get("1")
        else:
            raise CorruptStoreError(
                f"{where}[{position}]: expected [blockIndex, updates], got {_kind(pair)}"
            )
        block_key, odd = map_key(key)
        blocks[block_key] = updates
        exotic = exotic or odd
    return blocks, exotic


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "an object"
    return "a list" if isinstance(value, list) else type(value).__name__


# -- the store's entries ---------------------------------------------------------------------

StoredEntry = tuple[Any, int, str, int, bool, "tuple[Any, ...] | None", "int | tuple[Any, ...]"]
"""One message's entry: ``(edit type, revision, text, updates, exotic, block keys, filled)``.

Its parts are plain values, not containers, so that CPython stops tracking it at the first
collection it survives (a tuple holding a tuple is let go one level a collection, and an entry
reaches the old generation before that).

- edit type: as :func:`~windowkeeper.core._updates.freeze` keeps it (almost always an int);
- revision: the store's :attr:`~windowkeeper.core._overwrites.OverwriteStore.revision` when a record last changed it;
- text: what the original writes for it, ``[messageIndex,[editType,[[blockIndex,[update,...]],
  ...]]]``, the only copy of its blocks;
- updates: how many updates its blocks hold (in blocks whose updates are a list);
- exotic: whether the text holds floats or odd keys, and so is written and read on the exact
  slow path of :mod:`~windowkeeper.core._javascript`;
- block keys: the keys of its blocks, in order, when one is a key its text cannot give back
  (JavaScript's ``undefined``, written as ``null``; an opaque key), else None;
- filled: which blocks have an update (what :meth:`~windowkeeper.core._overwrites.OverwriteStore.has_update`, asked for every
  message a step may change, tells without parsing the text): a bit mask of their indices, or a
  tuple of their keys when one is not an index below 62.
"""

KIND: Final = 0
REVISION: Final = 1
TEXT_AT: Final = 2
COUNT: Final = 3
EXOTIC: Final = 4
KEYS: Final = 5
FILLED: Final = 6

MASK_BITS = 62  # block indices a mask holds (a message has a few blocks; an int stays small)


def stored_entry(
    key: Any, kind: Any, blocks: dict[Any, Any], *, revision: int, count: int, exotic: bool
) -> StoredEntry:
    """The entry of message ``key`` holding ``blocks``."""
    text = dumps([key, [kind, list(blocks.items())]], exotic=exotic)
    odd = exotic and any(block is UNDEFINED or isinstance(block, OpaqueKey) for block in blocks)
    filled = [block for block, updates in blocks.items() if isinstance(updates, list) and updates]
    mask = _mask(filled)
    held = tuple(blocks) if odd else None
    return (kind, revision, text, count, exotic, held, tuple(filled) if mask is None else mask)


def _mask(blocks: list[Any]) -> int | None:
    """The bit mask of block indices ``blocks``, or None when one is no index below 62."""
    mask = 0
    for block in blocks:
        if type(block) is not int or not 0 <= block < MASK_BITS:
            return None
        mask |= 1 << block
    return mask


def parsed_blocks(entry: StoredEntry) -> dict[Any, Any]:
    """An entry's block map, parsed from its text (fresh lists and dicts)."""
    if entry[EXOTIC]:
        item, _ = loads(entry[TEXT_AT])
    else:  # only strings, ints within 2**53 and objects in JavaScript's order: plain JSON
        item = json.loads(entry[TEXT_AT])
    pairs = item[1][1]
    keys = entry[KEYS]
    if keys is None:
        return dict(pairs)
    return {block: pair[1] for block, pair in zip(keys, pairs, strict=True)}


def is_after(update: Any, timestamp: float) -> bool:
    """JavaScript's ``update[0] > timestamp`` (a comparison with NaN is false)."""
    if isinstance(update, list | str):  # a string's [0] is its first character
        stamp = update[0] if update else UNDEFINED
    elif isinstance(update, dict):
        stamp = update.get("0", UNDEFINED)
    else:
        return False  # a number has no [0]; null would make the original throw
    if type(stamp) is int:
        return stamp > timestamp
    return to_number(stamp) > timestamp


def count_key(edit_type: Any) -> Any:
    """A frozen ``edit_type`` as a key of the update counts (its repr when it cannot be one)."""
    try:
        hash(edit_type)
    except TypeError:
        return ("unhashable", repr(edit_type))
    return edit_type
