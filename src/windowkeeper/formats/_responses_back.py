"""Anthropic messages back to OpenAI Responses input items (see formats.responses for the notes)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, cast

from .._errors import MalformedMessageError
from ..core._messages import Message, MessageInput, SystemPrompt, check_history
from ._extras import extras as _extras
from ._responses_in import _dump, _parse_arguments, _text_of
from ._responses_notes import (
    AFTER_NOTE,
    ARGUMENTS_NOTE,
    BEFORE_NOTE,
    CUSTOM_NOTE,
    ITEM_ID_NOTE,
    MESSAGE_NOTE,
    NOTE_KEYS,
    STRING_NOTE,
)

__all__ = ["from_anthropic"]


def from_anthropic(
    messages: Sequence[MessageInput],
    *,
    system: SystemPrompt | None = None,
    name: str = "messages",
) -> list[Message]:
    """OpenAI Responses input items for Anthropic-shaped ``messages``; nothing is modified.

    The notes of :func:`to_anthropic` are used where present. Without them: an assistant
    message's string content becomes ``{"role": "assistant", "content": <str>}``, each run of its
    non-tool_use blocks one ``{"type": "message", "role": "assistant", "content": [...]}`` item
    (text blocks as ``output_text`` parts, other blocks as they are) and each tool_use block a
    ``function_call`` (``arguments`` printed compactly). A user message's tool_result blocks
    become output items (in block order), followed by a user message with its other blocks
    (text as ``input_text``, images as ``input_image``), if any. Keys of a message beside
    ``role`` and ``content`` go onto that user message, or, for a message of tool_results only
    and for an assistant message, onto each item it becomes. ``system`` (Anthropic's system
    parameter: a string or text blocks) becomes a first system message; leave it None for
    messages from :func:`to_anthropic`, whose system messages travel with them as notes.
    """
    check_history(messages, name)
    checked = cast("Sequence[Message]", messages)  # check_history refused any message not a dict
    output: list[Message] = []
    if system is not None:
        if isinstance(system, str):
            output.append({"role": "system", "content": system})
        else:
            parts = [_user_part_back(block, f"system[{i}]") for i, block in enumerate(system)]
            output.append({"role": "system", "content": parts})
    custom_ids: set[str] = set()
    for index, message in enumerate(checked):
        path = f"{name}[{index}]"
        extras = _extras(message, {"role", "content", *NOTE_KEYS}, path, ())
        output.extend(_notes(message, BEFORE_NOTE, path))
        if message["role"] == "assistant":
            output.extend(_assistant_items(message["content"], extras, path, custom_ids))
        else:
            output.extend(_user_items(message["content"], extras, path, custom_ids))
        output.extend(_notes(message, AFTER_NOTE, path))
    return output


def _notes(holder: Message, key: str, path: str) -> list[Message]:
    notes = holder.get(key)
    if notes is None:
        return []
    if not isinstance(notes, list) or not all(isinstance(note, dict) for note in notes):
        raise MalformedMessageError(f"{path}.{key}", "expected a list of input item dicts")
    return [dict(note) for note in notes]


def _strip(block: Message, known: Collection[str], path: str, reserved: Collection[str]) -> Message:
    return _extras(block, {*known, *NOTE_KEYS}, path, reserved)


def _user_items(
    content: Any, extras: dict[str, Any], path: str, custom_ids: set[str]
) -> list[Message]:
    if isinstance(content, str):
        return [{**extras, "role": "user", "content": content}]
    results = []
    rest = []
    for position, block in enumerate(content):
        where = f"{path}.content[{position}]"
        if block["type"] == "tool_result":
            results.append((block, where))
        elif block["type"] == "tool_use":
            raise MalformedMessageError(where, "a tool_use block in a user message")
        else:
            rest.append((block, where))
    items: list[Message] = []
    for block, where in results:
        items.extend(_notes(block, BEFORE_NOTE, where))
        items.append(_output_item(block, {} if rest else extras, where, custom_ids))
    if rest or not results:
        for block, where in rest:
            items.extend(_notes(block, BEFORE_NOTE, where))
        first = rest[0][0] if len(rest) == 1 else None
        if first is not None and first.get(STRING_NOTE) is True and first["type"] == "text":
            user_content: Any = _text_of(first, rest[0][1])
        else:
            user_content = [_user_part_back(block, where) for block, where in rest]
        items.append({**extras, "role": "user", "content": user_content})
    return items


def _output_item(
    block: Message, extras: dict[str, Any], path: str, custom_ids: set[str]
) -> Message:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str):
        raise MalformedMessageError(f"{path}.tool_use_id", "expected a string")
    own = _strip(block, {"type", "tool_use_id", "content"}, path, {"call_id", "output"})
    content = block.get("content", "")
    if isinstance(content, list):
        content = [
            _user_part_back(item, f"{path}.content[{position}]")
            for position, item in enumerate(content)
        ]
    elif not isinstance(content, str):
        raise MalformedMessageError(f"{path}.content", "expected a string or a list of blocks")
    note = block.get(CUSTOM_NOTE)
    custom = note if isinstance(note, bool) else call_id in custom_ids
    kind = "custom_tool_call_output" if custom else "function_call_output"
    return {**extras, **own, "type": kind, "call_id": call_id, "output": content}


def _user_part_back(block: Any, path: str) -> Message:
    """The part of a user message or of a tool output for an Anthropic block."""
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        raise MalformedMessageError(path, "expected a block with a string 'type'")
    kind = block["type"]
    if kind == "text":
        text = _text_of(block, path)
        return {**_strip(block, {"type", "text"}, path, ()), "type": "input_text", "text": text}
    if kind == "image":
        url = _image_url(block, path)
        extras = _strip(block, {"type", "source"}, path, {"image_url"})
        return {**extras, "type": "input_image", "image_url": url}
    return _strip(block, (), path, ())


def _image_url(block: Message, path: str) -> str:
    source = block.get("source")
    kind = source.get("type") if isinstance(source, dict) else None
    if kind == "base64" and isinstance(source, dict):
        media_type, data = source.get("media_type"), source.get("data")
        if not isinstance(media_type, str) or not isinstance(data, str):
            raise MalformedMessageError(f"{path}.source", "needs string media_type and data")
        return f"data:{media_type};base64,{data}"
    if kind == "url" and isinstance(source, dict) and isinstance(source.get("url"), str):
        return str(source["url"])
    raise MalformedMessageError(
        f"{path}.source", f"an image source of type {kind!r} has no Responses form"
    )


def _assistant_items(
    content: Any, extras: dict[str, Any], path: str, custom_ids: set[str]
) -> list[Message]:
    if isinstance(content, str):
        return [{**extras, "role": "assistant", "content": content}]
    items: list[Message] = []
    current: Message | None = None  # the message item note-free blocks join
    for position, block in enumerate(content):
        where = f"{path}.content[{position}]"
        before = _notes(block, BEFORE_NOTE, where)
        if before:
            items.extend(before)
            current = None
        kind = block["type"]
        if kind == "tool_use":
            current = None
            items.append({**extras, **_call_item(block, where, custom_ids)})
            continue
        if kind == "tool_result":
            raise MalformedMessageError(where, "a tool_result block in an assistant message")
        part = _assistant_part_back(block, where)
        envelope = block.get(MESSAGE_NOTE)
        string = block.get(STRING_NOTE) is True and kind == "text"
        if envelope is not None and not isinstance(envelope, dict):
            raise MalformedMessageError(f"{where}.{MESSAGE_NOTE}", "expected an item dict")
        if string:
            head = {"role": "assistant"} if envelope is None else envelope
            items.append({**extras, **head, "content": part["text"]})
            current = None
        elif envelope is not None:
            current = {**extras, **envelope, "content": [part]}
            items.append(current)
        elif current is not None:
            current["content"].append(part)
        else:
            current = {**extras, "type": "message", "role": "assistant", "content": [part]}
            items.append(current)
    return items


def _assistant_part_back(block: Message, path: str) -> Message:
    if block["type"] == "text":
        text = _text_of(block, path)
        return {**_strip(block, {"type", "text"}, path, ()), "type": "output_text", "text": text}
    return _strip(block, (), path, ())


def _call_item(block: Message, path: str, custom_ids: set[str]) -> Message:
    call_id = block.get("id")
    tool_name = block.get("name")
    tool_input = block.get("input")
    if not isinstance(call_id, str) or not isinstance(tool_name, str):
        raise MalformedMessageError(path, "a tool_use block needs a string id and name")
    if not isinstance(tool_input, dict):
        raise MalformedMessageError(f"{path}.input", "expected an object")
    extras = _strip(block, {"type", "id", "name", "input"}, path, {"call_id", "arguments"})
    if block.get(CUSTOM_NOTE) is True:
        custom_ids.add(call_id)
        text = tool_input.get("input")
        if set(tool_input) != {"input"} or not isinstance(text, str):
            text = _printed(tool_input, path)
        item = {**extras, "type": "custom_tool_call", "call_id": call_id, "name": tool_name}
        item["input"] = text
    else:
        arguments = _printed(tool_input, path)
        raw = block.get(ARGUMENTS_NOTE)
        if isinstance(raw, str) and _printed(_parse_arguments(raw), path) == arguments:
            arguments = raw
        item = {
            **extras,
            "type": "function_call",
            "call_id": call_id,
            "name": tool_name,
            "arguments": arguments,
        }
    if ITEM_ID_NOTE in block:
        item["id"] = block[ITEM_ID_NOTE]
    return item


def _printed(value: Any, path: str) -> str:
    try:
        return _dump(value)
    except (TypeError, ValueError, RecursionError) as error:
        raise MalformedMessageError(f"{path}.input", f"not JSON: {error}") from None
