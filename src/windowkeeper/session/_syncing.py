"""What :meth:`ContextSession.sync` compares and keeps when a framework's history differs."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from ..core._messages import Message
from ..core._overwrites import OverwriteStore

__all__ = ["common_prefix", "extends", "store_before"]


def extends(current: Sequence[Message], wanted: Sequence[Message]) -> bool:
    """Whether ``wanted`` starts with every message of ``current`` (compared by value)."""
    known = len(current)
    return len(wanted) >= known and all(map(operator.eq, current, wanted[:known]))


def common_prefix(current: Sequence[Message], wanted: Sequence[Message]) -> int:
    """How many leading messages ``current`` and ``wanted`` share (compared by value)."""
    return next(
        (i for i, (old, new) in enumerate(zip(current, wanted, strict=False)) if old != new),
        min(len(current), len(wanted)),
    )


def _entry_index(entry: Any) -> int:
    """The message index of a store entry in the original's JSON layout (odd ones sort last)."""
    index = entry[0] if isinstance(entry, list) and entry else None
    return index if isinstance(index, int) and not isinstance(index, bool) else 10**12


def store_before(store: OverwriteStore, kept: int) -> OverwriteStore:
    """A copy of ``store`` with only the edits of the first ``kept`` messages."""
    return OverwriteStore.from_json_value(
        [entry for entry in store.to_json_value() if _entry_index(entry) < kept]
    )
