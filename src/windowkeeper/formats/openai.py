"""OpenAI Chat Completions messages to the Anthropic shape windowkeeper works on, and back.

::

    OpenAI                                   Anthropic
    system / developer message               AnthropicConversation.system (joined), and a note
    user: str | [text, image_url, ...]       user: str | [text, image, ...]
    assistant: content + tool_calls          assistant: [text ..., tool_use ...]
    tool, tool, ... (+ the next user)        ONE user message: [tool_result, tool_result, ...]

Supported content parts: ``text`` (kept as it is), ``image_url`` (a ``data:<type>;base64,<data>``
URL becomes a base64 image source, any other URL a ``url`` source; keys beside ``url``, such as
``detail``, stay on the source). Other part types pass through untouched, both ways; the
Anthropic-only types ``image``, ``tool_use`` and ``tool_result`` are refused as OpenAI parts.

Lossless notes. What the Anthropic shape has no place for travels on the Anthropic dicts, under
the keys in :data:`NOTE_KEYS` (strip them before sending the result to the Anthropic API itself):

- ``openai_system`` on a message: the system and developer messages (copies) that stood just
  before the user or assistant message it holds; for a merged tool-results message, between
  its tool messages and its user message. Trailing ones are noted on the last message as
  ``openai_system_after``. Their text is also joined (``"\\n\\n"``, in order) into
  :attr:`AnthropicConversation.system`, ready for the Anthropic ``system`` parameter, wherever
  they stood: Anthropic has no system turn mid-conversation. A note leaves with its message
  when truncation hides that message.
- ``openai_arguments`` on a tool_use block: the raw ``arguments`` string when the parsed
  ``input`` does not print back to exactly it (other whitespace, duplicate keys, unparseable
  text or JSON that is not an object, whose ``input`` is then ``{}``). It is used on the way back
  as long as ``input`` was not changed.
- Unknown keys of a message, a part, a tool call or a tool message (``name``, ``refusal``,
  ``detail``, ...) are copied onto the dict it becomes, and back. A key that would collide with
  one the conversion writes raises :class:`~windowkeeper.MalformedMessageError`.

Canonical conversations, for which ``from_anthropic(to_anthropic(m).messages) == m``: lists of
message dicts, each with a ``role`` and a ``content`` key, in which

1. an assistant message with ``tool_calls``, and a user message that follows tool messages
   (with only system or developer messages between), never has as content a list of one plain
   ``{"type": "text", "text": ...}`` part: it comes back as the string, which is canonical;
2. an assistant message never has ``[]`` as content (``None`` means no content), nor ``""``
   beside ``tool_calls``;
3. every tool call is ``{"id": <non-empty str>, "type": "function", "function": {"name": <str>,
   "arguments": <str>}}``, plus any other keys beside ``function`` (``tool_calls`` that is
   ``None`` or ``[]`` travels as it is);
4. no system or developer message stands right before a tool message (the API rejects it; it
   would come back after the tool messages), and some message is not a system or developer one.

The reverse law ``to_anthropic(from_anthropic(a)).messages == a`` holds when each message
lists its tool_result blocks before its other blocks and its text before its tool_use blocks,
rule 1 holds for what is left of a user message after its tool_results and of an assistant
message beside its tool_use blocks, a user message of tool_results only has no other keys
(they go onto each tool message), every tool_result has a content, tool_use ids are non-empty,
and no image source has a media type containing ``;`` or ``,``.

Consecutive user messages, and consecutive assistant messages, stay separate messages (Anthropic
combines such turns itself; :func:`~windowkeeper.validate_messages` reports them).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from .._errors import MalformedMessageError
from ..core._messages import Message, MessageInput
from ..rules._openai import OPENAI_ROLES, SYSTEM_ROLES, validate_openai
from ..rules._openai import role_of as _role_of
from ._extras import extras as _extras
from ._openai_back import from_anthropic
from ._openai_notes import (
    ARGUMENTS_NOTE,
    NOTE_KEYS,
    SYSTEM_AFTER_NOTE,
    SYSTEM_NOTE,
    _dump,
    _parse_arguments,
)

__all__ = [
    "NOTE_KEYS",
    "AnthropicConversation",
    "TrackedConversation",
    "from_anthropic",
    "to_anthropic",
    "to_anthropic_tracked",
    "validate_openai",
]


_ANTHROPIC_ONLY_PARTS = frozenset({"image", "tool_use", "tool_result"})
_DATA_URL = re.compile(r"data:([^;,]+);base64,(.*)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class AnthropicConversation:
    """An OpenAI conversation in the Anthropic shape.

    ``system`` is the text of every system and developer message, joined by a blank line in
    order (None when there is none); ``messages`` are Anthropic-shaped, with the notes described
    in :mod:`windowkeeper.formats.openai`.
    """

    system: str | None
    messages: list[Message]


@dataclass(frozen=True, slots=True)
class TrackedConversation:
    """:func:`to_anthropic`'s result with where each part came from, for incremental callers."""

    conversation: AnthropicConversation
    ends: tuple[int, ...]
    """For each message, the index just past the last OpenAI message it was made from."""
    system_parts: tuple[tuple[int, str], ...]
    """``(index, text)`` of each system or developer message, in order (``system`` joins them)."""


