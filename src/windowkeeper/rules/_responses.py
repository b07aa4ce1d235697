"""The OpenAI Responses API's rules for an input list, one small object per rule.

:func:`validate_responses` walks the items once (:class:`Items`) and runs every rule of
:data:`RULES` on each item in context and on the input as a whole. It uses the rule names and
the :class:`~windowkeeper.rules._rule.Violation` of the Anthropic rules. The item and part
vocabulary lives here too, as the converter in :mod:`windowkeeper.formats.responses` shares it.

Reporting order: by item; within an item, its shape, then its ``call_id``, then (for a call)
that no output answers it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..core._messages import MessageInput
from ._rule import (
    DUPLICATE_TOOL_USE_ID,
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
    "ASSISTANT_PARTS",
    "CALL_TYPES",
    "CARRIED_TYPES",
    "HOSTED_TYPES",
    "ITEM_TYPES",
    "OUTPUT_TYPES",
    "ROLES",
    "RULES",
    "SYSTEM_ROLES",
    "TRAILING_REASONING",
    "USER_PARTS",
    "DuplicateToolUseId",
    "InputItem",
    "Items",
    "Malformed",
    "ResponsesEnding",
    "ToolResultUnknown",
    "ToolUseUnanswered",
    "TrailingReasoning",
    "in_a",
    "item_kind",
    "one_of",
    "validate_responses",
]

SYSTEM_ROLES = frozenset({"system", "developer"})
ROLES = SYSTEM_ROLES | {"user", "assistant"}
CALL_TYPES = frozenset({"function_call", "custom_tool_call"})
OUTPUT_TYPES = {
    "function_call_output": "function_call",
    "custom_tool_call_output": "custom_tool_call",
}
"""Output item type -> the call item type it answers."""
HOSTED_TYPES = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "computer_call",
        "computer_call_output",
        "code_interpreter_call",
        "image_generation_call",
        "local_shell_call",
        "local_shell_call_output",
        "mcp_list_tools",
        "mcp_call",
        "mcp_approval_request",
        "mcp_approval_response",
    }
)
"""Items of the provider's hosted tools: its own state, carried through unchanged."""
CARRIED_TYPES = frozenset({"reasoning", "compaction", *HOSTED_TYPES})
ITEM_TYPES = frozenset({"message", *CALL_TYPES, *OUTPUT_TYPES, *CARRIED_TYPES})
"""The item types windowkeeper converts or carries (the Responses API has more)."""
TRAILING_REASONING = "trailing-reasoning"
USER_PARTS = frozenset({"input_text", "input_image", "input_file"})
ASSISTANT_PARTS = frozenset({"output_text", "refusal"})

# Stages within one item, in reporting order.
SHAPE, CALL_ID, PAIRING = range(3)

Call = tuple[str, int, str]
"""A call item as the walk remembers it: (type, index, path)."""


def one_of(value: Any, names: Collection[str]) -> bool:
    """Whether ``value`` is one of ``names`` (False for values that cannot be, lists included)."""
    return isinstance(value, str) and value in names


def in_a(role: Any) -> str:
    """``a user message``, ``an assistant message``: where a part stands, for the messages."""
    return f"an {role} message" if role == "assistant" else f"a {role} message"


def _declared_type(item: dict[str, Any]) -> Any:
    """The ``type`` of an item dict (``message`` for an easy input message without one)."""
    kind = item.get("type")
    if kind is None and "type" not in item and "role" in item:
        return "message"
    return kind


def item_kind(item: Any) -> str | None:
    """The type of ``item`` when it is a dict of a type windowkeeper converts, else None."""
    if not isinstance(item, dict):
        return None
    kind = _declared_type(item)
    return str(kind) if one_of(kind, ITEM_TYPES) else None


