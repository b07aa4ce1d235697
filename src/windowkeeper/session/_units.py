"""What a request weighs before it is sent: UTF-8 bytes of text and of thinking, image tokens.

What is counted, per message (message-level extra keys such as ``ts`` or ``metrics`` are not):

- string content, ``text`` blocks, ``tool_result`` contents (string or blocks), the ids that tie
  a ``tool_use`` to its ``tool_result``, a ``tool_use``'s name and its input serialized as JSON;
- ``thinking`` text and ``redacted_thinking`` data, kept apart (signatures are never counted).
  Whether a provider counts the thinking of earlier turns depends on the model: in the recorded
  traces Claude Sonnet 4.5 does not (its earlier thinking is stripped) and Claude Opus 4.5 does.
  By default (``thinking="learn"``) thinking starts counted in full, the conservative choice, and
  its weight (0 to 1) is then fitted from the observations; ``"count"`` and ``"ignore"`` fix it;
- images by their documented cost, ``width * height / 750`` tokens (long edge scaled down to
  1568 px) and at most ``max_image_tokens`` (1,600, the cost of an image the provider scaled
  down to about 1.15 megapixels), the size read from the PNG, JPEG, GIF or WebP header of base64
  data; ``max_image_tokens`` when the size cannot be read (a URL source, an unknown format);
- any other block as its JSON; a fixed overhead per message and per block;
- the Responses items a message or block carries (``responses_before``/``responses_after``:
  reasoning, compaction, hosted tools' items), as their JSON;
- the system prompt (a string or text blocks) and each tool definition as JSON.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from .._errors import ConfigurationError, MalformedMessageError
from ..core._messages import Message, check_message
from ..formats._responses_notes import AFTER_NOTE, BEFORE_NOTE
from ._images import image_tokens

__all__ = [
    "BLOCK_OVERHEAD",
    "NO_UNITS",
    "Units",
    "check_sequence",
    "json_len",
    "message_units",
    "parts",
    "same_parts",
    "summed",
    "system_units",
    "tools_units",
    "utf8_len",
]

CARRIED_NOTES = (BEFORE_NOTE, AFTER_NOTE)
MESSAGE_OVERHEAD = 12  # bytes-equivalent: role and message framing
BLOCK_OVERHEAD = 12  # bytes-equivalent: block type and framing


class Units(NamedTuple):
    """What a message (or a request part) weighs: text and thinking bytes, image tokens."""

    text: int
    thinking: int
    images: int


NO_UNITS = Units(0, 0, 0)


def utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=repr).encode
"""``json.dumps`` with these options, its encoder made once (``json.dumps`` makes one a call)."""


def json_len(value: Any) -> int:
    return utf8_len(_COMPACT(value))


def string_field(block: Mapping[str, Any], key: str, path: str) -> str:
    value = block.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise MalformedMessageError(
            f"{path}.{key}", f"expected a string, got {type(value).__name__}"
        )
    return value


def carried(holder: Mapping[str, Any]) -> int:
    """Bytes of the Responses items a message or block carries (reasoning, hosted tools' items):
    they are sent with it, so they count."""
    total = 0
    for key in CARRIED_NOTES:
        items = holder.get(key)
        if items:
            total += json_len(items)
    return total


def block_units(block: Mapping[str, Any], path: str, max_image_tokens: int) -> Units:
    kind = block.get("type")
    text = BLOCK_OVERHEAD + (carried(block) if CARRIED_NOTES[0] in block else 0)
    if kind == "text":
        return Units(text + utf8_len(string_field(block, "text", path)), 0, 0)
    if kind == "thinking":
        return Units(text, utf8_len(string_field(block, "thinking", path)), 0)
    if kind == "redacted_thinking":
        return Units(text, utf8_len(string_field(block, "data", path)), 0)
    if kind in ("image", "image_url"):
        return Units(text, 0, image_tokens(block, max_tokens=max_image_tokens))
    if kind == "tool_use":
        text += utf8_len(string_field(block, "id", path))
        text += utf8_len(string_field(block, "name", path)) + json_len(block.get("input", {}))
        return Units(text, 0, 0)
    if kind == "tool_result":
        text += utf8_len(string_field(block, "tool_use_id", path))
        content = block.get("content", "")
        if isinstance(content, str):
            return Units(text + utf8_len(content), 0, 0)
        if not isinstance(content, list):
            raise MalformedMessageError(
                f"{path}.content",
                f"expected a string or a list of blocks, got {type(content).__name__}",
            )
        thinking = images = 0
        for position, inner in enumerate(content):
            inner_path = f"{path}.content[{position}]"
            if not isinstance(inner, Mapping) or not isinstance(inner.get("type"), str):
                raise MalformedMessageError(
                    inner_path, "expected a block dict with a string 'type'"
                )
            units = block_units(inner, inner_path, max_image_tokens)
            text += units.text
            thinking += units.thinking
            images += units.images
        return Units(text, thinking, images)
    return Units(text + json_len(block), 0, 0)


def message_units(message: Message, path: str, max_image_tokens: int) -> Units:
    check_message(message, path)
    content = message["content"]
    overhead = MESSAGE_OVERHEAD + carried(message)
    if isinstance(content, str):
        return Units(overhead + utf8_len(content), 0, 0)
    text, thinking, images = overhead, 0, 0
    for position, block in enumerate(content):
        units = block_units(block, f"{path}.content[{position}]", max_image_tokens)
        text += units.text
        thinking += units.thinking
        images += units.images
    return Units(text, thinking, images)


def system_units(system: Any, max_image_tokens: int) -> Units:
    if system is None:
        return NO_UNITS
    if isinstance(system, str):
        return Units(utf8_len(system), 0, 0)
    if isinstance(system, Sequence) and not isinstance(system, bytes | bytearray):
        text = images = 0
        for position, block in enumerate(system):
            if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
                raise ConfigurationError(
                    f"system[{position}]: expected a text block dict, got {type(block).__name__}"
                )
            units = block_units(block, f"system[{position}]", max_image_tokens)
            text += units.text
            images += units.images
        return Units(text, 0, images)
    raise ConfigurationError(
        f"system: expected None, a string or a list of text blocks, got {type(system).__name__}"
    )


def tools_units(tools: Any) -> int:
    if tools is None:
        return 0
    if not isinstance(tools, Sequence) or isinstance(tools, str | bytes | bytearray):
        raise ConfigurationError(
            f"tools: expected a list of tool definitions, got {type(tools).__name__}"
        )
    total = 0
    for position, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            raise ConfigurationError(
                f"tools[{position}]: expected a tool definition dict, got {type(tool).__name__}"
            )
        total += BLOCK_OVERHEAD + json_len(dict(tool))
    return total


_BYTES = (bytes, bytearray)


def parts(value: Any) -> tuple[Any, ...] | None:
    """What a system prompt or tool list is made of, to notice a change by identity."""
    if value is None or isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence) and not isinstance(value, _BYTES):
        return tuple(value)
    return None  # not a valid value: measuring it raises


def same_parts(old: tuple[Any, ...] | None, new: tuple[Any, ...] | None) -> bool:
    return (
        old is not None
        and new is not None
        and len(old) == len(new)
        and all(map(operator.is_, old, new))
    )


def summed(first: Units, second: Units, less: Units = NO_UNITS) -> Units:
    """``first`` plus ``second``, less ``less`` (a message's units when another replaced it)."""
    return Units(
        first.text + second.text - less.text,
        first.thinking + second.thinking - less.thinking,
        first.images + second.images - less.images,
    )


def check_sequence(messages: Any) -> None:
    """Raise :class:`MalformedMessageError` unless ``messages`` is a sequence of messages."""
    if type(messages) is list:  # the usual case, without the ABC's slower check
        return
    if not isinstance(messages, Sequence) or isinstance(messages, str | bytes | bytearray):
        raise MalformedMessageError(
            "messages", f"expected a list of messages, got {type(messages).__name__}"
        )
