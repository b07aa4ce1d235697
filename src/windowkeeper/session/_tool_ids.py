"""Tool-use ids made unique within a conversation, as the Anthropic API requires.

Histories can reuse an id: some models and proxies number calls per turn (``call_0`` in every
turn, seen in a real GPT-4o trace replayed in Anthropic's shape), and a request holding two
tool_use blocks with one id is refused. :class:`UniqueToolIds` gives every later use of an id
already used a new one (``call_0_2``, then ``call_0_3``, ...), in the tool_use and in the
tool_results of the next user message that answer it. With ``anthropic_ids`` (a session in
Anthropic's shape), an id with characters the Messages API refuses (it takes letters, digits,
``_`` and ``-``; ``functions.read:0`` comes from OpenAI-compatible servers, whose models read
their ids back, so the OpenAI shapes keep them) is sent with each such character as ``_``
(``functions_read_0``), numbered the same way when that is taken. Renames are decided once per message, as
the history grows, so they never change from one request to the next (what was sent stays a
cacheable prefix); the history itself is never modified.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core._incremental import Growing, Seen
from ..core._messages import REFUSED_ID_CHARACTERS, Message

__all__ = ["UniqueToolIds"]


class UniqueToolIds:
    """Renames repeated tool_use ids of a growing history (see the module docstring).

    Work is done for the messages that are new since the last call: the unchanged prefix is
    found by :class:`~windowkeeper.core._incremental.Seen` (constant time for the session's own
    :class:`~windowkeeper.core._incremental.Growing` history); decisions about messages past it
    are forgotten and made again. Not thread-safe.
    """

    __slots__ = ("_anthropic_ids", "_copies", "_in", "_out", "_renames", "_seen")

    def __init__(self, *, anthropic_ids: bool = False) -> None:
        self._anthropic_ids = anthropic_ids
        self._in = Seen()  # the history looked at last
        self._out = Growing()  # what apply returned for it
        self._seen: set[str] = set()
        # assistant index -> (block position -> new id, old id -> new id for the next message,
        # the positions renamed for refused characters)
        self._renames: dict[int, tuple[dict[int, str], dict[str, list[str]], frozenset[int]]] = {}
        self._copies: dict[int, tuple[Message, Message]] = {}

    def reset(self) -> None:
        """Forget everything: the next :meth:`apply` looks at the whole history again."""
        self._in, self._out = Seen(), Growing()
        self._seen, self._renames, self._copies = set(), {}, {}

    def renamed(self) -> dict[int, dict[int, tuple[str, bool]]]:
        """Message index -> block position -> (new id, whether the old one had characters the
        API refuses; else it was used before), for every tool_use block renamed."""
        return {
            index: {position: (new, position in refused) for position, new in positions.items()}
            for index, (positions, _, refused) in self._renames.items()
        }

    def _forget(self, start: int, end: int) -> None:
        """Drop the decisions about messages ``start`` to ``end`` (exclusive)."""
        out = self._out  # what was sent for them: the ids each one added, as sent
        for index in range(start, min(end, len(out))):
            for added in _tool_use_ids(out[index]):
                self._seen.discard(added)
            self._renames.pop(index, None)
            self._copies.pop(index, None)

    def _catch_up(self, history: Sequence[Message]) -> int:
        """Decide the renames of the messages new since the last call; return where they start."""
        done = self._in.prefix(history)
        if done < self._in.length:
            self._forget(done, self._in.length)
        seen = self._seen
        for index in range(done, len(history)):
            message = history[index]
            content = message.get("content")
            if message.get("role") != "assistant" or not isinstance(content, list):
                continue
            positions: dict[int, str] = {}
            answers: dict[str, list[str]] = {}  # old id -> the ids of its uses here, in order
            refused: set[int] = set()
            for position, block in enumerate(content):
                old = block.get("id") if isinstance(block, dict) else None
                if not isinstance(old, str) or block.get("type") != "tool_use":
                    continue
                base = REFUSED_ID_CHARACTERS.sub("_", old) if self._anthropic_ids else old
                if base == old and old not in seen:
                    seen.add(old)
                    answers.setdefault(old, []).append(old)
                    continue
                new, count = base, 2
                while new in seen:  # ends: each turn of the loop tries a new number
                    new, count = f"{base}_{count}", count + 1
                seen.add(new)
                positions[position] = new
                answers.setdefault(old, []).append(new)
                if base != old:
                    refused.add(position)
            if positions:
                # The k-th result for an id answers its k-th use (kept ids map to themselves).
                self._renames[index] = (positions, answers, frozenset(refused))
        self._in.remember(history)
        return done

    def apply(self, history: Sequence[Message]) -> list[Message]:
        """``history`` with repeated ids renamed; unchanged messages are shared.

        The list returned is this object's own, kept up to date as the history grows: read it,
        never change it.
        """
        done = self._catch_up(history)
        output = self._out
        if done < len(output):
            del output[done:]
        output.extend(history[done:])
        renames = self._renames
        for index in range(max(done - 1, 0), len(history)):
            entry = renames.get(index)
            if entry is None:
                continue
            positions, answers, _ = entry
            if index >= done:
                output.fill(index, self._copy(index, history[index], positions, {}))
            following = history[index + 1] if index + 1 < len(history) else None
            if answers and following is not None and following.get("role") == "user":
                output.fill(index + 1, self._copy(index + 1, following, {}, answers))
        return output

    def _copy(
        self,
        index: int,
        message: Message,
        positions: dict[int, str],
        answers: dict[str, list[str]],
    ) -> Message:
        known = self._copies.get(index)
        if known is not None and known[0] is message:
            return known[1]
        content = message.get("content")
        blocks = list(content) if isinstance(content, list) else []
        seen: dict[str, int] = {}
        for position, block in enumerate(blocks):
            if position in positions:
                blocks[position] = {**block, "id": positions[position]}
                continue
            old = block.get("tool_use_id") if isinstance(block, dict) else None
            if answers and block.get("type") == "tool_result" and old in answers:
                nth = seen.get(old, 0)
                seen[old] = nth + 1
                ids = answers[old]
                if nth < len(ids) and ids[nth] != old:
                    blocks[position] = {**block, "tool_use_id": ids[nth]}
        copy = {**message, "content": blocks}
        self._copies[index] = (message, copy)
        return copy


def _tool_use_ids(message: Message) -> list[str]:
    """The string ids of an assistant message's tool_use blocks (what it added to the seen ids)."""
    content = message.get("content")
    if message.get("role") != "assistant" or not isinstance(content, list):
        return []
    return [
        block["id"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "tool_use"
        and isinstance(block.get("id"), str)
    ]
