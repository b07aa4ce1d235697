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
from bisect import bisect_right
from collections.abc import Sequence
from typing import Any

from ..core._messages import Message, shared_prefix
from ..core._notices import RESULT_MISSING
from ..core._pairing import RepairMemo, results_follow_tool_use_keeping_text

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
    """:func:`merge_same_roles` that, while the messages only grow, works only on the new ones.

    When roles alternate, only the new messages' roles are checked. When they do not (two user
    messages in a row early in a task is enough), the merged messages before the last run that
    changed are kept, the same objects, and only the rest is merged and repaired again: merging
    the whole list anew on every request would cost time in the whole visible part per turn,
    and the fresh copy of the merged message would make every memo downstream start over there.
    """

    __slots__ = ("_alternating", "_input", "_merged", "_repair", "_starts")

    def __init__(self) -> None:
        self._alternating: list[Message] = []  # the last input, when its roles alternated
        self._input: list[Message] = []  # the last input, when they did not
        self._merged: list[Message] = []  # what it merged into, before the pairing repair
        self._starts: list[int] = []  # per merged message, the input index its run starts at
        self._repair = RepairMemo(keep_text=True)

    def merge(self, messages: Sequence[Message]) -> list[Message]:
        """The same result as :func:`merge_same_roles` on ``messages``."""
        last = self._alternating
        done = len(last)
        if done and done <= len(messages) and shared_prefix(last, messages) == done:
            tail = list(map(_role, messages[done - 1 :]))
            if not any(map(operator.eq, tail, tail[1:])):
                self._alternating = list(messages)
                return list(messages)
        roles = list(map(_role, messages))
        if not any(map(operator.eq, roles, roles[1:])):
            self._alternating = list(messages)
            self._input, self._merged, self._starts = [], [], []
            return list(messages)
        self._alternating = []
        return self._repair.repair(self._merged_runs(messages))

    def _merged_runs(self, messages: Sequence[Message]) -> list[Message]:
        """``messages`` with each run of one role merged, the unchanged leading runs reused."""
        merged, starts = self._merged, self._starts
        # the run holding the last unchanged message may go on in the new messages: start there
        keep = bisect_right(starts, shared_prefix(self._input, messages) - 1) - 1
        keep = max(keep, 0)
        start = starts[keep] if keep < len(starts) else 0
        del merged[keep:], starts[keep:]
        for index in range(start, len(messages)):
            message = messages[index]
            if merged and merged[-1]["role"] == message["role"]:
                merged[-1] = _merged(merged[-1], message)
            else:
                merged.append(message)
                starts.append(index)
        self._input = list(messages)
        return merged
