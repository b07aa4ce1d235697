"""The OpenAI Chat Completions API's tool-pairing rules for a request, one small object per rule.

:func:`validate_openai` walks the messages once (:class:`Entries`) and runs every rule of
:data:`RULES` on each message in context and on the request as a whole. It uses the rule names
and the :class:`~windowkeeper.rules._rule.Violation` of the Anthropic rules.

Reporting order: by message; within a message, the calls of the run it ends that no tool
message answered, then its malformed parts; the calls the request leaves unanswered come last.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..core._messages import MessageInput
from ._rule import (
    MALFORMED,
    NOTHING,
    TOOL_RESULT_UNKNOWN,
    TOOL_USE_UNANSWERED,
    Found,
    Rule,
    Violation,
    validate,
)

__all__ = [
    "OPENAI_ROLES",
    "RULES",
    "SYSTEM_ROLES",
    "Entries",
    "Entry",
    "Malformed",
    "OpenAIEnding",
    "ToolResultUnknown",
    "ToolUseUnanswered",
    "role_of",
    "validate_openai",
]

SYSTEM_ROLES = frozenset({"system", "developer"})
OPENAI_ROLES = SYSTEM_ROLES | {"user", "assistant", "tool"}
"""The roles of a Chat Completions message."""

# Stages within one message, in reporting order.
PAIRING, SHAPE, END = range(3)

_NO_CALLS: dict[str, str] = {}  # shared, never written to
_NOTHING_ANSWERED: frozenset[str] = frozenset()


def role_of(message: Any) -> Any:
    """The ``role`` of ``message``, or None when it is not a dict."""
    return message.get("role") if isinstance(message, dict) else None


class Entry:
    """One Chat Completions message, with the run of tool messages it stands in.

    ``calls`` maps the id of each tool call of the assistant message that began the current run
    (tool calls with a string id, the first of each id) to its path; ``answered`` holds the ids a
    tool message of the run answered before this message. Both are empty outside a run.
    ``flawed`` tells that the walk found this assistant message's ``tool_calls`` not a list of
    calls with distinct string ids (the rules need not look when it did not).
    """

    __slots__ = ("answered", "calls", "flawed", "index", "message", "path", "role")

    # One Entry per message: positional arguments keep the walk cheap.
    def __init__(  # noqa: PLR0917
        self,
        index: int,
        path: str,
        message: Any,
        role: Any,
        calls: dict[str, str],
        answered: frozenset[str],
        flawed: bool = False,
    ) -> None:
        self.index = index
        self.path = path
        self.message = message
        self.role = role
        self.calls = calls
        self.answered = answered
        self.flawed = flawed


@dataclass(frozen=True, slots=True)
class OpenAIEnding:
    """The request as a whole: its name, what was passed, and the run its last message left."""

    name: str
    messages: Any
    calls: dict[str, str]
    answered: frozenset[str]


def _is_request(messages: Any) -> bool:
    return isinstance(messages, Sequence) and not isinstance(messages, str | bytes)


def _calls(calls: Any, path: str, violations: list[Violation]) -> dict[str, str]:
    """The tool calls of an assistant message, id -> path; what is wrong goes to ``violations``."""
    if calls is None:
        return _NO_CALLS
    if not isinstance(calls, list):
        detail = "tool_calls is not a list"
        violations.append(Violation(f"{path}.tool_calls", MALFORMED, detail))
        return _NO_CALLS
    waiting: dict[str, str] = {}
    for position, call in enumerate(calls):
        call_path = f"{path}.tool_calls[{position}]"
        call_id = call.get("id") if isinstance(call, dict) else None
        if not isinstance(call_id, str) or not call_id:
            violations.append(Violation(f"{call_path}.id", MALFORMED, "a tool call has no id"))
        elif call_id in waiting:
            violations.append(Violation(f"{call_path}.id", MALFORMED, f"{call_id!r} repeats"))
        else:
            waiting[call_id] = call_path
    return waiting


def _answers(message: Any, calls: dict[str, str], answered: frozenset[str]) -> str | None:
    """The id a tool message answers in its run, or None when it answers nothing."""
    call_id = message.get("tool_call_id")
    if isinstance(call_id, str) and call_id in calls and call_id not in answered:
        return call_id
    return None


class Entries:
    """The walk over a Chat Completions request: each message as an :class:`Entry`, then the end."""

    __slots__ = ("_answered", "_calls", "messages", "name")

    def __init__(self, messages: Any, name: str = "messages") -> None:
        self.messages = messages
        self.name = name
        self._calls: dict[str, str] = _NO_CALLS
        self._answered = _NOTHING_ANSWERED

    def end(self) -> OpenAIEnding:
        """The request as a whole, with the run its last message left open."""
        return OpenAIEnding(self.name, self.messages, self._calls, self._answered)

    def __iter__(self) -> Iterator[Entry]:
        """Each message in context, in order (nothing when the request is not a list)."""
        if not _is_request(self.messages):
            return
        calls, answered = _NO_CALLS, _NOTHING_ANSWERED
        self._calls, self._answered = calls, answered
        for index, message in enumerate(self.messages):
            path = f"{self.name}[{index}]"
            role = role_of(message)
            if role == "tool":
                yield Entry(index, path, message, role, calls, answered)
                call_id = _answers(message, calls, answered)
                if call_id is not None:
                    answered = answered | {call_id}
            elif role == "assistant":
                flaws: list[Violation] = []
                following = _calls(message.get("tool_calls"), path, flaws)
                yield Entry(index, path, message, role, calls, answered, bool(flaws))
                calls, answered = following, _NOTHING_ANSWERED
            else:
                yield Entry(index, path, message, role, calls, answered)
                calls, answered = _NO_CALLS, _NOTHING_ANSWERED
            self._calls, self._answered = calls, answered


# -- the rules ---------------------------------------------------------------------------------


class ToolUseUnanswered:
    """Each tool call is answered by a tool message in the run right after its message."""

    name = TOOL_USE_UNANSWERED

    def check(self, entry: Entry, /) -> Sequence[Found]:
        """At a message that ends a run (any but a tool message): each call left unanswered."""
        if not entry.calls or entry.role == "tool":
            return NOTHING
        return [
            (
                entry.index,
                PAIRING,
                0,
                Violation(
                    call_path,
                    TOOL_USE_UNANSWERED,
                    f"no tool message answers {call_id!r} before {entry.path}",
                ),
            )
            for call_id, call_path in entry.calls.items()
            if call_id not in entry.answered
        ]

    def finish(self, end: OpenAIEnding, /) -> Sequence[Found]:
        """Each call of the run the request ends in that no tool message answered."""
        last = len(end.messages) - 1 if end.calls else 0
        return [
            (
                last,
                END,
                0,
                Violation(
                    call_path,
                    TOOL_USE_UNANSWERED,
                    f"the request ends before {call_id!r} is answered",
                ),
            )
            for call_id, call_path in end.calls.items()
            if call_id not in end.answered
        ]


class ToolResultUnknown:
    """Each tool message answers a call of the run's assistant message, once."""

    name = TOOL_RESULT_UNKNOWN

    def check(self, entry: Entry, /) -> Sequence[Found]:
        """A tool message with a string id that answers no call of its run, or one answered."""
        if entry.role != "tool":
            return NOTHING
        call_id = entry.message.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            return NOTHING
        if _answers(entry.message, entry.calls, entry.answered) is not None:
            return NOTHING
        again = "a second time" if call_id in entry.answered else "no tool call right before it"
        detail = f"tool message for {call_id!r} answers {again}"
        return ((entry.index, PAIRING, 0, Violation(entry.path, TOOL_RESULT_UNKNOWN, detail)),)

    def finish(self, end: OpenAIEnding, /) -> Sequence[Found]:
        """Nothing: this rule judges messages one by one."""
        return NOTHING


