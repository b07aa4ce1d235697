"""The last request the estimator observed (its anchor), and how it is recognised and persisted.

A restored anchor has no message objects, only their count and a digest by value; the next
request whose first messages have that digest takes their place.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from itertools import islice
from typing import Any, NamedTuple

from ..core._messages import Message
from ._units import Units

__all__ = ["Anchor", "Digests", "anchor_value", "is_prefix", "numbers", "read_anchor"]


class Anchor(NamedTuple):
    """The last observed request: what it sent and what the provider reported for it."""

    messages: tuple[Message, ...]
    totals: Units  # of the messages
    system_units: Units
    tools_units: int
    reported: int


class Digests:
    """A digest of messages by value (what a restored anchor is recognised by), chained message
    by message so that a request sharing a prefix with the last one dumps only what is new.

    The prefix is shared by identity: messages are values, and a session hands the counter the
    same objects for the messages that did not change (a full dump per commit was several
    milliseconds on a 600-message request, more than the rest of the turn).
    """

    __slots__ = ("_chain", "_messages")

    def __init__(self) -> None:
        self._messages: list[Message] = []
        self._chain: list[bytes] = [b""]  # _chain[i]: the digest of the first i messages

    def of(self, messages: Sequence[Message]) -> str:
        """The hex digest of ``messages``."""
        known, chain = self._messages, self._chain
        shared, limit = 0, min(len(known), len(messages))
        while shared < limit and known[shared] is messages[shared]:
            shared += 1
        del known[shared:]
        del chain[shared + 1 :]
        from hashlib import sha256  # noqa: PLC0415 - a calibrated counter's, not the import's

        for message in messages[shared:]:
            text = json.dumps(
                message, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=repr
            )
            chain.append(sha256(chain[-1] + text.encode("utf-8", "surrogatepass")).digest())
            known.append(message)
        return chain[len(messages)].hex() if messages else sha256(b"").hexdigest()


def anchor_value(anchor: Anchor) -> list[Any]:
    return [*anchor.totals, *anchor.system_units[::2], anchor.tools_units, anchor.reported]


def numbers(value: Any, count: int, what: str) -> list[float]:
    if (
        not isinstance(value, list)
        or len(value) != count
        or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            for v in value
        )
    ):
        raise ValueError(f"{what}: expected {count} finite numbers")
    return [float(v) for v in value]


def read_anchor(value: Any, count: int, what: str) -> tuple[Anchor, tuple[int, str] | None]:
    if not isinstance(value, list) or len(value) != count:
        raise ValueError(f"{what}: expected {count} values")
    counts = value[:7]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts):
        raise ValueError(f"{what}: expected counts >= 0")
    text, thinking, images, system_text, system_images, tools, reported = counts
    anchor = Anchor(
        (), Units(text, thinking, images), Units(system_text, 0, system_images), tools, reported
    )
    if count == 7:
        return anchor, None
    length, digest = value[7:]
    if isinstance(length, bool) or not isinstance(length, int) or length < 0:
        raise ValueError(f"{what}: expected a message count")
    if not isinstance(digest, str) or len(digest) != 64:
        raise ValueError(f"{what}: expected a sha256 digest")
    return anchor, (length, digest)


def is_prefix(previous: tuple[Message, ...], messages: Sequence[Message]) -> bool:
    """Whether ``previous`` starts ``messages``: by identity, then by equality.

    Tuple equality compares each pair by identity first, in C, so the usual case (the same
    objects) costs no call per message.
    """
    size = len(previous)
    return len(messages) >= size and previous == tuple(islice(messages, size))
