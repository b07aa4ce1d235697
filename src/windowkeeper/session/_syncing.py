"""What :meth:`ContextSession.sync` compares and keeps when a framework's history differs."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from ..core._messages import Message
from ..core._notices import TRUNCATION_NOTICE
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


def _is_notice_only(entry: Any) -> bool:
    """Whether a store entry is message 1's truncation notice and nothing else."""
    if _entry_index(entry) != 1:
        return False
    try:
        ((block, updates),) = entry[1][1]
        return block == 0 and all(update[2] == [TRUNCATION_NOTICE] for update in updates)
    except (IndexError, TypeError, ValueError):
        return False


def store_before(store: OverwriteStore, kept: int, *, hidden: bool = True) -> OverwriteStore:
    """A copy of ``store`` with only the edits of the first ``kept`` messages.

    ``hidden``: whether anything stays hidden after the cut. When nothing does, the truncation
    notice on message 1 goes too: it would tell the model of a removal that no longer is, and
    the next hide records it afresh.
    """
    return OverwriteStore.from_json_value(
        [
            entry
            for entry in store.to_json_value()
            if _entry_index(entry) < kept and (hidden or not _is_notice_only(entry))
        ]
    )
