"""Messages and content blocks: their shapes, text getters and setters, and shape checks.

Messages are plain dicts in the Anthropic Messages shape: ``{"role": "user" | "assistant",
"content": str | list[block]}``. Unknown keys and block types are carried through untouched.
The TypedDicts below document the shapes for callers and type checkers. Inputs are typed with
the ``Mapping``-based aliases (:data:`MessageInput`, :data:`SystemPrompt`), so that the SDKs'
own TypedDicts (``anthropic.types.MessageParam``, OpenAI's message params) type-check as
arguments: mypy never treats a TypedDict as a ``dict[str, Any]``, only as a ``Mapping``.

Nothing here mutates its argument: setters return copies (copy-on-write), sharing every part
they did not change.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict, TypeVar

from .._errors import MalformedMessageError
from ._incremental import Seen, shared_prefix

__all__ = [
    "REFUSED_ID_CHARACTERS",
    "ROLES",
    "CheckMemo",
    "ContentBlock",
    "ImageBlock",
    "JSONValue",
    "Message",
    "MessageDict",
    "MessageInput",
    "MessageT",
    "SystemPrompt",
    "TextBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "block_text",
    "check_history",
    "check_message",
    "shared_prefix",
    "tool_calls_before",
    "utf16_len",
    "with_block_content",
    "with_block_text",
]

REFUSED_ID_CHARACTERS = re.compile(r"[^A-Za-z0-9_-]")
"""What Anthropic's Messages API refuses in a tool_use id: anything but letters, digits, _ and -."""

JSONValue: TypeAlias = bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"] | None
"""Any JSON value: what a stored file holds where windowkeeper keeps it as found (the original's
edit log, a counter's calibration, a transcript's records) and what its readers check."""

Message = dict[str, Any]
"""A message as windowkeeper handles and returns it: a dict in the Anthropic Messages shape."""

MessageInput = Mapping[str, Any]
"""A message as windowkeeper accepts it: a plain dict or a TypedDict of the message's shape.

A ``Mapping`` rather than a ``dict`` only for the type checker, which accepts any TypedDict (the
SDKs' message params included) as a ``Mapping[str, Any]``; at run time it is a dict, as every
TypedDict is, and anything else is refused with :class:`MalformedMessageError`.
"""

MessageT = TypeVar("MessageT", bound=MessageInput)
"""The caller's own message type, for functions that give back the messages they were given
(or copies with some text replaced and tool results repaired, which keep the shape)."""

SystemPrompt = str | Sequence[Mapping[str, Any]]
"""Anthropic's ``system`` parameter: a string, or text blocks ``{"type": "text", "text": ...}``
(extra keys such as ``cache_control`` are kept); ``anthropic.types.TextBlockParam`` lists fit."""

ROLES = frozenset({"user", "assistant"})


class TextBlock(TypedDict):
    type: Literal["text"]
    text: str


class ImageSource(TypedDict):
    type: str
    media_type: NotRequired[str]
    data: NotRequired[str]


class ImageBlock(TypedDict):
    type: Literal["image"]
    source: ImageSource


class ToolUseBlock(TypedDict):
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]


class ToolResultBlock(TypedDict):
    type: Literal["tool_result"]
    tool_use_id: str
    content: NotRequired[str | list[TextBlock | ImageBlock]]
    is_error: NotRequired[bool]


ContentBlock = TextBlock | ImageBlock | ToolUseBlock | ToolResultBlock | dict[str, Any]
"""A block of a message's content: one of the documented blocks, or any other block dict
(thinking, documents, server tools, ...), carried through untouched."""


class MessageDict(TypedDict):
    """The documented shape of a message (extra keys such as ``ts`` are allowed and kept)."""

    role: Literal["user", "assistant"]
    content: str | list[ContentBlock]


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units, as JavaScript's ``String.length`` counts it."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def block_text(block: Any) -> str | None:
    """The editable text of a block, or None.

    A ``text`` block gives its ``text``; a ``tool_result`` whose ``content`` is a list starting with
    a ``text`` block gives that inner text. Anything else (a string-content tool_result, an image,
    a tool_use, thinking) has no editable text. Empty text counts as none, as in the original.
    """
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
    elif kind == "tool_result":
        inner = block.get("content")
        if not isinstance(inner, list) or not inner:
            return None
        first = inner[0]
        if not isinstance(first, dict) or first.get("type") != "text":
            return None
        text = first.get("text")
    else:
        return None
    return text if isinstance(text, str) and text else None


