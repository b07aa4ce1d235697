"""The original's loader of ``context_history.json``: what it rebuilds its maps from.

The loader destructures each item as ``[messageIndex, [editType, pairs]]`` and rebuilds the block
map with ``new Map(pairs)``: a repeated key keeps its first position and takes the later value,
extra elements are ignored, missing ones read as undefined, and missing or null ``pairs`` give
an empty map. Whatever makes that throw raises :class:`CorruptStoreError` naming the place, as
the original then starts empty. :class:`~windowkeeper.core._overwrites.OverwriteStore` builds
its entries from what :func:`parse_entries` returns.
"""

from __future__ import annotations

from typing import Any

from .._errors import CorruptStoreError
from ._javascript import UNDEFINED, map_key

__all__ = ["parse_entries"]


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
