"""Provider rules for tool calls: the original's pairing repair, and a validator for every rule.

:func:`ensure_tool_results_follow_tool_use` is the original's repair, made pure: after an assistant
message with tool_use blocks, the next user message gets its tool_results in tool_use order,
results for unknown ids dropped, and a ``result missing`` placeholder for each call left
unanswered. :func:`validate_messages` reports what a provider would reject.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .messages import ROLES, Message, shared_prefix
from .notices import RESULT_MISSING

__all__ = [
    "OrphanResults",
    "PairMemo",
    "RepairMemo",
    "Violation",
    "ensure_tool_results_follow_tool_use",
    "validate_messages",
]


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
    output = list(messages)
    for position in range(len(output) - 1):
        ids = _tool_use_ids(output[position])
        if not ids:
            continue
        following = output[position + 1]
        if not isinstance(following, dict) or following.get("role") != "user":
            continue
        content = following.get("content")
        repaired = _repaired_results(ids, content if isinstance(content, list) else [])
        if repaired is not None:
            output[position + 1] = {**following, "content": repaired}
    return output


class PairMemo:
    """Applies a per-(assistant, next message) rewrite to a message list, remembering its work.

    An agent loop sends nearly the same messages on every request. For each pair of message
    objects this keeps what ``rewrite`` made of the second one and reuses it (the same object,
    which also keeps what is sent identical for prompt caching) while both are the same objects;
    when the list merely extends the last one, only the pairs from the seam on are looked at.
    Messages are treated as values: windowkeeper never changes one in place, and expects the same
    of its callers (to edit a message, put a new dict in its place). Not thread-safe.
    """

    __slots__ = ("_input", "_output", "_pairs", "_rewrite")

    def __init__(self, rewrite: Callable[[Message, Message], Message | None]) -> None:
        self._rewrite = rewrite
        self._pairs: dict[int, tuple[Any, Any, Any]] = {}
        self._input: list[Any] = []
        self._output: list[Any] = []

    def apply(self, messages: Sequence[Message]) -> list[Message]:
        """A copy of ``messages`` in which each message after an assistant one is rewritten."""
        shared = shared_prefix(self._input, messages)
        if shared == len(self._input) and shared:
            output = self._output[:shared] + list(messages[shared:])
            self._scan(output, shared - 1, self._pairs)
        else:
            output = list(messages)
            self._pairs = self._scan(output, 0, {})
        self._input = list(messages)
        self._output = output
        return list(output)

    def _scan(
        self, output: list[Any], start: int, seen: dict[int, tuple[Any, Any, Any]]
    ) -> dict[int, tuple[Any, Any, Any]]:
        known = self._pairs
        rewrite = self._rewrite
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
            seen[id(following)] = (message, following, rewritten)
            if rewritten is not None:
                output[position + 1] = rewritten
        return seen


class RepairMemo(PairMemo):
    """:func:`ensure_tool_results_follow_tool_use`, remembering its work (see :class:`PairMemo`)."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(_repaired_message)

    def repair(self, messages: Sequence[Message]) -> list[Message]:
        """The same result as :func:`ensure_tool_results_follow_tool_use` on ``messages``."""
        return self.apply(messages)


def _repaired_message(message: Any, following: Any) -> Message | None:
    ids = _tool_use_ids(message)
    if not ids or not isinstance(following, dict) or following.get("role") != "user":
        return None
    content = following.get("content")
    repaired = _repaired_results(ids, content if isinstance(content, list) else [])
    return None if repaired is None else {**following, "content": repaired}