class InputItem:
    """One input item, with what came before it that the rules need.

    ``kind`` is :func:`item_kind`'s answer. For a call or an output with a non-empty string
    ``call_id``, ``call_id`` is that id, ``call`` the first call item with it before this one (or
    None) and ``answered`` whether an output before this one answered that call; otherwise they
    are None, None and False.
    """

    __slots__ = ("answered", "answers", "call", "call_id", "index", "item", "kind", "path")

    # One InputItem per item: positional arguments keep the walk cheap.
    def __init__(  # noqa: PLR0917
        self,
        index: int,
        path: str,
        item: Any,
        kind: str | None,
        call_id: str | None = None,
        call: Call | None = None,
        answered: bool = False,
    ) -> None:
        self.index = index
        self.path = path
        self.item = item
        self.kind = kind
        self.call_id = call_id
        self.call = call
        self.answered = answered
        # Whether this item is an output that answers its call (of its type, the first time).
        self.answers = (
            call is not None
            and kind in OUTPUT_TYPES
            and call[0] == OUTPUT_TYPES[str(kind)]
            and not answered
        )


@dataclass(frozen=True, slots=True)
class ResponsesEnding:
    """The input as a whole: its name, what was passed, its calls and the ids answered."""

    name: str
    items: Any
    calls: dict[str, Call]
    answered: frozenset[str]


def _is_request(items: Any) -> bool:
    return isinstance(items, Sequence) and not isinstance(items, str | bytes)


class Items:
    """The walk over a Responses input list: each item as an :class:`InputItem`, then the end."""

    __slots__ = ("_answered", "_calls", "items", "name")

    def __init__(self, items: Any, name: str = "input") -> None:
        self.items = items
        self.name = name
        self._calls: dict[str, Call] = {}  # call_id -> its first call item
        self._answered: set[str] = set()

    def end(self) -> ResponsesEnding:
        """The input as a whole, with every call and the ids an output answered."""
        return ResponsesEnding(self.name, self.items, self._calls, frozenset(self._answered))

    def __iter__(self) -> Iterator[InputItem]:
        """Each item in context, in order (nothing when the input is not a list)."""
        if not _is_request(self.items):
            return
        calls: dict[str, Call] = {}
        answered: set[str] = set()
        self._calls, self._answered = calls, answered
        for index, item in enumerate(self.items):
            path = f"{self.name}[{index}]"
            kind = item_kind(item)
            if kind not in CALL_TYPES and kind not in OUTPUT_TYPES:
                yield InputItem(index, path, item, kind)
                continue
            call_id = item.get("call_id")
            if not isinstance(call_id, str) or not call_id:
                yield InputItem(index, path, item, kind)
                continue
            entry = InputItem(
                index, path, item, kind, call_id, calls.get(call_id), call_id in answered
            )
            yield entry
            if kind in CALL_TYPES:
                calls.setdefault(call_id, (str(kind), index, path))
            elif entry.answers:
                answered.add(call_id)


# -- the rules ---------------------------------------------------------------------------------


class Malformed:
    """Items are of the types windowkeeper converts, with the shape the API takes."""

    name = MALFORMED

    def check(self, entry: InputItem, /) -> Sequence[Found]:
        """An unknown item type or role, content or output that is not a string or a list of
        parts of its side, call fields that are not strings, reasoning without a ``summary``
        list, compaction without an ``encrypted_content`` string, a call or output without a
        ``call_id`` string."""
        here: list[Violation] = []
        _check_item(entry.item, entry.kind, entry.path, here)
        unnamed = entry.call_id is None and (entry.kind in CALL_TYPES or entry.kind in OUTPUT_TYPES)
        if not here and not unnamed:
            return NOTHING
        found: list[Found] = [(entry.index, SHAPE, 0, violation) for violation in here]
        if unnamed:
            violation = Violation(f"{entry.path}.call_id", MALFORMED, "no call_id string")
            found.append((entry.index, CALL_ID, 0, violation))
        return found

    def finish(self, end: ResponsesEnding, /) -> Sequence[Found]:
        """An input that is not a list of items."""
        if _is_request(end.items):
            return NOTHING
        return ((-1, SHAPE, 0, Violation(end.name, MALFORMED, "not a list of input items")),)


