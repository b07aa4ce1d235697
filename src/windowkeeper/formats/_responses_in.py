"""OpenAI Responses input items to Anthropic messages (see formats.responses for the mapping and the notes)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Collection, Sequence
from typing import Any

from .._errors import MalformedMessageError
from ..core._messages import Message, MessageInput
from ..rules._responses import (
    ASSISTANT_PARTS,
    CALL_TYPES,
    CARRIED_TYPES,
    ITEM_TYPES,
    OUTPUT_TYPES,
    ROLES,
    SYSTEM_ROLES,
    USER_PARTS,
)
from ..rules._responses import one_of as _one_of
from ._extras import extras as _extras
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
from .openai import AnthropicConversation, TrackedConversation

__all__ = ["to_anthropic", "to_anthropic_tracked"]


_PRODUCED_BLOCKS = frozenset({"text", "image", "tool_use", "tool_result"})
_DATA_URL = re.compile(r"data:([^;,]+);base64,(.*)", re.DOTALL)


def to_anthropic(items: Sequence[MessageInput], *, name: str = "input") -> AnthropicConversation:
    """The Anthropic form of OpenAI Responses input ``items``; the input is not modified.

    See the module docstring for the mapping and the notes. Raises
    :class:`~windowkeeper.MalformedMessageError` naming the place, e.g.
    ``input[3].arguments``, for input outside the supported subset.
    """
    if not isinstance(items, Sequence) or isinstance(items, str | bytes):
        raise MalformedMessageError(
            name, f"expected a list of input items, got {type(items).__name__}"
        )
    return to_anthropic_tracked(items, name=name).conversation


def to_anthropic_tracked(
    items: Sequence[MessageInput], *, name: str = "input", custom_ids: Collection[str] = ()
) -> TrackedConversation:
    """What :func:`to_anthropic` gives, with where each message and system text came from.

    ``custom_ids`` are the ids of custom tool calls made before ``items`` (for a caller that
    converts a tail of a longer list again).
    """
    if not isinstance(items, Sequence) or isinstance(items, str | bytes):
        raise MalformedMessageError(
            name, f"expected a list of input items, got {type(items).__name__}"
        )
    builder = _Builder()
    builder.custom_ids.update(custom_ids)
    for index, item in enumerate(items):
        builder.index = index
        builder.add(item, f"{name}[{index}]")
    return TrackedConversation(builder.finish(), tuple(builder.ends), tuple(builder.system_parts))


def _item_type(item: Any, path: str) -> str:
    """The type of ``item`` (``message`` for an easy input message); raises for unknown ones."""
    if not isinstance(item, dict):
        raise MalformedMessageError(path, f"expected an input item dict, got {type(item).__name__}")
    kind = item.get("type")
    if kind is None and "type" not in item and "role" in item:
        kind = "message"
    if not _one_of(kind, ITEM_TYPES):
        raise MalformedMessageError(
            f"{path}.type", f"expected one of {', '.join(sorted(ITEM_TYPES))}, got {kind!r}"
        )
    if kind == "message" and not _one_of(item.get("role"), ROLES):
        raise MalformedMessageError(
            f"{path}.role", f"expected one of {', '.join(sorted(ROLES))}, got {item.get('role')!r}"
        )
    return str(kind)


class _Builder:
    """Builds the Anthropic messages item by item (see the module docstring)."""

    def __init__(self) -> None:
        self.output: list[Message] = []
        self.system: list[str] = []
        self.pending: list[Message] = []  # carried items since the last converted item
        self.mode: str | None = None  # "assistant" / "results": what output[-1] is still taking
        self.open_message = False  # the last model item is an assistant message with parts
        self.runs: dict[int, list[Message]] = {}  # assistant message index -> its model items
        self.custom_ids: set[str] = set()
        self.index = 0  # of the item being added
        self.ends: list[int] = []  # per message: the index past the last item it took
        self.system_parts: list[tuple[int, str]] = []

    def add(self, item: Any, path: str) -> None:
        kind = _item_type(item, path)
        role = item.get("role") if kind == "message" else None
        if kind in CARRIED_TYPES or role in SYSTEM_ROLES:
            if role in SYSTEM_ROLES:
                text = _system_text(item, path)
                self.system.append(text)
                self.system_parts.append((self.index, text))
            self.pending.append(dict(item))
            return
        if kind in CALL_TYPES or role == "assistant":
            self._model_item(item, kind, path)
        elif kind in OUTPUT_TYPES:
            self._output(item, kind, path)
        else:
            self._user(item, path)
        del self.ends[len(self.output) :]
        self.ends.extend([0] * (len(self.output) - len(self.ends)))
        self.ends[-1] = self.index + 1

    def finish(self) -> AnthropicConversation:
        if self.pending and self.output:
            self.output[-1][AFTER_NOTE] = self.pending
        for index, run in self.runs.items():
            if len(run) == 1 and set(run[0]) == {"role", "content"}:
                content = run[0]["content"]
                if isinstance(content, str):
                    self.output[index]["content"] = content
        system = "\n\n".join(self.system) if self.system else None
        return AnthropicConversation(system, self.output)

    def _start(self, role: str, mode: str | None) -> Message:
        message: Message = {"role": role, "content": []}
        if self.pending:
            message[BEFORE_NOTE], self.pending = self.pending, []
        self.output.append(message)
        self.mode = mode
        self.open_message = False
        return message

    def _attach(self, blocks: list[Message]) -> None:
        """Notes the carried items on the first of ``blocks`` (an item inside a message)."""
        if self.pending and blocks:
            blocks[0][BEFORE_NOTE], self.pending = self.pending, []

    def _model_item(self, item: Message, kind: str, path: str) -> None:
        if self.mode != "assistant":
            self._start("assistant", "assistant")
            self.runs[len(self.output) - 1] = []
        if kind == "function_call":
            blocks = [_function_call(item, path)]
        elif kind == "custom_tool_call":
            blocks = [_custom_call(item, path)]
            self.custom_ids.add(blocks[0]["id"])
        else:
            blocks = _assistant_blocks(item, path, absorbs=self.open_message and not self.pending)
        self._attach(blocks)
        self.output[-1]["content"].extend(blocks)
        self.runs[len(self.output) - 1].append(item)
        self.open_message = kind == "message" and isinstance(item.get("content"), list)

    def _output(self, item: Message, kind: str, path: str) -> None:
        if self.mode != "results":
            self._start("user", "results")
        block = _tool_result(item, kind, path, self.custom_ids)
        self._attach([block])
        self.output[-1]["content"].append(block)

    def _user(self, item: Message, path: str) -> None:
        extras = _extras(item, {"role", "content"}, path, NOTE_KEYS)
        content = _content(item, path, _user_part)
        if self.mode == "results" and content:
            blocks = (
                [{"type": "text", "text": content, STRING_NOTE: True}]
                if isinstance(content, str)
                else content
            )
            self._attach(blocks)
            message = self.output[-1]
            message.update(extras)
            message["content"].extend(blocks)
            self.mode = None
            return
        message = self._start("user", None)
        message.update(extras)
        message["content"] = content


def _content(item: Message, path: str, convert: Callable[[Any, str], Message]) -> str | list[Any]:
    if "content" not in item:
        raise MalformedMessageError(f"{path}.content", "missing")
    content = item["content"]
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise MalformedMessageError(
            f"{path}.content", f"expected a string or a list of parts, got {type(content).__name__}"
        )
    return [convert(part, f"{path}.content[{position}]") for position, part in enumerate(content)]


def _system_text(item: Message, path: str) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise MalformedMessageError(
            f"{path}.content",
            f"expected a string or input_text parts, got {type(content).__name__}",
        )
    texts = []
    for position, part in enumerate(content):
        where = f"{path}.content[{position}]"
        if not isinstance(part, dict) or part.get("type") != "input_text":
            raise MalformedMessageError(
                where, "system and developer messages take input_text parts only"
            )
        texts.append(_text_of(part, where))
    return "\n\n".join(texts)


def _part_type(part: Any, path: str) -> str:
    if not isinstance(part, dict) or not isinstance(part.get("type"), str):
        raise MalformedMessageError(path, "expected a content part with a string 'type'")
    return str(part["type"])


def _text_of(part: Message, path: str, key: str = "text") -> str:
    text = part.get(key)
    if not isinstance(text, str):
        raise MalformedMessageError(
            f"{path}.{key}", f"expected a string, got {type(text).__name__}"
        )
    return text


def _user_part(part: Any, path: str) -> Message:
    """The block for a part of a user message or of a tool output."""
    kind = _part_type(part, path)
    if kind == "input_text":
        text = _text_of(part, path)
        return {**_extras(part, {"type", "text"}, path, NOTE_KEYS), "type": "text", "text": text}
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        return _image_block(part, path)
    if kind in ASSISTANT_PARTS or kind in _PRODUCED_BLOCKS:
        raise MalformedMessageError(f"{path}.type", f"a {kind!r} part cannot be in a user message")
    return _untouched(part, path)


def _assistant_part(part: Any, path: str) -> Message:
    kind = _part_type(part, path)
    if kind == "output_text":
        text = _text_of(part, path)
        return {**_extras(part, {"type", "text"}, path, NOTE_KEYS), "type": "text", "text": text}
    if kind in USER_PARTS or kind in _PRODUCED_BLOCKS:
        raise MalformedMessageError(
            f"{path}.type", f"a {kind!r} part cannot be in an assistant message"
        )
    return _untouched(part, path)


def _untouched(part: Message, path: str) -> Message:
    return _extras(part, (), path, NOTE_KEYS)


def _image_block(part: Message, path: str) -> Message:
    url = part["image_url"]
    match = _DATA_URL.fullmatch(url)
    if match:
        source = {"type": "base64", "media_type": match[1], "data": match[2]}
    else:
        source = {"type": "url", "url": url}
    extras = _extras(part, {"type", "image_url"}, path, {"source", *NOTE_KEYS})
    return {**extras, "type": "image", "source": source}


def _assistant_blocks(item: Message, path: str, *, absorbs: bool) -> list[Message]:
    """The blocks of an assistant message item; ``absorbs``: note-free blocks would join the last."""
    _extras(item, {"content"}, path, NOTE_KEYS)
    envelope = {key: value for key, value in item.items() if key != "content"}
    content = _content(item, path, _assistant_part)
    if isinstance(content, str):
        return [{"type": "text", "text": content, STRING_NOTE: True, MESSAGE_NOTE: envelope}]
    if not content:
        raise MalformedMessageError(f"{path}.content", "an assistant message needs a part")
    plain = set(item) == {"type", "role", "content"} and item["type"] == "message"
    if absorbs or not plain:
        content[0][MESSAGE_NOTE] = envelope
    return content


def _call_id(item: Message, path: str) -> str:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise MalformedMessageError(f"{path}.call_id", "expected a non-empty string")
    return call_id


def _function_call(item: Message, path: str) -> Message:
    call_id = _call_id(item, path)
    tool_name = _text_of(item, path, "name")
    arguments = _text_of(item, path, "arguments")
    extras = _extras(
        item, {"type", "call_id", "name", "arguments", "id"}, path, {"input", *NOTE_KEYS}
    )
    parsed = _parse_arguments(arguments)
    block = {**extras, "type": "tool_use", "id": call_id, "name": tool_name, "input": parsed}
    if "id" in item:
        block[ITEM_ID_NOTE] = item["id"]
    if _dump(parsed) != arguments:
        block[ARGUMENTS_NOTE] = arguments
    return block


def _custom_call(item: Message, path: str) -> Message:
    call_id = _call_id(item, path)
    tool_name = _text_of(item, path, "name")
    text = _text_of(item, path, "input")
    extras = _extras(item, {"type", "call_id", "name", "input", "id"}, path, NOTE_KEYS)
    block = {
        **extras,
        "type": "tool_use",
        "id": call_id,
        "name": tool_name,
        "input": {"input": text},
        CUSTOM_NOTE: True,
    }
    if "id" in item:
        block[ITEM_ID_NOTE] = item["id"]
    return block


def _tool_result(item: Message, kind: str, path: str, custom_ids: set[str]) -> Message:
    call_id = _call_id(item, path)
    if "output" not in item:
        raise MalformedMessageError(f"{path}.output", "missing")
    output = item["output"]
    if isinstance(output, list):
        content: Any = [
            _user_part(part, f"{path}.output[{position}]") for position, part in enumerate(output)
        ]
    elif isinstance(output, str):
        content = output
    else:
        raise MalformedMessageError(
            f"{path}.output", f"expected a string or a list of parts, got {type(output).__name__}"
        )
    extras = _extras(
        item, {"type", "call_id", "output"}, path, {"tool_use_id", "content", *NOTE_KEYS}
    )
    block = {**extras, "type": "tool_result", "tool_use_id": call_id, "content": content}
    if kind == "custom_tool_call_output":
        block[CUSTOM_NOTE] = True
    elif call_id in custom_ids:
        block[CUSTOM_NOTE] = False
    return block


def _reject_constant(text: str) -> Any:
    raise ValueError(f"{text} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is out of range")
    return number


def _parse_arguments(arguments: str) -> dict[str, Any]:
    """The arguments as a JSON object; ``{}`` when they are not one."""
    try:
        parsed = json.loads(arguments, parse_constant=_reject_constant, parse_float=_finite)
    except (ValueError, RecursionError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
