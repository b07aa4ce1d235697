"""PydanticAI messages to Anthropic-shaped dicts, remembering what each block came from (see adapters.pydantic_ai)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pydantic_core
from pydantic_ai.messages import (
    ERROR_OUTCOMES,
    BinaryContent,
    ImageUrl,
    ModelMessage,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    RetryFeedbackPart,
    RetryPromptPart,
    TextContent,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from . import is_opaque, jsonable

if TYPE_CHECKING:
    pass

__all__ = ["OPAQUE", "Block", "Entry", "from_pydantic_ai"]


OPAQUE = "x-pydantic-ai"
"""The block type under which the history keeps what the session must not touch."""

Block = dict[str, Any]

Entry = tuple[Any, Block, Block | None]  # (part or _Item, history block, block sent or None)


@dataclass(frozen=True, slots=True, eq=False)
class _Item:
    """Item ``index`` of a ``UserPromptPart`` whose content is a list."""

    part: UserPromptPart
    index: int


@dataclass(frozen=True, slots=True, eq=False)
class _Piece:
    """One PydanticAI message in the Anthropic shape."""

    message: ModelMessage
    role: str
    entries: tuple[Entry, ...]
    text: str | None = None  # the content, when the message is one plain user prompt

    @property
    def wire(self) -> list[Block]:
        return [entry[2] for entry in self.entries if entry[2] is not None]


def _size_note(item: Any) -> str:
    data = getattr(item, "data", None)
    media_type = getattr(item, "media_type", None) or getattr(item, "kind", "file")
    if isinstance(data, bytes | bytearray):
        return f"[{media_type}: {len(data)} bytes]"
    url = getattr(item, "url", None)
    return f"[{media_type}: {url}]" if isinstance(url, str) else f"[{media_type}]"


def _visible_text(part: Any) -> str:
    """The text by which an opaque part is counted."""
    content = getattr(part, "content", None)
    if isinstance(content, str):
        return content
    args = getattr(part, "args", None)
    if args is not None:
        return args if isinstance(args, str) else str(jsonable(args))
    if content is None:
        return ""
    if isinstance(getattr(content, "data", None), bytes | bytearray):
        return _size_note(content)
    try:
        return pydantic_core.to_json(content, fallback=str).decode()
    except (TypeError, ValueError, pydantic_core.PydanticSerializationError):
        return str(content)


def _opaque(part: Any, kind: str | None = None) -> Block:
    name = kind or getattr(part, "part_kind", None) or getattr(part, "kind", None)
    return {"type": OPAQUE, "kind": str(name or type(part).__name__), "text": _visible_text(part)}


def _media(item: Any) -> Block | None:
    """An Anthropic image block for an image item, else None."""
    if isinstance(item, ImageUrl):
        return {"type": "image", "source": {"type": "url", "url": item.url}}
    if isinstance(item, BinaryContent) and item.is_image:
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": item.media_type, "data": item.base64},
        }
    return None


def _user_item(item: Any) -> tuple[Block, Block | None]:
    if isinstance(item, str):
        if item:
            block = {"type": "text", "text": item}
            return block, block
        return {"type": OPAQUE, "kind": "empty-text", "text": ""}, None
    if isinstance(item, TextContent):
        text = item.content if isinstance(item.content, str) else str(jsonable(item.content))
        if text:
            block = {"type": "text", "text": text}
            return block, block
    image = _media(item)
    if image is not None:
        return image, image
    return {
        "type": OPAQUE,
        "kind": str(getattr(item, "kind", "content")),
        "text": _size_note(item),
    }, None


def _tool_result(call_id: str, text: str, files: Sequence[Any], error: bool) -> Block:
    """The history block and (with opaque inner blocks left out) what the session sends."""
    block: Block = {"type": "tool_result", "tool_use_id": call_id or "missing"}
    if files:
        inner: list[Block] = [{"type": "text", "text": text}] if text else []
        for item in files:
            image = _media(item)
            inner.append(image if image is not None else _opaque(item, "file"))
        block["content"] = inner
    else:
        block["content"] = text
    if error:
        block["is_error"] = True
    return block


def _sent_result(block: Block) -> Block:
    content = block.get("content")
    if isinstance(content, list) and any(is_opaque(inner) for inner in content):
        return {**block, "content": [inner for inner in content if not is_opaque(inner)]}
    return block


def _request_entries(part: ModelRequestPart) -> list[Entry]:
    if isinstance(part, UserPromptPart):
        if isinstance(part.content, str):
            block, sent = _user_item(part.content)
            return [(part, block, sent)]
        return [(_Item(part, index), *_user_item(item)) for index, item in enumerate(part.content)]
    if isinstance(part, ToolReturnPart):
        block = _tool_result(
            part.tool_call_id,
            part.model_response_str(wrap_if_error=False),
            part.files,
            part.outcome in ERROR_OUTCOMES,
        )
        return [(part, block, _sent_result(block))]
    if isinstance(part, RetryPromptPart):  # deprecated, still found in histories built by hand
        if part.tool_name is not None:
            block = _tool_result(part.tool_call_id, part.model_response(), (), True)
            return [(part, block, block)]
        text = {"type": "text", "text": part.model_response()}
        return [(part, text, text)]
    if isinstance(part, RetryFeedbackPart):
        text = {"type": "text", "text": part.model_response()}
        return [(part, text, text)]
    return [(part, _opaque(part), None)]


def _response_entries(part: ModelResponsePart) -> list[Entry]:
    if isinstance(part, TextPart) and part.content:
        text: Block = {"type": "text", "text": part.content}
        return [(part, text, text)]
    if isinstance(part, ToolCallPart):
        arguments = jsonable(part.args_as_dict())
        block: Block = {
            "type": "tool_use",
            "id": part.tool_call_id or "missing",
            "name": part.tool_name or "unknown",
            "input": arguments if isinstance(arguments, dict) else {},
        }
        return [(part, block, block)]
    return [(part, _opaque(part), None)]


def _piece(message: ModelMessage) -> _Piece:
    if isinstance(message, ModelResponse):
        entries = [entry for part in message.parts for entry in _response_entries(part)]
        return _Piece(message, "assistant", tuple(entries))
    entries = [entry for part in message.parts for entry in _request_entries(part)]
    parts = message.parts
    text = None
    if len(parts) == 1 and isinstance(parts[0], UserPromptPart):
        content = parts[0].content
        text = content if isinstance(content, str) else None
    return _Piece(message, "user", tuple(entries), text=text)


def _group_message(group: Sequence[_Piece]) -> dict[str, Any]:
    role = group[0].role
    if len(group) == 1 and group[0].text is not None:
        return {"role": role, "content": group[0].text}
    return {"role": role, "content": [entry[1] for piece in group for entry in piece.entries]}


def _same(left: Any, right: Any) -> bool:
    return left is right


class _Converted:
    """A message list in the Anthropic shape: groups (runs of requests, single responses)."""

    __slots__ = ("groups", "history")

    def __init__(self, messages: Sequence[ModelMessage], memo: dict[Any, Any]) -> None:
        fresh: dict[Any, Any] = {}
        pieces: list[_Piece] = []
        for message in messages:
            parts = tuple(message.parts)
            known = memo.get(id(message))
            if (
                known is not None
                and known[0] is message
                and len(known[1]) == len(parts)
                and all(map(_same, known[1], parts))
            ):
                piece = known[2]
            else:
                piece = _piece(message)
            fresh[id(message)] = (message, parts, piece)
            pieces.append(piece)
        self.groups: list[list[_Piece]] = []
        for piece in pieces:
            if self.groups and piece.role == "user" and self.groups[-1][0].role == "user":
                self.groups[-1].append(piece)
            else:
                self.groups.append([piece])
        self.history: list[dict[str, Any]] = []
        for group in self.groups:
            key = tuple(id(piece) for piece in group)
            known = memo.get(key)
            if known is not None and all(map(_same, known[0], group)):
                converted = known[1]
            else:
                converted = _group_message(group)
            fresh[key] = (tuple(group), converted)
            self.history.append(converted)
        memo.clear()
        memo.update(fresh)


def from_pydantic_ai(messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
    """Anthropic-shaped dicts for PydanticAI messages, as the capability gives them to the
    session with its opaque blocks left out: what a provider would be sent. For checks such as
    :func:`windowkeeper.validate_messages`."""
    output = []
    for message in _Converted(messages, {}).history:
        content = message["content"]
        if isinstance(content, list):
            content = [_sent_result(block) for block in content if not is_opaque(block)]
        output.append({"role": message["role"], "content": content})
    return output