class DuplicateToolUseId:
    """No two calls share a ``call_id``."""

    name = DUPLICATE_TOOL_USE_ID

    def check(self, entry: InputItem, /) -> Sequence[Found]:
        """A call whose ``call_id`` an earlier call has."""
        if entry.call is None or entry.kind not in CALL_TYPES:
            return NOTHING
        detail = f"call_id {entry.call_id!r} is already used at {entry.call[2]}"
        violation = Violation(f"{entry.path}.call_id", DUPLICATE_TOOL_USE_ID, detail)
        return ((entry.index, CALL_ID, 0, violation),)

    def finish(self, end: ResponsesEnding, /) -> Sequence[Found]:
        """Nothing: this rule judges items one by one."""
        return NOTHING


class ToolResultUnknown:
    """Each output answers a call of its type that stands before it, and only once."""

    name = TOOL_RESULT_UNKNOWN

    def check(self, entry: InputItem, /) -> Sequence[Found]:
        """An output with a ``call_id`` that answers no call: none before it, one of the other
        type, or one already answered."""
        if entry.call_id is None or entry.kind not in OUTPUT_TYPES or entry.answers:
            return NOTHING
        call_id, call = entry.call_id, entry.call
        wanted = OUTPUT_TYPES[str(entry.kind)]
        if call is None:
            detail = f"no call with call_id {call_id!r} before it"
        elif call[0] != wanted:
            detail = f"{call_id!r} is a {call[0]}, not a {wanted}"
        else:
            detail = f"{call_id!r} is answered a second time"
        return ((entry.index, CALL_ID, 0, Violation(entry.path, TOOL_RESULT_UNKNOWN, detail)),)

    def finish(self, end: ResponsesEnding, /) -> Sequence[Found]:
        """Nothing: this rule judges items one by one."""
        return NOTHING


class ToolUseUnanswered:
    """Every call is answered by an output of its type somewhere after it."""

    name = TOOL_USE_UNANSWERED

    def check(self, entry: InputItem, /) -> Sequence[Found]:
        """Nothing: only the whole input tells (reported at each call, by :meth:`finish`)."""
        return NOTHING

    def finish(self, end: ResponsesEnding, /) -> Sequence[Found]:
        """Each call that no output answers, at the call."""
        return [
            (
                at,
                PAIRING,
                0,
                Violation(call_path, TOOL_USE_UNANSWERED, f"no {kind}_output answers {call_id!r}"),
            )
            for call_id, (kind, at, call_path) in end.calls.items()
            if call_id not in end.answered
        ]


def _check_item(item: Any, kind: str | None, path: str, here: list[Violation]) -> None:
    """What is wrong with the shape of ``item`` (of type ``kind``), added to ``here``."""
    if not isinstance(item, dict):
        here.append(Violation(path, MALFORMED, "not an input item"))
        return
    if kind is None:
        detail = f"item type {_declared_type(item)!r} is not supported"
        here.append(Violation(f"{path}.type", MALFORMED, detail))
        return
    if kind == "message":
        _check_message(item, path, here)
    elif kind in HOSTED_TYPES:
        return  # the provider's own items: their shape is its business
    elif kind in CARRIED_TYPES:
        key, expected = ("summary", list) if kind == "reasoning" else ("encrypted_content", str)
        if not isinstance(item.get(key), expected):
            detail = f"a {kind} item needs a {expected.__name__} {key}"
            here.append(Violation(f"{path}.{key}", MALFORMED, detail))
    elif kind in OUTPUT_TYPES:
        output = item.get("output")
        if isinstance(output, list):
            _check_parts(output, USER_PARTS, f"{path}.output", "a tool output", here)
        elif not isinstance(output, str):
            detail = "output is not a string or a list of parts"
            here.append(Violation(f"{path}.output", MALFORMED, detail))
    else:
        for key in ("name", "arguments") if kind == "function_call" else ("name", "input"):
            if not isinstance(item.get(key), str):
                here.append(Violation(f"{path}.{key}", MALFORMED, f"a {kind} needs a string {key}"))