class Malformed:
    """Roles are known, tool messages and tool calls have string ids, distinct in one message."""

    name = MALFORMED

    def check(self, entry: Entry, /) -> Sequence[Found]:
        """A tool message without an id, an unknown role, tool_calls that is not a list of calls
        with distinct string ids."""
        index, path, role = entry.index, entry.path, entry.role
        if role == "tool":
            call_id = entry.message.get("tool_call_id")
            if isinstance(call_id, str) and call_id:
                return NOTHING
            violation = Violation(f"{path}.tool_call_id", MALFORMED, "no string id")
            return ((index, SHAPE, 0, violation),)
        if role not in OPENAI_ROLES:
            violation = Violation(path, MALFORMED, "not a message with a known role")
            return ((index, SHAPE, 0, violation),)
        if role != "assistant" or not entry.flawed:
            return NOTHING
        violations: list[Violation] = []
        _calls(entry.message.get("tool_calls"), path, violations)
        return [(index, SHAPE, 0, violation) for violation in violations]

    def finish(self, end: OpenAIEnding, /) -> Sequence[Found]:
        """A request that is not a list of messages."""
        if _is_request(end.messages):
            return NOTHING
        return ((-1, SHAPE, 0, Violation(end.name, MALFORMED, "not a list of messages")),)


RULES: tuple[Rule[Entry, OpenAIEnding], ...] = (
    ToolUseUnanswered(),
    ToolResultUnknown(),
    Malformed(),
)
"""Every Chat Completions rule that windowkeeper checks, in reporting order within a message."""

_CHECKS = tuple(rule.check for rule in RULES)
_FINISHES = tuple(rule.finish for rule in RULES)


def validate_openai(messages: Sequence[MessageInput], name: str = "messages") -> list[Violation]:
    """Every tool-pairing violation of an OpenAI Chat Completions request, in message order.

    Rules, as the API enforces them: the tool calls of an assistant message are each answered
    by a tool message with their id, in the run of tool messages right after it (any other
    message, system and developer included, ends that run); every tool message answers a call of
    that assistant message, once; ids within one message are distinct; roles are known. Uses
    the rule names of :func:`~windowkeeper.validate_messages`. Never raises for bad input.
    """
    return validate(Entries(messages, name), _CHECKS, _FINISHES)
