"""What every provider rule shares: the :class:`Violation` it reports, the rule names, the protocol.

A validator is a walk and a list of rules (:func:`validate` runs them). The :class:`Walk` goes
once over the request and gives each message (or input item) *in context*: what the rules need
to know of it and of the ones before it, such as the previous role or the tool calls still
waiting for an answer; once it is over, its ``end`` describes the request as a whole. Each rule
is a small object with a stable name, a ``check`` over one message in context and a ``finish``
over the end (what only the end can tell: an empty request, a call never answered). The walk
notes facts; the rules judge them and word the violations.

A rule reports :data:`Found` entries: ``(index, stage, position, violation)``. The validator
sorts them by ``(index, stage, position)`` with a stable sort, so entries with equal keys keep
the order of the validator's rule list, and each rule's own entries keep the order it gave
them. ``stage`` and ``position`` are what lets two rules interleave within one message (a block
that is malformed, then a text block that is empty) exactly as the provider would list them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Protocol, TypeVar

__all__ = [
    "DUPLICATE_TOOL_USE_ID",
    "EMPTY_CONTENT",
    "FIRST_NOT_USER",
    "MALFORMED",
    "NOTHING",
    "ORDER",
    "SAME_ROLE_TWICE",
    "THINKING_IN_USER",
    "THINKING_NOT_FIRST",
    "THINKING_UNSIGNED",
    "TOOL_RESULT_UNKNOWN",
    "TOOL_USE_ID_REFUSED",
    "TOOL_USE_IN_USER",
    "TOOL_USE_UNANSWERED",
    "Found",
    "Rule",
    "Violation",
    "Walk",
    "ordered",
    "validate",
]


@dataclass(frozen=True, slots=True)
class Violation:
    """One provider rule a request breaks: where (``messages[3].content[1]``), which rule, and why."""

    path: str
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.path}: {self.rule}: {self.detail}"


# Rule names, stable for callers that filter on them.
FIRST_NOT_USER = "first-not-user"
SAME_ROLE_TWICE = "same-role-twice"
TOOL_USE_UNANSWERED = "tool-use-unanswered"
TOOL_RESULT_UNKNOWN = "tool-result-unknown"
EMPTY_CONTENT = "empty-content"
MALFORMED = "malformed"
THINKING_NOT_FIRST = "thinking-not-first"
THINKING_UNSIGNED = "thinking-unsigned"
THINKING_IN_USER = "thinking-in-user"
DUPLICATE_TOOL_USE_ID = "duplicate-tool-use-id"
TOOL_USE_IN_USER = "tool-use-in-user"
TOOL_USE_ID_REFUSED = "tool-use-id-refused"

Found = tuple[int, int, int, Violation]
"""A violation and where it sorts: ``(message index, stage, position, violation)``."""

NOTHING: tuple[Found, ...] = ()
"""What a rule returns when it finds nothing (shared, so that finding nothing allocates nothing)."""

ORDER = itemgetter(0, 1, 2)
"""The sort key of a :data:`Found` entry."""

Item_contra = TypeVar("Item_contra", contravariant=True)
End_contra = TypeVar("End_contra", contravariant=True)
Item_co = TypeVar("Item_co", covariant=True)
End_co = TypeVar("End_co", covariant=True)
Item = TypeVar("Item")
End = TypeVar("End")


class Rule(Protocol[Item_contra, End_contra]):
    """One provider rule: its name, a check over one message in context, one over the request."""

    @property
    def name(self) -> str:
        """The rule name its violations carry (one of the constants above)."""
        ...

    def check(self, item: Item_contra, /) -> Sequence[Found]:
        """What this rule finds at one message or item, given its context."""
        ...

    def finish(self, end: End_contra, /) -> Sequence[Found]:
        """What this rule finds in the request as a whole, once the walk is over."""
        ...


class Walk(Protocol[Item_co, End_co]):
    """One pass over a request: each message in context, then the request as a whole."""

    def __iter__(self) -> Iterator[Item_co]:
        """Each message or item in context, in order (nothing when the request is not a list)."""
        ...

    def end(self) -> End_co:
        """The request as a whole; call it once the iteration is over."""
        ...


def validate(
    walk: Walk[Item, End],
    checks: Sequence[Callable[[Item], Sequence[Found]]],
    finishes: Sequence[Callable[[End], Sequence[Found]]],
) -> list[Violation]:
    """Run every check on each message of ``walk``, every finish on its end, and order the finds.

    ``checks`` and ``finishes`` are the bound methods of the validator's rules, in its order.
    """
    found: list[Found] = []
    for item in walk:
        for check in checks:
            hits = check(item)
            if hits:
                found.extend(hits)
    end = walk.end()
    for finish in finishes:
        hits = finish(end)
        if hits:
            found.extend(hits)
    return ordered(found)


def ordered(found: list[Found]) -> list[Violation]:
    """The violations of ``found`` in reporting order (see the module docstring)."""
    if len(found) > 1:
        found.sort(key=ORDER)
    return [entry[3] for entry in found]
