"""The original's tool pairing repair, made pure, and the memos that apply it per turn.

:func:`ensure_tool_results_follow_tool_use`: after an assistant message with tool_use blocks, the
next user message gets its tool_results in tool_use order, results for unknown ids dropped, and a
``result missing`` placeholder for each call left unanswered. What a provider would reject is
reported by :mod:`windowkeeper.rules`.

The original empties a user message whose content is a string before it adds the placeholders,
so the user's words in it are lost (the conformance vectors record that). The session keeps
them: :func:`results_follow_tool_use_keeping_text` and ``RepairMemo(keep_text=True)`` put the
text after the placeholders instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ._incremental import Growing, Seen
from ._messages import Message
from ._notices import RESULT_MISSING

__all__ = [
    "OrphanResults",
    "PairMemo",
    "RepairMemo",
    "ensure_tool_results_follow_tool_use",
    "orphans_as_text",
    "results_follow_tool_use_keeping_text",
]


def id_key(value: Any) -> Any:
    """``value`` if it can be a set member, else its repr (odd ids must not make this raise)."""
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def _tool_use_ids(message: Any) -> list[Any]:
    if not isinstance(message, dict):
        return []
    content = message.get("content")
    if message.get("role") != "assistant" or not isinstance(content, list):
        return []
    return [
        block.get("id")
        for block in content
        if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("id")
    ]


def _repaired_results(ids: list[Any], content: list[Any]) -> list[Any] | None:
    """The repaired content of the user message after ``ids`` were called, or None if it is fine."""
    results: dict[Any, Any] = {}
    others: list[Any] = []
    for block in content:
        if (
            isinstance(block, dict)
            and block.get("type") == "tool_result"
            and block.get("tool_use_id")
        ):
            results[block["tool_use_id"]] = block
        else:
            others.append(block)
    needs_update = False
    if results:
        matched = 0
        for block in content:
            if matched >= len(ids):
                break
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_result"
                and block.get("tool_use_id") == ids[matched]
            ):
                matched += 1
            else:
                needs_update = True
                break
        if not needs_update and matched < len(results):
            needs_update = True
    for tool_use_id in ids:
        if tool_use_id not in results:
            results[tool_use_id] = {
                "type": "tool_result",
                "tool_use_id": tool_use_id,
                "content": RESULT_MISSING,
            }
            needs_update = True
    if not needs_update:
        return None
    return [results[tool_use_id] for tool_use_id in ids] + others


def ensure_tool_results_follow_tool_use(messages: Sequence[Message]) -> list[Message]:
    """A copy of ``messages`` in which every tool_use is answered in the next user message.

    Faithful to the original's repair, except that the input is never modified (deliberate
    fix 1: the original empties a string-content user message in place). Messages it does not
    change are the same objects as in the input. Not handled, as in the original: a tool_use in the
    last message, a tool_use followed by another assistant message, and tool_results after a
    message without tool_use.
    """
    return _repaired_list(messages, keep_text=False)


def results_follow_tool_use_keeping_text(messages: Sequence[Message]) -> list[Message]:
    """:func:`ensure_tool_results_follow_tool_use`, except that a user message whose content
    is a string keeps it, as a text block after the results (the original drops it)."""
    return _repaired_list(messages, keep_text=True)


def _repaired_list(messages: Sequence[Message], *, keep_text: bool) -> list[Message]:
    output = list(messages)
    for position in range(len(output) - 1):
        repaired = _repaired_message(output[position], output[position + 1], keep_text=keep_text)
        if repaired is not None:
            output[position + 1] = repaired
    return output


class PairMemo:
    """Applies a per-(assistant, next message) rewrite to a message list, remembering its work.

    An agent loop sends nearly the same messages on every request. For each pair of message
    objects this keeps what ``rewrite`` made of the second one and reuses it (the same object,
    which also keeps what is sent identical for prompt caching) while both are the same objects;
    when the list merely extends the last one, only the pairs from the seam on are looked at.
    Messages are treated as values (:mod:`windowkeeper.core._incremental` states the invariant).
    Not thread-safe.
    """

    __slots__ = ("_keeps_unchanged", "_output", "_pairs", "_rewrite", "_seen", "_shares")

    def __init__(
        self,
        rewrite: Callable[[Message, Message], Message | None],
        *,
        shares: bool = False,
        keeps_unchanged: bool = True,
    ) -> None:
        self._rewrite = rewrite
        self._pairs: dict[int, tuple[Any, Any, Any]] = {}
        self._seen = Seen()
        self._output = Growing()
        # True: apply returns its own Growing output, which readers must not change (the
        # session's chain, where a copy would cost time in the whole history every turn)
        self._shares = shares
        # False: pairs the rewrite left as they were are not remembered. For a memo over the
        # whole history (its list only grows, so a pair is looked at again only after a change
        # below it), that saves an entry per pair of the hidden part.
        self._keeps_unchanged = keeps_unchanged

    def apply(self, messages: Sequence[Message]) -> list[Message]:
        """``messages`` in which each message after an assistant one is rewritten.

        A new list, unless the memo was made with ``shares=True``: then its own output, a
        :class:`~windowkeeper.core._incremental.Growing` list that only the memo changes.
        """
        shared = self._seen.prefix(messages)
        output = self._output
        if shared:
            # output[i] depends on messages i-1 and i only: what precedes the seam stands.
            if shared < len(output):
                del output[shared:]
            output.extend(messages[shared:])
            self._scan(output, shared - 1, self._pairs)
            if len(self._pairs) > 2 * len(output) + 64:  # pairs no longer in the list
                live = set(map(id, output))
                self._pairs = {key: pair for key, pair in self._pairs.items() if key in live}
        else:
            output = self._output = Growing(messages)
            self._pairs = self._scan(output, 0, {})
        self._seen.remember(messages)
        return output if self._shares else list(output)

    def _scan(
        self, output: Growing, start: int, seen: dict[int, tuple[Any, Any, Any]]
    ) -> dict[int, tuple[Any, Any, Any]]:
        known = self._pairs
        rewrite = self._rewrite
        keeps_unchanged = self._keeps_unchanged
        for position in range(start, len(output) - 1):
            message = output[position]
            if not isinstance(message, dict) or message.get("role") != "assistant":
                continue
            following = output[position + 1]
            entry = known.get(id(following))
            if entry is not None and entry[0] is message and entry[1] is following:
                rewritten = entry[2]
            else:
                rewritten = rewrite(message, following)
            if rewritten is not None:
                seen[id(following)] = (message, following, rewritten)
                output.fill(position + 1, rewritten)  # past the seam: no reader has seen it
            elif keeps_unchanged:
                seen[id(following)] = (message, following, None)
        return seen


class RepairMemo(PairMemo):
    """:func:`ensure_tool_results_follow_tool_use`, remembering its work (see :class:`PairMemo`).

    With ``keep_text``, :func:`results_follow_tool_use_keeping_text` instead.
    """

    __slots__ = ()

    def __init__(self, *, keep_text: bool = False) -> None:
        super().__init__(_repaired_keeping_text if keep_text else _repaired_message)

    def repair(self, messages: Sequence[Message]) -> list[Message]:
        """The same result as :func:`ensure_tool_results_follow_tool_use` on ``messages``."""
        return self.apply(messages)


def _repaired_message(message: Any, following: Any, *, keep_text: bool = False) -> Message | None:
    ids = _tool_use_ids(message)
    if not ids or not isinstance(following, dict) or following.get("role") != "user":
        return None
    content = following.get("content")
    if isinstance(content, list):
        blocks = content
    elif keep_text and isinstance(content, str) and content:
        blocks = [{"type": "text", "text": content}]
    else:
        blocks = []  # the original: a string content is dropped
    repaired = _repaired_results(ids, blocks)
    return None if repaired is None else {**following, "content": repaired}


def _repaired_keeping_text(message: Any, following: Any) -> Message | None:
    return _repaired_message(message, following, keep_text=True)


def orphans_as_text(message: Any, following: Any) -> Message | None:
    """``following`` with each tool_result that answers no call of ``message`` made text."""
    if not isinstance(following, dict) or following.get("role") != "user":
        return None
    content = following.get("content")
    if not isinstance(content, list):
        return None
    calls = {id_key(tool_use_id) for tool_use_id in _tool_use_ids(message)}
    output: list[Any] = []
    changed = False
    for block in content:
        if (
            not isinstance(block, dict)
            or block.get("type") != "tool_result"
            or id_key(block.get("tool_use_id")) in calls
        ):
            output.append(block)
            continue
        changed = True
        header = f"[windowkeeper: the result of a tool call ({block.get('tool_use_id')}) whose call is not in this request:]"
        inner = block.get("content")
        output.append({"type": "text", "text": header})
        if isinstance(inner, str) and inner:
            output.append({"type": "text", "text": inner})
        elif isinstance(inner, list):
            output.extend(inner)
    return {**following, "content": output} if changed else None


class OrphanResults(PairMemo):
    """Turns tool_results that answer no call of the message before them into text blocks.

    The original sends them as they are (its repair looks only after messages with tool_use),
    and the provider refuses the request. Their content is kept, after a line that says what it
    is, so nothing the caller appended is lost. Remembers its work (see :class:`PairMemo`).
    """

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(orphans_as_text)

    def apply(self, messages: Sequence[Message]) -> list[Message]:
        """``messages`` with orphan results as text, in the first message too (nothing is before
        it, so every result there is an orphan)."""
        output = super().apply(messages)
        if output:
            first = orphans_as_text({"role": "assistant", "content": []}, output[0])
            if first is not None:
                output[0] = first
        return output
