"""Anthropic messages back to OpenAI Chat Completions messages (see formats.openai for the notes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from .._errors import MalformedMessageError
from ..core._messages import Message, MessageInput, SystemPrompt, check_history
from ._extras import extras as _extras
from ._openai_notes import (
    ARGUMENTS_NOTE,
    NOTE_KEYS,
    SYSTEM_AFTER_NOTE,
    SYSTEM_NOTE,
    _dump,
    _parse_arguments,
)

__all__ = ["from_anthropic"]


def from_anthropic(
    messages: Sequence[MessageInput],
    *,
    system: SystemPrompt | None = None,
    name: str = "messages",
) -> list[Message]:
    """OpenAI Chat Completions messages for Anthropic-shaped ``messages``; nothing is modified.

    A user message's tool_result blocks become tool messages (in block order), followed by the
    noted system messages and a user message with the other blocks, if any. An assistant
    message's tool_use blocks become its ``tool_calls``. ``system`` (Anthropic's system
    parameter: a string or text blocks) becomes a first system message; leave it None for
    messages from :func:`to_anthropic`, whose system messages travel with them as notes.
    """
    check_history(messages, name)
    checked = cast("Sequence[Message]", messages)  # check_history refused any message not a dict
    output: list[Message] = []
    if system is not None:
        content = system if isinstance(system, str) else [dict(block) for block in system]
        output.append({"role": "system", "content": content})
    for index, message in enumerate(checked):
        path = f"{name}[{index}]"
        extras = _extras(message, {"role", "content", *NOTE_KEYS}, path, ())
        content = message["content"]
        if message["role"] == "assistant":
            output.extend(_notes(message, SYSTEM_NOTE, path))
            output.append(_openai_assistant(content, extras, path))
        elif isinstance(content, str):
            output.extend(_notes(message, SYSTEM_NOTE, path))
            output.append({**extras, "role": "user", "content": content})
        else:
            output.extend(_openai_user(message, content, extras, path))
        output.extend(_notes(message, SYSTEM_AFTER_NOTE, path))
    return output


def _notes(message: Message, key: str, path: str) -> list[Message]:
    notes = message.get(key)
    if notes is None:
        return []
    if not isinstance(notes, list) or not all(isinstance(note, dict) for note in notes):
        raise MalformedMessageError(f"{path}.{key}", "expected a list of OpenAI message dicts")
    return [dict(note) for note in notes]


def _openai_user(
    message: Message, content: list[Any], extras: dict[str, Any], path: str
) -> list[Message]:
    results = []
    rest = []
    for position, block in enumerate(content):
        block_path = f"{path}.content[{position}]"
        if block["type"] == "tool_result":
            results.append((block, block_path))
        elif block["type"] == "tool_use":
            raise MalformedMessageError(block_path, "a tool_use block in a user message")
        else:
            rest.append(_part(block, block_path))
    output = [
        # The keys of a message of tool_results only go onto each of its tool messages.
        _tool_message(block, {} if rest else extras, block_path)
        for block, block_path in results
    ]
    output.extend(_notes(message, SYSTEM_NOTE, path))
    if rest or not results:
        output.append({**extras, "role": "user", "content": _collapsed(rest) if results else rest})
    return output


def _tool_message(block: Message, extras: dict[str, Any], path: str) -> Message:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str):
        raise MalformedMessageError(f"{path}.tool_use_id", "expected a string")
    own = _extras(block, {"type", "tool_use_id", "content"}, path, {"role", "tool_call_id"})
    content = block.get("content", "")
    if isinstance(content, list):
        content = [
            _part(item, f"{path}.content[{position}]") for position, item in enumerate(content)
        ]
    elif not isinstance(content, str):
        raise MalformedMessageError(f"{path}.content", "expected a string or a list of blocks")
    return {**extras, **own, "role": "tool", "tool_call_id": call_id, "content": content}


def _openai_assistant(content: Any, extras: dict[str, Any], path: str) -> Message:
    if isinstance(content, str):
        return {**extras, "role": "assistant", "content": content}
    parts = []
    calls = []
    for position, block in enumerate(content):
        block_path = f"{path}.content[{position}]"
        if block["type"] == "tool_use":
            calls.append(_tool_call(block, block_path))
        elif block["type"] == "tool_result":
            raise MalformedMessageError(block_path, "a tool_result block in an assistant message")
        else:
            parts.append(_part(block, block_path))
    output = {
        **extras,
        "role": "assistant",
        "content": _collapsed(parts) if calls else parts or None,
    }
    if calls:
        output["tool_calls"] = calls
    return output


def _collapsed(parts: list[Any]) -> Any:
    """None for no parts, the text of a single plain text part, else the parts."""
    if not parts:
        return None
    if len(parts) == 1 and set(parts[0]) == {"type", "text"} and parts[0]["type"] == "text":
        return parts[0]["text"]
    return parts


def _tool_call(block: Message, path: str) -> Message:
    call_id = block.get("id")
    tool_name = block.get("name")
    tool_input = block.get("input")
    if not isinstance(call_id, str) or not isinstance(tool_name, str):
        raise MalformedMessageError(path, "a tool_use block needs a string id and name")
    if not isinstance(tool_input, dict):
        raise MalformedMessageError(f"{path}.input", "expected an object")
    try:
        arguments = _dump(tool_input)
    except (TypeError, ValueError) as error:
        raise MalformedMessageError(f"{path}.input", f"not JSON: {error}") from None
    raw = block.get(ARGUMENTS_NOTE)
    if isinstance(raw, str) and _dump(_parse_arguments(raw)) == arguments:
        arguments = raw
    extras = _extras(block, {"type", "id", "name", "input", ARGUMENTS_NOTE}, path, {"function"})
    return {
        **extras,
        "id": call_id,
        "type": "function",
        "function": {"name": tool_name, "arguments": arguments},
    }


def _part(block: Message, path: str) -> Message:
    if block["type"] != "image":
        return dict(block)
    source = block.get("source")
    kind = source.get("type") if isinstance(source, dict) else None
    if kind == "base64" and isinstance(source, dict):
        media_type, data = source.get("media_type"), source.get("data")
        if not isinstance(media_type, str) or not isinstance(data, str):
            raise MalformedMessageError(f"{path}.source", "needs string media_type and data")
        url = f"data:{media_type};base64,{data}"
        image = _extras(source, {"type", "media_type", "data"}, f"{path}.source", {"url"})
    elif kind == "url" and isinstance(source, dict) and isinstance(source.get("url"), str):
        url = source["url"]
        image = _extras(source, {"type", "url"}, f"{path}.source", ())
    else:
        raise MalformedMessageError(
            f"{path}.source", f"an image source of type {kind!r} has no OpenAI form"
        )
    extras = _extras(block, {"type", "source"}, path, {"image_url"})
    return {**extras, "type": "image_url", "image_url": {"url": url, **image}}