# -- OpenAI -> Anthropic ---------------------------------------------------------------------


def to_anthropic(
    messages: Sequence[MessageInput], *, name: str = "messages"
) -> AnthropicConversation:
    """The Anthropic form of OpenAI Chat Completions ``messages``; the input is not modified.

    A run of tool messages becomes one user message of tool_result blocks, and a user message
    with content right after it (system or developer messages between allowed) joins that
    message. Raises :class:`~windowkeeper.MalformedMessageError` naming the place, e.g.
    ``messages[3].tool_calls[0].function.arguments``, for input outside the supported subset.
    """
    return to_anthropic_tracked(messages, name=name).conversation


def to_anthropic_tracked(
    messages: Sequence[MessageInput], *, name: str = "messages"
) -> TrackedConversation:
    """What :func:`to_anthropic` gives, with where each message and system text came from."""
    if not isinstance(messages, Sequence) or isinstance(messages, str | bytes):
        raise MalformedMessageError(
            name, f"expected a list of messages, got {type(messages).__name__}"
        )
    output: list[Message] = []
    ends: list[int] = []
    system_texts: list[tuple[int, str]] = []
    notes: list[Message] = []
    index = 0
    while index < len(messages):
        path = f"{name}[{index}]"
        message = cast("Message", messages[index])  # a dict: _checked_role refuses anything else
        role = _checked_role(message, path)
        if role in SYSTEM_ROLES:
            system_texts.append((index, _system_text(message, path)))
            notes.append(dict(message))
            index += 1
            continue
        if role == "tool":
            converted, index = _tool_group(messages, index, name, system_texts, notes)
        else:
            convert = _user if role == "user" else _assistant
            converted, index = convert(message, path), index + 1
        if notes:
            converted[SYSTEM_NOTE], notes = notes, []
        output.append(converted)
        ends.append(index)
    if notes and output:
        output[-1][SYSTEM_AFTER_NOTE] = notes
    system = "\n\n".join(text for _, text in system_texts) if system_texts else None
    return TrackedConversation(
        AnthropicConversation(system, output), tuple(ends), tuple(system_texts)
    )


def _checked_role(message: Any, path: str) -> str:
    if not isinstance(message, dict):
        raise MalformedMessageError(path, f"expected a message dict, got {type(message).__name__}")
    role = message.get("role")
    if role not in OPENAI_ROLES:
        raise MalformedMessageError(
            f"{path}.role",
            f"expected one of {', '.join(sorted(OPENAI_ROLES))}, got {role!r}",
        )
    return str(role)


def _system_text(message: Message, path: str) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise MalformedMessageError(
            f"{path}.content", f"expected a string or text parts, got {type(content).__name__}"
        )
    texts = []
    for position, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") != "text":
            raise MalformedMessageError(
                f"{path}.content[{position}]", "system and developer messages take text parts only"
            )
        texts.append(_text_of(part, f"{path}.content[{position}]"))
    return "\n\n".join(texts)


def _tool_group(
    messages: Sequence[Any],
    start: int,
    name: str,
    system_texts: list[tuple[int, str]],
    notes: list[Message],
) -> tuple[Message, int]:
    """The user message for the tool messages from ``start`` on, and the index after them."""
    blocks: list[Any] = []
    index = start
    while index < len(messages) and _role_of(messages[index]) == "tool":
        blocks.append(_tool_result(messages[index], f"{name}[{index}]"))
        index += 1
    after = index
    while after < len(messages) and _role_of(messages[after]) in SYSTEM_ROLES:
        after += 1
    following: Any = messages[after] if after < len(messages) else None
    if _role_of(following) != "user" or not following.get("content"):
        return {"role": "user", "content": blocks}, index
    for position in range(index, after):  # system messages between the tools and the user
        system_texts.append((position, _system_text(messages[position], f"{name}[{position}]")))
        notes.append(dict(messages[position]))
    user = _user(following, f"{name}[{after}]")
    content = user["content"]
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    return {**user, "content": blocks + content}, after + 1


def _user(message: Message, path: str) -> Message:
    extras = _extras(message, {"role", "content"}, path, NOTE_KEYS)
    return {**extras, "role": "user", "content": _content(message, path)}


