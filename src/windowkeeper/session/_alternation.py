"""Roles that alternate: consecutive messages of one role merged into one, as providers expect.

The original accepts histories with two user (or two assistant) messages in a row and sends them
as they are; a provider may reject such a request, and the validator reports it. The session
merges each such run into one message before sending: string contents become text blocks,
tool_result blocks move to the front of a merged user message, and the pairing repair runs again
so that a tool_use of a merged assistant message is still answered (keeping the text of a user
message given as a string, which the original drops).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from ..core._messages import Message, shared_prefix
from ..core._notices import RESULT_MISSING
from ..core._pairing import results_follow_tool_use_keeping_text

__all__ = ["RoleMerger", "merge_same_roles"]

_role = operator.itemgetter("role")


def merge_same_roles(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with every run of one role merged into its first message (a new list).

    Returns an equal list, sharing every message, when roles already alternate (the usual case,
    checked at C speed).
    """
    roles = list(map(_role, messages))
    if not any(map(operator.eq, roles, roles[1:])):
        return list(messages)
    merged: list[Message] = []
    for message in messages:
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1] = _merged(merged[-1], message)
        else:
            merged.append(message)
    return results_follow_tool_use_keeping_text(merged)


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


_THINKING = frozenset({"thinking", "redacted_thinking"})


def _kind(block: Any) -> Any:
    return block.get("type") if isinstance(block, dict) else None


def _merged(first: Message, second: Message) -> Message:
    """One message of two of the same role, in the order the API requires.

    A merged user message lists its tool_results first, one per call: a placeholder the pairing
    repair added (``result missing``) gives way to the real result found in the other message.
    A merged assistant message lists its thinking blocks first.
    """
    blocks = _blocks(first.get("content")) + _blocks(second.get("content"))
    if first["role"] == "user":
        results: dict[Any, Any] = {}
        order: list[Any] = []
        for block in blocks:
            if _kind(block) != "tool_result":
                continue
            key = block.get("tool_use_id")
            key = key if isinstance(key, str) else repr(key)
            if key not in results:
                order.append(key)
                results[key] = block
            elif results[key].get("content") == RESULT_MISSING:
                results[key] = block
        others = [b for b in blocks if _kind(b) != "tool_result"]
        blocks = [results[key] for key in order] + others
    else:
        thinking = [b for b in blocks if _kind(b) in _THINKING]
        if thinking:
            blocks = thinking + [b for b in blocks if _kind(b) not in _THINKING]
    return {**first, "content": blocks}


class RoleMerger:
    """:func:`merge_same_roles` that, while the messages only grow, checks only the new ones."""

    __slots__ = ("_alternating",)

    def __init__(self) -> None:
        self._alternating: list[Message] = []  # the last input, when its roles alternated

    def merge(self, messages: Sequence[Message]) -> list[Message]:
        """The same result as :func:`merge_same_roles` on ``messages``."""
        last = self._alternating
        done = len(last)
        if done and done <= len(messages) and shared_prefix(last, messages) == done:
            tail = list(map(_role, messages[done - 1 :]))
            if not any(map(operator.eq, tail, tail[1:])):
                self._alternating = list(messages)
                return list(messages)
        merged = merge_same_roles(messages)
        self._alternating = list(messages) if len(merged) == len(messages) else []
        return merged