def with_block_text(block: Any, text: str) -> Any:
    """A copy of ``block`` whose editable text is ``text``; the block itself when it has none.

    The counterpart of :func:`block_text`: a ``text`` block gets its ``text`` replaced, a
    ``tool_result`` with list content starting with a text block gets that inner text replaced.
    Other blocks are returned unchanged, silently, as the original does.
    """
    if not isinstance(block, dict):
        return block
    kind = block.get("type")
    if kind == "text":
        return {**block, "text": text}
    if kind == "tool_result":
        inner = block.get("content")
        if isinstance(inner, list) and inner:
            first = inner[0]
            if isinstance(first, dict) and first.get("type") == "text":
                return {**block, "content": [{**first, "text": text}, *inner[1:]]}
    return block


def with_block_content(block: Any, text: str) -> Any:
    """A copy of ``block`` whose whole content is ``text``; the block itself when it has none.

    A ``text`` block gets its ``text`` replaced; a ``tool_result`` keeps its id and flags and gets
    ``text`` as its content (a string if it was one, else a one-text-block list), so pairing with
    its tool_use is untouched.
    """
    if not isinstance(block, dict):
        return block
    kind = block.get("type")
    if kind == "text":
        return {**block, "text": text}
    if kind == "tool_result":
        if isinstance(block.get("content"), str):
            return {**block, "content": text}
        return {**block, "content": [{"type": "text", "text": text}]}
    return block


def tool_calls_before(history: Sequence[Any], index: int) -> dict[Any, dict[str, Any]]:
    """tool_use id -> tool_use block, of the assistant message just before ``history[index]``.

    What a user message's tool_results answer; empty when that message is not an assistant one.
    """
    if index < 1:
        return {}
    previous = history[index - 1]
    content = previous.get("content") if isinstance(previous, dict) else None
    if previous.get("role") != "assistant" or not isinstance(content, list):
        return {}
    return {
        block.get("id"): block
        for block in content
        if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("id")
    }


def check_message(message: Any, path: str) -> None:
    """Raise :class:`MalformedMessageError` unless ``message`` has a shape windowkeeper can handle.

    Accepted, as by the original: any order of roles, empty content (``""`` or ``[]``), blocks of
    unknown types, tool_use blocks without an id. Rejected: a message that is not a dict, a role
    other than user/assistant, content that is neither a string nor a list, a block that is not a
    dict with a string ``type``.
    """
    if not isinstance(message, dict):
        raise MalformedMessageError(path, f"expected a message dict, got {type(message).__name__}")
    role = message.get("role")
    if role not in ROLES:
        raise MalformedMessageError(f"{path}.role", f"expected 'user' or 'assistant', got {role!r}")
    content = message.get("content")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise MalformedMessageError(
            f"{path}.content",
            f"expected a string or a list of blocks, got {type(content).__name__}",
        )
    for position, block in enumerate(content):
        if not isinstance(block, dict):
            raise MalformedMessageError(
                f"{path}.content[{position}]", f"expected a block dict, got {type(block).__name__}"
            )
        if not isinstance(block.get("type"), str):
            raise MalformedMessageError(f"{path}.content[{position}]", "block has no string 'type'")


def check_history(history: Any, name: str = "history") -> None:
    """Check every message of ``history`` with :func:`check_message`; the list itself too."""
    if not isinstance(history, Sequence) or isinstance(history, str | bytes):
        raise MalformedMessageError(
            name, f"expected a list of messages, got {type(history).__name__}"
        )
    for index, message in enumerate(history):
        check_message(message, f"{name}[{index}]")


class CheckMemo:
    """:func:`check_history` that skips the leading messages it already checked.

    Messages are treated as values (see :mod:`windowkeeper.core._incremental`): the messages of
    the last call that start this one, the same objects, are not checked again; the rest are.
    Nothing is kept per message (a long history's hidden part costs no memory here). Not
    thread-safe; one per manager.
    """

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last = Seen()

    def check_history(self, history: Any, name: str = "history") -> None:
        """Raise :class:`MalformedMessageError` for the first malformed message, as check_history."""
        if not isinstance(history, Sequence) or isinstance(history, str | bytes):
            raise MalformedMessageError(
                name, f"expected a list of messages, got {type(history).__name__}"
            )
        last = self._last
        for index in range(last.prefix(history), len(history)):
            check_message(history[index], f"{name}[{index}]")
        last.remember(history)
