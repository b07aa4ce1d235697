"""The Anthropic Messages API's rules for a request, one small object per rule.

:func:`validate_messages` never raises: it walks the request once (:class:`Turns`), runs every
rule of :data:`RULES` on each message in context and on the request as a whole, and lists what
they found, each with the path of the message or block and a stable rule name callers can filter
on.

Reporting order: by message; within a message by stage (the message's shape and role, its
content and blocks, its tool_use ids, the answers it owes the previous message, its thinking
blocks, its tool_results, then the end of the request); within a stage by block; and for one
block in the order of :data:`RULES`. Block positions count the blocks that have a string
``type`` only (a malformed block is reported at its own place, and the blocks after it are
numbered as if it were not there).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core._messages import REFUSED_ID_CHARACTERS, MessageInput
from ..core._pairing import id_key
from ._anthropic_turns import (
    _THINKING,
    _TOOL_USES,
    BADLY_NAMED,
    BLANK,
    DROPPED,
    RESULTS_SEEN,
    THINKING_SEEN,
    TOOL_USES_SEEN,
    UNNAMED,
    Ending,
    Turn,
    Turns,
    _is_request,
)
from ._rule import (
    DUPLICATE_TOOL_USE_ID,
    EMPTY_CONTENT,
    FIRST_NOT_USER,
    MALFORMED,
    NOTHING,
    SAME_ROLE_TWICE,
    THINKING_IN_USER,
    THINKING_NOT_FIRST,
    THINKING_UNSIGNED,
    TOOL_RESULT_UNKNOWN,
    TOOL_USE_ID_REFUSED,
    TOOL_USE_IN_USER,
    TOOL_USE_UNANSWERED,
    Found,
    Rule,
    Violation,
    validate,
)

__all__ = [
    "BLANK",
    "DROPPED",
    "DUPLICATE_TOOL_USE_ID",
    "EMPTY_CONTENT",
    "FIRST_NOT_USER",
    "MALFORMED",
    "RESULTS_SEEN",
    "RULES",
    "SAME_ROLE_TWICE",
    "THINKING_IN_USER",
    "THINKING_NOT_FIRST",
    "THINKING_SEEN",
    "THINKING_UNSIGNED",
    "TOOL_RESULT_UNKNOWN",
    "TOOL_USES_SEEN",
    "TOOL_USE_ID_REFUSED",
    "TOOL_USE_IN_USER",
    "TOOL_USE_UNANSWERED",
    "UNNAMED",
    "DuplicateToolUseId",
    "EmptyContent",
    "Ending",
    "FirstNotUser",
    "Malformed",
    "SameRoleTwice",
    "ThinkingInUser",
    "ThinkingNotFirst",
    "ThinkingUnsigned",
    "ToolResultUnknown",
    "ToolUseIdRefused",
    "ToolUseInUser",
    "ToolUseUnanswered",
    "Turn",
    "Turns",
    "Violation",
    "validate_messages",
]

# Stages within one message, in reporting order.
SHAPE, CONTENT, IDS, PAIRING, THINKING, RESULTS, END = range(7)


# -- the rules, in reporting order for one block ------------------------------------------------


class _MessageRule:
    """A rule that the end of the request tells nothing more about."""

    def finish(self, end: Ending, /) -> Sequence[Found]:
        """Nothing: this rule judges messages one by one."""
        return NOTHING


class Malformed:
    """Every message, content and block has a known shape; every tool_use has a string id."""

    name = MALFORMED

    def check(self, turn: Turn, /) -> Sequence[Found]:
        """A message without a known role, content neither string nor list, a block without a
        string ``type``, a tool_use without a string id."""
        index = turn.index
        if turn.role is None:
            detail = "not a message with a user or assistant role"
            return ((index, SHAPE, 0, Violation(turn.path, MALFORMED, detail)),)
        content = turn.content
        if isinstance(content, str):
            return NOTHING
        if not isinstance(content, list):
            detail = "content is not a string or list"
            return ((index, CONTENT, -1, Violation(f"{turn.path}.content", MALFORMED, detail)),)
        found: list[Found] = []
        if turn.seen & DROPPED:
            for position, block in enumerate(content):
                if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                    where = f"{turn.path}.content[{position}]"
                    detail = "block has no string 'type'"
                    found.append((index, CONTENT, position, Violation(where, MALFORMED, detail)))
        if turn.seen & UNNAMED:
            for position, block in enumerate(turn.blocks):
                if block.get("type") != "tool_use":
                    continue
                tool_use_id = block.get("id")
                if not isinstance(tool_use_id, str) or not tool_use_id:
                    where = f"{turn.path}.content[{position}]"
                    detail = "a tool_use without a string id"
                    found.append((index, IDS, position, Violation(where, MALFORMED, detail)))
        return found

    def finish(self, end: Ending, /) -> Sequence[Found]:
        """A request that is not a list of messages."""
        if _is_request(end.messages):
            return NOTHING
        detail = f"not a list of messages: {type(end.messages).__name__}"
        return ((-1, SHAPE, 0, Violation(end.name, MALFORMED, detail)),)


class FirstNotUser(_MessageRule):
    """The first message is a user message."""

    name = FIRST_NOT_USER

    def check(self, turn: Turn, /) -> Sequence[Found]:
        """The first message, when its role is ``assistant``."""
        if turn.index or turn.role is None or turn.role == "user":
            return NOTHING
        detail = f"the first message is {turn.role!r}"
        return ((0, SHAPE, 0, Violation(turn.path, FIRST_NOT_USER, detail)),)


class SameRoleTwice(_MessageRule):
    """User and assistant messages alternate."""

    name = SAME_ROLE_TWICE

    def check(self, turn: Turn, /) -> Sequence[Found]:
        """A message with the role of the message right before it."""
        if turn.role is None or turn.role != turn.previous_role:
            return NOTHING
        detail = f"two {turn.role} messages in a row"
        return ((turn.index, SHAPE, 0, Violation(turn.path, SAME_ROLE_TWICE, detail)),)


class EmptyContent(_MessageRule):
    """A request has messages, and no message or text block is empty."""

    name = EMPTY_CONTENT

    def check(self, turn: Turn, /) -> Sequence[Found]:
        """Empty string content, an empty content list, a text block with no text."""
        content = turn.content
        if turn.role is None or not isinstance(content, (str, list)):
            return NOTHING
        index = turn.index
        if not content:
            detail = "empty string content" if isinstance(content, str) else "empty content list"
            return ((index, CONTENT, -1, Violation(f"{turn.path}.content", EMPTY_CONTENT, detail)),)
        if not turn.seen & BLANK:
            return NOTHING
        found: list[Found] = []
        for position, block in enumerate(content):
            if isinstance(block, dict) and block.get("type") == "text" and not block.get("text"):
                where = f"{turn.path}.content[{position}]"
                found.append(
                    (index, CONTENT, position, Violation(where, EMPTY_CONTENT, "empty text block"))
                )
        return found

    def finish(self, end: Ending, /) -> Sequence[Found]:
        """A request without any message."""
        if not _is_request(end.messages) or end.messages:
            return NOTHING
        detail = "a request needs at least one message"
        return ((-1, SHAPE, 0, Violation(end.name, EMPTY_CONTENT, detail)),)


class DuplicateToolUseId(_MessageRule):
    """No tool_use id is used twice in one request."""

    name = DUPLICATE_TOOL_USE_ID

    def check(self, turn: Turn, /) -> Sequence[Found]:
        """Each tool_use whose id an earlier tool_use of the request has (the first is fine)."""
        if not turn.earlier:
            return NOTHING
        found: list[Found] = []
        for position, first in turn.earlier.items():
            tool_use_id = turn.blocks[position]["id"]
            detail = f"tool_use id {tool_use_id!r} is already used at {first}"
            where = f"{turn.path}.content[{position}]"
            found.append(
                (turn.index, IDS, position, Violation(where, DUPLICATE_TOOL_USE_ID, detail))
            )
        return found


class ToolUseIdRefused(_MessageRule):
    """Every tool_use id is made of letters, digits, ``_`` and ``-`` (``^[a-zA-Z0-9_-]+$``)."""

    name = TOOL_USE_ID_REFUSED

    def check(self, turn: Turn, /) -> Sequence[Found]:
        """Each tool_use whose string id holds another character (an empty id is malformed)."""
        if not turn.seen & BADLY_NAMED:
            return NOTHING
        found: list[Found] = []
        for position, block in enumerate(turn.blocks):
            tool_use_id = block.get("id")
            if block["type"] != "tool_use" or not isinstance(tool_use_id, str):
                continue
            refused = REFUSED_ID_CHARACTERS.search(tool_use_id)
            if refused is not None:
                where = f"{turn.path}.content[{position}]"
                detail = (
                    f"tool_use id {tool_use_id!r} holds {refused.group()!r}: only letters,"
                    " digits, _ and - are accepted"
                )
                found.append(
                    (turn.index, IDS, position, Violation(where, TOOL_USE_ID_REFUSED, detail))
                )
        return found


class ToolUseInUser(_MessageRule):
    """Tool calls (tool_use and server_tool_use blocks) appear only in assistant messages."""

    name = TOOL_USE_IN_USER

    def check(self, turn: Turn, /) -> Sequence[Found]:
        """Each tool_use or server_tool_use block of a user message."""
        if not turn.seen & TOOL_USES_SEEN or turn.role != "user":
            return NOTHING
        found: list[Found] = []
        for position, block in enumerate(turn.blocks):
            kind = block["type"]
            if kind in _TOOL_USES:
                where = f"{turn.path}.content[{position}]"
                detail = f"a {kind} block in a user message"
                found.append(
                    (turn.index, IDS, position, Violation(where, TOOL_USE_IN_USER, detail))
                )
        return found


class ToolUseUnanswered:
    """Each tool_use is answered by a tool_result in the next message, a user message."""

    name = TOOL_USE_UNANSWERED

    def check(self, turn: Turn, /) -> Sequence[Found]:
        """A message after tool_use that is not a user message, or does not answer them all."""
        offered = turn.offered
        if not offered or turn.role is None:
            return NOTHING
        ids = offered
        if turn.role == "user":
            answered = {
                id_key(block.get("tool_use_id"))
                for block in turn.blocks
                if block.get("type") == "tool_result"
            }
            ids = [tool_use_id for tool_use_id in offered if tool_use_id not in answered]
            if not ids:
                return NOTHING
        detail = f"no tool_result for tool_use {', '.join(map(str, ids))}"
        return ((turn.index, PAIRING, 0, Violation(turn.path, TOOL_USE_UNANSWERED, detail)),)

    def finish(self, end: Ending, /) -> Sequence[Found]:
        """A request whose last message is an assistant message with tool_use."""
        last = end.last
        if last is None or last.role != "assistant" or not last.uses:
            return NOTHING
        detail = "the request ends with a tool_use"
        return ((last.index, END, 0, Violation(last.path, TOOL_USE_UNANSWERED, detail)),)


class ThinkingInUser(_MessageRule):
    """Thinking blocks appear only in assistant messages."""

    name = THINKING_IN_USER

    def check(self, turn: Turn, /) -> Sequence[Found]:
        """Each thinking or redacted_thinking block of a user message."""
        if not turn.seen & THINKING_SEEN or turn.role == "assistant":
            return NOTHING
        found: list[Found] = []
        for position, block in enumerate(turn.blocks):
            kind = block["type"]
            if kind in _THINKING:
                where = f"{turn.path}.content[{position}]"
                detail = f"a {kind} block in a user message"
                found.append(
                    (turn.index, THINKING, position, Violation(where, THINKING_IN_USER, detail))
                )
        return found


class ThinkingNotFirst(_MessageRule):
    """The thinking blocks of an assistant message come before its other blocks."""

    name = THINKING_NOT_FIRST

    def check(self, turn: Turn, /) -> Sequence[Found]:
        """Each thinking block of an assistant message that follows another kind of block."""
        if not turn.seen & THINKING_SEEN or turn.role != "assistant":
            return NOTHING
        found: list[Found] = []
        seen_other = False
        for position, block in enumerate(turn.blocks):
            kind = block["type"]
            if kind not in _THINKING:
                seen_other = True
            elif seen_other:
                where = f"{turn.path}.content[{position}]"
                detail = f"a {kind} block after other blocks"
                found.append(
                    (turn.index, THINKING, position, Violation(where, THINKING_NOT_FIRST, detail))
                )
        return found


class ThinkingUnsigned(_MessageRule):
    """Each thinking block has its signature, each redacted_thinking block its data."""

    name = THINKING_UNSIGNED

    def check(self, turn: Turn, /) -> Sequence[Found]:
        """Each thinking block of an assistant message without a non-empty string signature."""
        if not turn.seen & THINKING_SEEN or turn.role != "assistant":
            return NOTHING
        found: list[Found] = []
        for position, block in enumerate(turn.blocks):
            kind = block["type"]
            if kind not in _THINKING:
                continue
            key = "signature" if kind == "thinking" else "data"
            value = block.get(key)
            if not isinstance(value, str) or not value:
                where = f"{turn.path}.content[{position}]"
                detail = f"a {kind} block without {key}"
                found.append(
                    (turn.index, THINKING, position, Violation(where, THINKING_UNSIGNED, detail))
                )
        return found


class ToolResultUnknown(_MessageRule):
    """Each tool_result answers a tool_use of the message right before it."""

    name = TOOL_RESULT_UNKNOWN

    def check(self, turn: Turn, /) -> Sequence[Found]:
        """Each tool_result whose id no tool_use of the previous message has (all of them in an
        assistant message)."""
        if not turn.seen & RESULTS_SEEN:
            return NOTHING
        offered = set(turn.offered) if turn.role == "user" else set()
        found: list[Found] = []
        for position, block in enumerate(turn.blocks):
            if block["type"] == "tool_result" and id_key(block.get("tool_use_id")) not in offered:
                where = f"{turn.path}.content[{position}]"
                detail = (
                    f"tool_result for {block.get('tool_use_id')!r} answers no tool_use of"
                    " the previous message"
                )
                found.append(
                    (turn.index, RESULTS, position, Violation(where, TOOL_RESULT_UNKNOWN, detail))
                )
        return found


RULES: tuple[Rule[Turn, Ending], ...] = (
    Malformed(),
    FirstNotUser(),
    SameRoleTwice(),
    EmptyContent(),
    DuplicateToolUseId(),
    ToolUseIdRefused(),
    ToolUseInUser(),
    ToolUseUnanswered(),
    ThinkingInUser(),
    ThinkingNotFirst(),
    ThinkingUnsigned(),
    ToolResultUnknown(),
)
"""Every rule of the Messages API that windowkeeper checks, in reporting order for one block."""

_CHECKS = tuple(rule.check for rule in RULES)
_FINISHES = tuple(rule.finish for rule in RULES)


def validate_messages(messages: Sequence[MessageInput], name: str = "messages") -> list[Violation]:
    """Every provider-rule violation of an outgoing Anthropic request, in message order.

    Rules: the first message is a user message; roles alternate; each tool_use is answered by a
    tool_result in the next message, which is a user message; each tool_result answers a tool_use
    of the preceding assistant message; tool calls (tool_use, server_tool_use) appear only in
    assistant messages; no message has empty content; thinking blocks appear only in assistant
    messages, before their other blocks, each with its signature (redacted ones with their
    data); every message and block has a known shape. An empty list is reported too, and so is a
    tool_use id used twice in one request or holding a character the API refuses (anything
    but letters, digits, ``_`` and ``-``). Never raises for bad input: it reports it. The order
    is the module's (see its docstring).
    """
    return validate(Turns(messages, name), _CHECKS, _FINISHES)
