"""The Responses API's wire shape: what :func:`responses_wire` keeps of an input list (see formats.responses)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core._messages import Message, MessageInput
from ..rules._responses import ASSISTANT_PARTS, HOSTED_TYPES, OUTPUT_TYPES, USER_PARTS
from ..rules._responses import in_a as _in_a
from ..rules._responses import one_of as _one_of
from ._wire import EMPTY_MESSAGE_NOTICE, Repair

__all__ = [
    "RESPONSES_ITEM_KEYS",
    "RESPONSES_MESSAGE_KEYS",
    "RESPONSES_PART_KEYS",
    "responses_item",
    "responses_wire",
    "without_trailing_reasoning",
]


_INPUT_MESSAGE_KEYS = frozenset({"type", "role", "content", "status", "phase"})
RESPONSES_MESSAGE_KEYS: dict[str, frozenset[str]] = {
    "user": _INPUT_MESSAGE_KEYS,
    "system": _INPUT_MESSAGE_KEYS,
    "developer": _INPUT_MESSAGE_KEYS,
    "assistant": frozenset({"type", "role", "content", "id", "status", "phase"}),
}
"""Message role -> the keys a Responses input message of that role may have (the SDK's
``EasyInputMessageParam``, ``Message`` and ``ResponseOutputMessageParam``)."""


RESPONSES_ITEM_KEYS: dict[str, frozenset[str]] = {
    "function_call": frozenset(
        {"type", "call_id", "name", "arguments", "id", "status", "namespace", "caller", "async"}
    ),
    "function_call_output": frozenset(
        {"type", "call_id", "output", "id", "status", "caller", "name", "namespace"}
    ),
    "custom_tool_call": frozenset(
        {"type", "call_id", "name", "input", "id", "caller", "namespace", "async"}
    ),
    "custom_tool_call_output": frozenset({"type", "call_id", "output", "id", "caller"}),
    "reasoning": frozenset({"type", "id", "summary", "content", "encrypted_content", "status"}),
    "compaction": frozenset({"type", "encrypted_content", "id"}),
}
"""Item type (other than ``message``) -> its keys (checked against the SDK in the tests)."""


_CACHE = "prompt_cache_breakpoint"
RESPONSES_PART_KEYS: dict[str, frozenset[str]] = {
    "input_text": frozenset({"type", "text", _CACHE}),
    "input_image": frozenset({"type", "image_url", "file_id", "detail", _CACHE}),
    "input_file": frozenset(
        {"type", "file_data", "file_id", "file_url", "filename", "detail", _CACHE}
    ),
    "output_text": frozenset({"type", "text", "annotations", "logprobs"}),
    "refusal": frozenset({"type", "refusal"}),
}
"""Content part type -> its keys (message content, and the parts of a tool output)."""


_REASONING_ENTRY_KEYS = frozenset({"type", "text"})


def _only(value: dict[str, Any], keys: frozenset[str]) -> dict[str, Any]:
    return {key: item for key, item in value.items() if key in keys and item is not None}


def _wire_parts(
    parts: list[Any], allowed: frozenset[str], path: str, where: str, repairs: list[Repair]
) -> list[Message]:
    shaped = []
    for position, part in enumerate(parts):
        kind = part.get("type") if isinstance(part, dict) else None
        if not _one_of(kind, allowed):
            repairs.append(
                Repair(f"{path}[{position}]", f"dropped: a {kind!r} part cannot be in {where}")
            )
            continue
        assert isinstance(part, dict)
        shaped.append(_only(part, RESPONSES_PART_KEYS[str(kind)]))
    return shaped


def responses_item(item: MessageInput, path: str, repairs: list[Repair]) -> Message | None:
    """``item`` as the Responses API takes it (a new dict), or None when it is dropped.

    The item keeps the keys its type (a message: its role) defines, each part of its content or
    output those of its type, each reasoning summary and content entry ``type`` and ``text``;
    keys whose value is None are left out. An item of another type, and a part of a type its
    message or output does not take, is dropped; a content or output list emptied that way gets
    :data:`~windowkeeper.formats._wire.EMPTY_MESSAGE_NOTICE` instead. Each change is added to ``repairs``.
    """
    if not isinstance(item, dict):
        repairs.append(Repair(path, "dropped: not an input item"))
        return None
    kind = item.get("type")
    if kind is None and "type" not in item and "role" in item:
        kind = "message"
    if kind == "message":
        role = item.get("role")
        keys = RESPONSES_MESSAGE_KEYS.get(role) if isinstance(role, str) else None
        if keys is None:
            repairs.append(Repair(path, f"dropped: a message with role {role!r}"))
            return None
        shaped = _only(item, keys)
        content = shaped.get("content")
        if isinstance(content, list):
            allowed = ASSISTANT_PARTS if role == "assistant" else USER_PARTS
            parts = _wire_parts(content, allowed, f"{path}.content", _in_a(role), repairs)
            if content and not parts:
                repairs.append(Repair(f"{path}.content", "empty: replaced by a notice"))
                notice = "output_text" if role == "assistant" else "input_text"
                parts = [{"type": notice, "text": EMPTY_MESSAGE_NOTICE}]
            shaped["content"] = parts
        return shaped
    if _one_of(kind, HOSTED_TYPES):
        return dict(item)  # a hosted tool's item: the provider's own state, sent as it came
    keys = RESPONSES_ITEM_KEYS.get(kind) if isinstance(kind, str) else None
    if keys is None:
        repairs.append(Repair(path, f"dropped: item type {kind!r} is not supported"))
        return None
    shaped = _only(item, keys)
    output = shaped.get("output")
    if kind in OUTPUT_TYPES and isinstance(output, list):
        parts = _wire_parts(output, USER_PARTS, f"{path}.output", "a tool output", repairs)
        if output and not parts:
            repairs.append(Repair(f"{path}.output", "empty: replaced by a notice"))
            shaped["output"] = EMPTY_MESSAGE_NOTICE
        else:
            shaped["output"] = parts
    if kind == "reasoning":
        for key in ("summary", "content"):
            entries = shaped.get(key)
            if isinstance(entries, list):
                shaped[key] = [
                    _only(entry, _REASONING_ENTRY_KEYS) if isinstance(entry, dict) else entry
                    for entry in entries
                ]
    return shaped


def responses_wire(
    items: Sequence[MessageInput], name: str = "input"
) -> tuple[list[Message], list[Repair]]:
    """``items`` in the Responses API's input shape (see :func:`responses_item`), and the repairs."""
    repairs: list[Repair] = []
    shaped = []
    for index, item in enumerate(items):
        kept = responses_item(item, f"{name}[{index}]", repairs)
        if kept is not None:
            shaped.append(kept)
    sent, dropped = without_trailing_reasoning(shaped, name)
    return sent, [*repairs, *dropped]


def without_trailing_reasoning(
    items: list[Message], name: str = "input"
) -> tuple[list[Message], tuple[Repair, ...]]:
    """``items`` without the reasoning items at their end, which the API refuses (nothing
    follows them to say what they were produced with), and a repair for each; ``items`` itself
    when there is none."""
    end = len(items)
    while end and items[end - 1].get("type") == "reasoning":
        end -= 1
    if end == len(items):
        return items, ()
    dropped = tuple(
        Repair(f"{name}[{index}]", "dropped: a reasoning item with nothing after it")
        for index in range(end, len(items))
    )
    return items[:end], dropped
