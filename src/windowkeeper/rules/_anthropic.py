"""The Anthropic Messages API's rules for a request, each reported as a :class:`Violation`.

:func:`validate_messages` never raises: it lists every rule a request breaks, with the path of the
message or block and a stable rule name callers can filter on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core._messages import ROLES
from ..core._pairing import id_key

__all__ = [
    "DUPLICATE_TOOL_USE_ID",
    "EMPTY_CONTENT",
    "FIRST_NOT_USER",
    "MALFORMED",
    "SAME_ROLE_TWICE",
    "THINKING_IN_USER",
    "THINKING_NOT_FIRST",
    "THINKING_UNSIGNED",
    "TOOL_RESULT_UNKNOWN",
    "TOOL_USE_UNANSWERED",
    "Violation",
    "validate_messages",
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
            id_key(block.get("tool_use_id"))
            for block in blocks
            if block.get("type") == "tool_result"
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
            if (
                block.get("type") == "tool_result"
                and id_key(block.get("tool_use_id")) not in offered
            ):
                violations.append(
                    Violation(
                        f"{path}.content[{position}]",
                        TOOL_RESULT_UNKNOWN,
                        f"tool_result for {block.get('tool_use_id')!r} answers no tool_use of"
                        " the previous message",
                    )
                )
        expected = (
            [id_key(block.get("id")) for block in blocks if block.get("type") == "tool_use"]
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
