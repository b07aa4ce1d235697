"""Lists that say how much of them is unchanged, so per-turn work can skip the unchanged part.

An agent's history grows by appends, and every request is built by the same chain of memos
(unique ids, placed results, clips, checks, overwrites, pairing). Comparing each new list with
the last one element by element costs time in the whole history on every turn, hidden part
included. A :class:`Growing` list instead logs every change that is not an append (the lowest
index it touched), and a :class:`Seen` remembers what a memo saw last, so the memo learns in
constant time how many leading elements are still the ones it saw, and works on the rest.

The invariant every memo relies on, stated once here: **messages are values**. windowkeeper
never changes a message, a block or a list it was given in place, and expects the same of its
callers (to edit a message, put a new dict in its place). The lists themselves may change:
a :class:`Growing` list notes it, any other list is compared element by element (by identity),
as before.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from itertools import compress, count, islice
from typing import Any, SupportsIndex

__all__ = ["Growing", "Seen", "replaced_spans", "shared_prefix"]

_LOG = 64  # changes remembered; a reader older than that starts over


def shared_prefix(old: Sequence[Any], new: Sequence[Any]) -> int:
    """How many leading elements ``new`` shares with ``old``, by identity.

    Fast (a C-level scan) when ``new`` merely extends ``old``, as an agent's history does.
    """
    # the first position where they differ, found at C level (a shrink edits messages in the
    # middle of the request, and every memo downstream looks for where its list changed)
    return next(compress(count(), map(operator.is_not, old, new)), min(len(old), len(new)))


def replaced_spans(
    old: Sequence[Any], new: Sequence[Any]
) -> list[tuple[int, int, int, int]] | None:
    """``(a, b, c, d)`` spans such that ``new`` is ``old`` with each ``old[a:b]`` replaced by
    ``new[c:d]`` (by identity), ascending; None when they share no leading element.

    A shrink edits a few messages of a request in place (each changed position is a span), or
    hides a run of them (one span between the shared head and the shared tail); a memo of a sum
    over the list then redoes only the spans instead of everything after the first change.
    """
    shared = shared_prefix(old, new)
    if not shared:
        return None
    if len(old) == len(new):
        changed = compress(
            range(shared, len(new)),
            map(operator.is_not, islice(old, shared, None), islice(new, shared, None)),
        )
        return [(at, at + 1, at, at + 1) for at in changed]
    room = min(len(old), len(new)) - shared  # the shared tail may not reach into the head
    tail = next(compress(count(), map(operator.is_not, reversed(old), reversed(new))), room)
    tail = min(tail, room)
    return [(shared, len(old) - tail, shared, len(new) - tail)]


def _lowest(index: Any, length: int) -> int:
    """The lowest position a subscript touches (a slice's start, a negative index resolved)."""
    if isinstance(index, slice):
        start, _, step = index.indices(length)
        return start if step > 0 else 0
    position = int(index)
    return position + length if position < 0 else position


class Growing(list):  # type: ignore[type-arg]
    """A list that logs every change but an append, with the lowest index it touched.

    ``epoch`` counts those changes; :meth:`unchanged_since` tells a reader that saw the list at
    some epoch how many leading elements have not changed since. Appends (``append``,
    ``extend``, ``+=``) change no element, so they are not logged. :meth:`fill` is the owner's
    write to a position no reader has seen yet (just appended), also not logged.
    """

    __slots__ = ("_changes", "epoch")

    def __init__(self, items: Iterable[Any] = ()) -> None:
        super().__init__(items)
        self.epoch = 0
        self._changes: list[tuple[int, int]] = []  # (epoch after the change, lowest index)

    def _changed(self, index: int) -> None:
        self.epoch += 1
        changes = self._changes
        changes.append((self.epoch, max(index, 0)))
        if len(changes) > _LOG:
            del changes[: len(changes) - _LOG]

    def unchanged_since(self, epoch: int) -> int:
        """How many leading elements are as they were at ``epoch`` (appends aside)."""
        if epoch == self.epoch:
            return len(self)
        changes = self._changes
        if epoch > self.epoch or not changes or changes[0][0] > epoch + 1:
            return 0  # not this list's epoch, or older than the log: nothing is known
        lowest = len(self)
        for after, index in reversed(changes):
            if after <= epoch:
                break
            lowest = min(lowest, index)
        return lowest

    def fill(self, index: int, value: Any) -> None:
        """Set a position no reader has seen yet (the owner's write after an append)."""
        list.__setitem__(self, index, value)

    def __setitem__(self, index: Any, value: Any) -> None:
        self._changed(_lowest(index, len(self)))
        super().__setitem__(index, value)

    def __delitem__(self, index: Any) -> None:
        self._changed(_lowest(index, len(self)))
        super().__delitem__(index)

    def insert(self, index: SupportsIndex, value: Any) -> None:
        self._changed(min(_lowest(index, len(self)), len(self)))
        super().insert(index, value)

    def pop(self, index: SupportsIndex = -1) -> Any:
        self._changed(_lowest(index, len(self)))
        return super().pop(index)

    def remove(self, value: Any) -> None:
        self._changed(self.index(value))
        super().remove(value)

    def clear(self) -> None:
        self._changed(0)
        super().clear()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        self._changed(0)
        super().sort(*args, **kwargs)

    def reverse(self) -> None:
        self._changed(0)
        super().reverse()

    def __imul__(self, count: SupportsIndex) -> Growing:
        self._changed(0 if int(count) <= 0 else len(self))
        return super().__imul__(count)


class Seen:
    """What a memo saw last, to tell how many leading elements of the next list are the same.

    For a :class:`Growing` list it keeps the list, its epoch and its length (no copy); for any
    other sequence, a copy, compared by identity.
    """

    __slots__ = ("_copy", "_epoch", "_length", "_list")

    def __init__(self) -> None:
        self._list: Growing | None = None
        self._epoch = 0
        self._length = 0
        self._copy: list[Any] = []

    def prefix(self, new: Sequence[Any]) -> int:
        """How many leading elements of ``new`` are, by identity, the ones seen last time."""
        if self._list is not None:
            same = min(self._length, self._list.unchanged_since(self._epoch))
            if new is self._list:
                return same
            return shared_prefix(self._list[:same], new) if same else 0
        return shared_prefix(self._copy, new)

    def remember(self, new: Sequence[Any]) -> None:
        """Note ``new`` as the list seen last."""
        if isinstance(new, Growing):
            self._list, self._epoch, self._length, self._copy = new, new.epoch, len(new), []
        else:
            self._list, self._length, self._copy = None, len(new), list(new)

    @property
    def length(self) -> int:
        """How many elements the list seen last had."""
        return self._length