def _check_message(item: dict[str, Any], path: str, here: list[Violation]) -> None:
    role = item.get("role")
    if not one_of(role, ROLES):
        detail = f"role {role!r} is not one of {', '.join(sorted(ROLES))}"
        here.append(Violation(f"{path}.role", MALFORMED, detail))
        return
    content = item.get("content")
    if isinstance(content, list):
        allowed = ASSISTANT_PARTS if role == "assistant" else USER_PARTS
        _check_parts(content, allowed, f"{path}.content", in_a(role), here)
    elif not isinstance(content, str):
        detail = "content is not a string or a list of parts"
        here.append(Violation(f"{path}.content", MALFORMED, detail))


def _check_parts(
    parts: list[Any], allowed: frozenset[str], path: str, where: str, here: list[Violation]
) -> None:
    for position, part in enumerate(parts):
        kind = part.get("type") if isinstance(part, dict) else None
        if not one_of(kind, allowed):
            detail = f"a {kind!r} part cannot be in {where}"
            here.append(Violation(f"{path}[{position}]", MALFORMED, detail))


class TrailingReasoning:
    """A reasoning item is followed by the item it was produced with: never last."""

    name = TRAILING_REASONING

    def check(self, entry: InputItem, /) -> Sequence[Found]:
        """Nothing: only the whole input tells."""
        return NOTHING

    def finish(self, end: ResponsesEnding, /) -> Sequence[Found]:
        """The reasoning items at the end of the input, with nothing after them."""
        if not _is_request(end.items):
            return NOTHING
        found: list[Found] = []
        index = len(end.items) - 1
        while index >= 0 and item_kind(end.items[index]) == "reasoning":
            path = f"{end.name}[{index}]"
            detail = "a reasoning item with nothing after it (the API refuses it)"
            found.append((index, PAIRING, 0, Violation(path, TRAILING_REASONING, detail)))
            index -= 1
        return found[::-1]


RULES: tuple[Rule[InputItem, ResponsesEnding], ...] = (
    Malformed(),
    DuplicateToolUseId(),
    ToolResultUnknown(),
    ToolUseUnanswered(),
    TrailingReasoning(),
)
"""Every Responses rule that windowkeeper checks, in reporting order within an item."""

_CHECKS = tuple(rule.check for rule in RULES)
_FINISHES = tuple(rule.finish for rule in RULES)


def validate_responses(items: Sequence[MessageInput], name: str = "input") -> list[Violation]:
    """Every violation of the Responses API's input rules in ``items``, in item order.

    Rules (the API pairs calls and outputs by ``call_id``, not by position):

    - every ``function_call`` / ``custom_tool_call`` is answered by exactly one output item of
      its type (``function_call_output`` / ``custom_tool_call_output``) with its ``call_id``,
      somewhere after it; other items may stand between (``tool-use-unanswered``, at the call);
    - every output answers a call of its type that stands before it, and only once
      (``tool-result-unknown``);
    - no two calls share a ``call_id`` (``duplicate-tool-use-id``);
    - items are of the types windowkeeper converts (:data:`ITEM_TYPES`), messages have a known
      role and string or list content, parts are of the message's side (``input_text``,
      ``input_image``, ``input_file`` for user, system and developer messages and in outputs;
      ``output_text``, ``refusal`` for assistant ones), call ids, names, arguments and custom
      inputs are strings, reasoning items have a ``summary`` list and compaction items an
      ``encrypted_content`` string (``malformed``); items of hosted tools
      (:data:`HOSTED_TYPES`: web and file search, computer use, MCP, ...) are not judged;
    - a reasoning item is not the last item (``trailing-reasoning``): it is sent with the item
      it was produced with, and the API refuses one with nothing after it.

    Not checked: what needs the server's state (items given by ``id`` when ``store`` is false,
    a reasoning item sent without the item it was produced with). Uses the rule names of
    :func:`~windowkeeper.validate_messages`. Never raises for bad input.

    The Anthropic form is stricter: there a tool_result must be in the message right after its
    tool_use. The Anthropic form of an input that passes has no pairing violation when each
    output stands among the outputs right after its call's run of model items; an output
    further away keeps its place (the conversion never moves items), so there the call shows
    as unanswered.
    """
    return validate(Items(items, name), _CHECKS, _FINISHES)