def _orphans_as_text(message: Any, following: Any) -> Message | None:
    """``following`` with each tool_result that answers no call of ``message`` made text."""
    if not isinstance(following, dict) or following.get("role") != "user":
        return None
    content = following.get("content")
    if not isinstance(content, list):
        return None
    calls = {_key(tool_use_id) for tool_use_id in _tool_use_ids(message)}
    output: list[Any] = []
    changed = False
    for block in content:
        if (
            not isinstance(block, dict)
            or block.get("type") != "tool_result"
            or _key(block.get("tool_use_id")) in calls
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
        super().__init__(_orphans_as_text)

    def apply(self, messages: Sequence[Message]) -> list[Message]:
        """``messages`` with orphan results as text, in the first message too (nothing is before
        it, so every result there is an orphan)."""
        output = super().apply(messages)
        if output:
            first = _orphans_as_text({"role": "assistant", "content": []}, output[0])
            if first is not None:
                output[0] = first
        return output


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

_THINKING = frozenset({"thinking", "redacted_thinking"})


def validate_messages(messages: Sequence[Any], name: str = "messages") -> list[Violation]:
    """Every provider-rule violation of an outgoing Anthropic request, in message order.

    Rules: the first message is a user message; roles alternate; each tool_use is answered by a
    tool_result in the next message, which is a user message; each tool_result answers a tool_use
    of the preceding assistant message; no message has empty content; thinking blocks appear
    only in assistant messages, before their other blocks, each with its signature (redacted
    ones with their data); every message and block has a known shape. An empty list is reported
    too, and so is a tool_use id used twice in one request. Never raises for bad input: it
    reports it.
    """
    violations: list[Violation] = []
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        return [Violation(name, MALFORMED, f"not a list of messages: {type(messages).__name__}")]
    if not messages:
        return [Violation(name, EMPTY_CONTENT, "a request needs at least one message")]
    previous_role: Any = None
    expected: list[Any] = []
    used: dict[str, str] = {}  # tool_use id -> where it was first used
    for index, message in enumerate(messages):
        path = f"{name}[{index}]"
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            violations.append(
                Violation(path, MALFORMED, "not a message with a user or assistant role")
            )
            previous_role, expected = None, []
            continue
        role = message["role"]
        if index == 0 and role != "user":
            violations.append(Violation(path, FIRST_NOT_USER, f"the first message is {role!r}"))
        if role == previous_role:
            violations.append(Violation(path, SAME_ROLE_TWICE, f"two {role} messages in a row"))
        content = message.get("content")
        blocks = _blocks(content, path, violations)
        answered = {
            _key(block.get("tool_use_id")) for block in blocks if block.get("type") == "tool_result"
        }
        for position, block in enumerate(blocks):
            if block.get("type") != "tool_use":
                continue
            where = f"{path}.content[{position}]"
            tool_use_id = block.get("id")
            if not isinstance(tool_use_id, str) or not tool_use_id:
                violations.append(Violation(where, MALFORMED, "a tool_use without a string id"))
            elif tool_use_id in used:
                violations.append(
                    Violation(
                        where,
                        DUPLICATE_TOOL_USE_ID,
                        f"tool_use id {tool_use_id!r} is already used at {used[tool_use_id]}",
                    )
                )
            else:
                used[tool_use_id] = where
        if expected:
            missing = [tool_use_id for tool_use_id in expected if tool_use_id not in answered]
            if role != "user" or missing:
                ids = ", ".join(map(str, missing if role == "user" else expected))
                violations.append(
                    Violation(path, TOOL_USE_UNANSWERED, f"no tool_result for tool_use {ids}")
                )
        _check_thinking(blocks, role, path, violations)
        offered = set(expected) if role == "user" else set()
        for position, block in enumerate(blocks):
            if block.get("type") == "tool_result" and _key(block.get("tool_use_id")) not in offered:
                violations.append(
                    Violation(
                        f"{path}.content[{position}]",
                        TOOL_RESULT_UNKNOWN,
                        f"tool_result for {block.get('tool_use_id')!r} answers no tool_use of"
                        " the previous message",
                    )
                )
        expected = (
            [_key(block.get("id")) for block in blocks if block.get("type") == "tool_use"]
            if role == "assistant"
            else []
        )
        previous_role = role
    if expected:
        last = len(messages) - 1
        violations.append(
            Violation(f"{name}[{last}]", TOOL_USE_UNANSWERED, "the request ends with a tool_use")
        )
    return violations


def _key(value: Any) -> Any:
    """``value`` if it can be a set member, else its repr (odd ids must not make this raise)."""
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def _check_thinking(
    blocks: list[dict[str, Any]], role: str, path: str, violations: list[Violation]
) -> None:
    seen_other = False
    for position, block in enumerate(blocks):
        kind = block.get("type")
        where = f"{path}.content[{position}]"
        if kind not in _THINKING:
            seen_other = True
            continue
        if role != "assistant":
            violations.append(
                Violation(where, THINKING_IN_USER, f"a {kind} block in a user message")
            )
            continue
        if seen_other:
            violations.append(
                Violation(where, THINKING_NOT_FIRST, f"a {kind} block after other blocks")
            )
        key = "signature" if kind == "thinking" else "data"
        if not isinstance(block.get(key), str) or not block.get(key):
            violations.append(Violation(where, THINKING_UNSIGNED, f"a {kind} block without {key}"))


def _blocks(content: Any, path: str, violations: list[Violation]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        if not content:
            violations.append(Violation(f"{path}.content", EMPTY_CONTENT, "empty string content"))
        return []
    if not isinstance(content, list):
        violations.append(
            Violation(f"{path}.content", MALFORMED, "content is not a string or list")
        )
        return []
    if not content:
        violations.append(Violation(f"{path}.content", EMPTY_CONTENT, "empty content list"))
    blocks: list[dict[str, Any]] = []
    for position, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            violations.append(
                Violation(f"{path}.content[{position}]", MALFORMED, "block has no string 'type'")
            )
            continue
        if block.get("type") == "text" and not block.get("text"):
            violations.append(
                Violation(f"{path}.content[{position}]", EMPTY_CONTENT, "empty text block")
            )
        blocks.append(block)
    return blocks