def _content(message: Message, path: str) -> str | list[Any]:
    if "content" not in message:
        raise MalformedMessageError(f"{path}.content", "missing")
    content = message["content"]
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise MalformedMessageError(
            f"{path}.content", f"expected a string or a list of parts, got {type(content).__name__}"
        )
    return [_block(part, f"{path}.content[{position}]") for position, part in enumerate(content)]


def _block(part: Any, path: str) -> Any:
    if not isinstance(part, dict) or not isinstance(part.get("type"), str):
        raise MalformedMessageError(path, "expected a content part with a string 'type'")
    kind = part["type"]
    if kind == "text":
        _text_of(part, path)
        return dict(part)
    if kind == "image_url":
        return _image_block(part, path)
    if kind in _ANTHROPIC_ONLY_PARTS:
        raise MalformedMessageError(
            f"{path}.type", f"{kind!r} is an Anthropic block type, not an OpenAI content part"
        )
    return dict(part)


def _text_of(part: Message, path: str) -> str:
    text = part.get("text")
    if not isinstance(text, str):
        raise MalformedMessageError(f"{path}.text", f"expected a string, got {type(text).__name__}")
    return text


def _image_block(part: Message, path: str) -> Message:
    image = part.get("image_url")
    if not isinstance(image, dict) or not isinstance(image.get("url"), str):
        raise MalformedMessageError(f"{path}.image_url", "expected an object with a string 'url'")
    url = image["url"]
    source_extras = _extras(
        image, {"url"}, f"{path}.image_url", {"type", "media_type", "data", "url"}
    )
    match = _DATA_URL.fullmatch(url)
    if match:
        source = {**source_extras, "type": "base64", "media_type": match[1], "data": match[2]}
    else:
        source = {**source_extras, "type": "url", "url": url}
    return {
        **_extras(part, {"type", "image_url"}, path, {"source"}),
        "type": "image",
        "source": source,
    }


def _assistant(message: Message, path: str) -> Message:
    calls = message.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        raise MalformedMessageError(
            f"{path}.tool_calls", f"expected a list of tool calls, got {type(calls).__name__}"
        )
    translated: list[Any] = calls or []  # None and [] travel as they are
    known = {"role", "content", "tool_calls"} if translated else {"role", "content"}
    extras = _extras(message, known, path, NOTE_KEYS)
    if "content" not in message:
        raise MalformedMessageError(f"{path}.content", "missing (use None for no content)")
    content: Any = [] if message["content"] is None else _content(message, path)
    if translated:
        if isinstance(content, str):
            content = [{"type": "text", "text": content}] if content else []
        content = content + [
            _tool_use(call, f"{path}.tool_calls[{position}]")
            for position, call in enumerate(translated)
        ]
    return {**extras, "role": "assistant", "content": content}


def _tool_use(call: Any, path: str) -> Message:
    if not isinstance(call, dict):
        raise MalformedMessageError(path, f"expected a tool call dict, got {type(call).__name__}")
    if call.get("type", "function") != "function":
        raise MalformedMessageError(
            f"{path}.type", f"only 'function' tool calls are supported, got {call.get('type')!r}"
        )
    call_id = call.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise MalformedMessageError(f"{path}.id", "a tool call needs a non-empty string id")
    function = call.get("function")
    if not isinstance(function, dict):
        raise MalformedMessageError(
            f"{path}.function", "expected an object with name and arguments"
        )
    tool_name = function.get("name")
    if not isinstance(tool_name, str):
        raise MalformedMessageError(f"{path}.function.name", "expected a string")
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        raise MalformedMessageError(
            f"{path}.function.arguments",
            f"expected a JSON string, got {type(arguments).__name__}",
        )
    for key in function:
        if key not in {"name", "arguments"}:
            raise MalformedMessageError(
                f"{path}.function.{key}", "has no place in a tool_use block"
            )
    extras = _extras(call, {"id", "type", "function"}, path, {"name", "input", ARGUMENTS_NOTE})
    parsed = _parse_arguments(arguments)
    block = {**extras, "type": "tool_use", "id": call_id, "name": tool_name, "input": parsed}
    if _dump(parsed) != arguments:
        block[ARGUMENTS_NOTE] = arguments
    return block


def _tool_result(message: Any, path: str) -> Message:
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise MalformedMessageError(f"{path}.tool_call_id", "a tool message needs a string id")
    extras = _extras(message, {"role", "content", "tool_call_id"}, path, {"type", "tool_use_id"})
    content = _content(message, path)
    return {**extras, "type": "tool_result", "tool_use_id": call_id, "content": content}
