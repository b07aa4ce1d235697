"""Which messages are hidden: keep strategies, the next deleted range, the visible slice.

A deleted range is an inclusive pair ``(start, end)`` of indices into the full history, or None.
Its start is always 2: messages 0 and 1 (the task and the first answer) are always kept. A range
whose end is below its start hides nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from .._errors import InvalidRangeError

__all__ = [
    "FIRST_KEPT",
    "DeletedRange",
    "Keep",
    "check_range",
    "keep_for",
    "next_range",
    "visible_start",
]

DeletedRange = tuple[int, int]

FIRST_KEPT = 2
"""Messages before this index are never hidden."""


class Keep(StrEnum):
    """How much of the not yet hidden rest a new range keeps (plain strings work too)."""

    NONE = "none"
    LAST_TWO = "lastTwo"
    HALF = "half"
    QUARTER = "quarter"


def keep_for(size: float, limit: float) -> Keep:
    """The original's first keep for a request of ``size`` over ``limit``: a quarter when even
    half of it would not fit, else half."""
    return Keep.QUARTER if size / 2 > limit else Keep.HALF


def check_range(deleted_range: Any, name: str = "deleted_range") -> DeletedRange | None:
    """Return ``deleted_range`` as a tuple, or raise :class:`InvalidRangeError`.

    Odd but well-typed ranges (inverted, ending past the history, starting elsewhere than 2) are
    accepted: the original accepts them and so do we.
    """
    if deleted_range is None:
        return None
    if (
        isinstance(deleted_range, str | bytes)
        or not isinstance(deleted_range, Sequence)
        or len(deleted_range) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in deleted_range)
    ):
        raise InvalidRangeError(f"{name} must be None or a pair of integers, got {deleted_range!r}")
    return (deleted_range[0], deleted_range[1])


def visible_start(deleted_range: DeletedRange | None) -> int:
    """Index of the first message after the hidden range, as the original computes it."""
    return deleted_range[1] + 1 if deleted_range is not None else FIRST_KEPT


def next_range(
    history: Sequence[Any], deleted_range: DeletedRange | None, keep: Keep | str
) -> DeletedRange:
    """The original's ``getNextTruncationRange``: extend the hidden range by an even count.

    Of the ``n`` messages after the current range, ``none`` hides all, ``lastTwo`` all but two,
    ``half`` ``floor(n/4)*2`` and ``quarter`` ``floor(3n/8)*2`` (neither clamped, as in the
    original). If the new end is a valid index whose message is not an assistant message, the end
    steps back by one so the visible rest starts with a user message. Negative ends are not
    wrapped, as JavaScript does not wrap them.
    """
    strategy = Keep(keep)
    start_of_rest = visible_start(deleted_range)
    rest = len(history) - start_of_rest
    if strategy is Keep.NONE:
        removed = max(rest, 0)
    elif strategy is Keep.LAST_TWO:
        removed = max(rest - 2, 0)
    elif strategy is Keep.HALF:
        removed = (rest // 4) * 2
    else:
        removed = (rest * 3 // 8) * 2
    end = start_of_rest + removed - 1
    if 0 <= end < len(history):
        message = history[end]
        if not (isinstance(message, dict) and message.get("role") == "assistant"):
            end -= 1
    return (FIRST_KEPT, end)
