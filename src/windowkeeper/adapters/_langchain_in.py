"""LangChain messages to Anthropic-shaped dicts, remembering what each block came from (see adapters.langchain)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from . import is_opaque, jsonable

__all__ = ["OPAQUE", "Block", "Entry", "from_langchain"]


OPAQUE = "x-langchain"
"""The block type under which the history keeps what the session must not touch."""


_DATA_URL = re.compile(r"data:([^;,]+);base64,(.*)", re.DOTALL)


Block = dict[str, Any]

Entry = tuple[Any, Block, Block | None]  # (LangChain item, history block, block sent or None)


@dataclass(frozen=True, slots=True, eq=False)
class _Piece:
    """One LangChain message in the Anthropic shape."""

    message: BaseMessage
    role: str  # "user", "assistant", or "tool" (a user message's tool_result)
    entries: tuple[Entry, ...]
    text: str | None = None  # the content, when it is a plain string
    inner: tuple[Entry, ...] = ()  # a tool message's content items
    call_ids: frozenset[str] = frozenset()
    invalid_ids: frozenset[str] = frozenset()

    @property
    def wire(self) -> list[Block]:
        return [entry[2] for entry in self.entries if entry[2] is not None]


def _image_from_url(url: Any) -> Block | None:
    if not isinstance(url, str):
        return None
    match = _DATA_URL.fullmatch(url)
    if match:
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": match[1], "data": match[2]},
        }
    if url.startswith(("https://", "http://")):
        return {"type": "image", "source": {"type": "url", "url": url}}
    return None


def _image(item: Mapping[str, Any]) -> Block | None:
    kind = item.get("type")
    if kind == "image_url":
        image = item.get("image_url")
        return _image_from_url(image.get("url") if isinstance(image, Mapping) else image)
    if kind != "image":
        return None
    source = item.get("source")
    if isinstance(source, Mapping):  # Anthropic's own shape
        if source.get("type") == "base64":
            media_type, data = source.get("media_type"), source.get("data")
            if isinstance(media_type, str) and isinstance(data, str):
                return {
                    "type": "image",
                    "source": {"type": "base64", "media_type": media_type, "data": data},
                }
        if source.get("type") == "url":
            return _image_from_url(source.get("url"))
        return None
    data = item.get("base64")
    if data is None and item.get("source_type") == "base64":
        data = item.get("data")
    media_type = item.get("mime_type") or item.get("media_type")
    if isinstance(data, str) and isinstance(media_type, str):
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }
    if item.get("source_type", "url") == "url":
        return _image_from_url(item.get("url"))
    return None


def _opaque(item: Any) -> Block:
    return {"type": OPAQUE, "block": jsonable(item)}


def _entry(item: Any) -> Entry:
    """One content item: (item, history block, block sent)."""
    if isinstance(item, str):
        if item:
            block = {"type": "text", "text": item}
            return item, block, block
        return item, _opaque(item), None
    if isinstance(item, Mapping):
        kind = item.get("type")
        if kind == "text":
            text = item.get("text")
            if isinstance(text, str) and text:
                block = {"type": "text", "text": text}
                return item, block, block
        elif kind in ("image", "image_url"):
            image = _image(item)
            if image is not None:
                return item, image, image
    return item, _opaque(item), None


def _items(content: Any) -> list[Any]:
    return list(content) if isinstance(content, list) else [content]


def _text_piece(message: BaseMessage, role: str) -> _Piece:
    content = message.content
    entries = tuple(_entry(item) for item in _items(content))
    return _Piece(message, role, entries, text=content if isinstance(content, str) else None)


def _tool_input(args: Any) -> dict[str, Any]:
    if isinstance(args, Mapping):
        value = jsonable(args)
        return value if isinstance(value, dict) else {}
    if isinstance(args, str):
        try:
            parsed = json.loads(args)
        except ValueError:
            return {"arguments": args}
        return _tool_input(parsed) if isinstance(parsed, Mapping) else {"arguments": args}
    return {}


def _ai_piece(message: AIMessage) -> _Piece:
    calls: list[Entry] = []
    call_ids: set[str] = set()
    invalid_ids: set[str] = set()
    for position, call in enumerate(message.tool_calls):
        call_id = call.get("id") or f"call_{position}"
        block = {
            "type": "tool_use",
            "id": call_id,
            "name": call.get("name") or "unknown",
            "input": _tool_input(call.get("args")),
        }
        calls.append((call, block, block))
        call_ids.add(call_id)
    for invalid in message.invalid_tool_calls:
        invalid_id = invalid.get("id")
        if not invalid_id or invalid_id in call_ids:
            continue  # without an id nothing answers it; LangChain sends it as it is
        block = {
            "type": "tool_use",
            "id": invalid_id,
            "name": invalid.get("name") or "unknown",
            "input": _tool_input(invalid.get("args")),
        }
        calls.append((invalid, block, block))
        invalid_ids.add(invalid_id)
    content = message.content
    known = call_ids | invalid_ids
    entries = [
        _entry(item)
        for item in _items(content)
        if not (
            isinstance(item, Mapping)
            and item.get("type") in ("tool_use", "tool_call")
            and item.get("id") in known
        )
    ]
    text = content if isinstance(content, str) and not calls else None
    if isinstance(content, str) and calls and not content:
        entries = []  # "" beside tool calls is LangChain's "no text"
    return _Piece(
        message,
        "assistant",
        (*entries, *calls),
        text=text,
        call_ids=frozenset(call_ids),
        invalid_ids=frozenset(invalid_ids),
    )


def _tool_piece(message: ToolMessage) -> _Piece:
    content = message.content
    inner: tuple[Entry, ...] = ()
    history: Block = {"type": "tool_result", "tool_use_id": message.tool_call_id or "missing"}
    sent: Block = dict(history)
    if isinstance(content, str):
        history["content"] = sent["content"] = content
    else:
        inner = tuple(_entry(item) for item in _items(content))
        history["content"] = [entry[1] for entry in inner]
        sent["content"] = [entry[2] for entry in inner if entry[2] is not None]
    if message.status == "error":
        history["is_error"] = sent["is_error"] = True
    return _Piece(message, "tool", ((message, history, sent),), inner=inner)


def _system_piece(message: BaseMessage) -> _Piece:
    block = {"type": OPAQUE, "system": str(message.text)}
    return _Piece(message, "user", ((message, block, None),))


def _piece(message: BaseMessage) -> _Piece:
    if isinstance(message, AIMessage):
        return _ai_piece(message)
    if isinstance(message, ToolMessage):
        return _tool_piece(message)
    if isinstance(message, SystemMessage):
        return _system_piece(message)
    role = getattr(message, "role", None)  # a ChatMessage
    if role in ("assistant", "ai"):
        return _text_piece(message, "assistant")
    return _text_piece(message, "user")


def _role(piece: _Piece) -> str:
    return "user" if piece.role == "tool" else piece.role


def _group_message(group: Sequence[_Piece]) -> dict[str, Any]:
    role = _role(group[0])
    if len(group) == 1 and group[0].text is not None:
        return {"role": role, "content": group[0].text}
    return {"role": role, "content": [entry[1] for piece in group for entry in piece.entries]}


class _Converted:
    """``request.messages`` in the Anthropic shape: leading system text, groups, their dicts."""

    __slots__ = ("groups", "history", "leading", "system")

    def __init__(self, messages: Sequence[BaseMessage], memo: dict[Any, Any]) -> None:
        fresh: dict[Any, Any] = {}
        start = 0
        while start < len(messages) and isinstance(messages[start], SystemMessage):
            start += 1
        self.leading: list[BaseMessage] = list(messages[:start])
        self.system = [str(message.text) for message in self.leading if message.text]
        pieces: list[_Piece] = []
        for message in messages[start:]:
            known = memo.get(id(message))
            content = message.content
            calls = getattr(message, "tool_calls", None)
            if (
                known is not None
                and known[0] is message
                and known[1] is content
                and known[2] is calls
            ):
                piece = known[3]
            else:
                piece = _piece(message)
            fresh[id(message)] = (message, content, calls, piece)
            pieces.append(piece)
        self.groups: list[list[_Piece]] = []
        for piece in pieces:
            if self.groups and _role(piece) == "user" and _role(self.groups[-1][0]) == "user":
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


def _same(left: Any, right: Any) -> bool:
    return left is right


def from_langchain(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """Anthropic-shaped dicts for LangChain messages, as the middleware sends them to the session
    with its opaque blocks left out: what a provider would be sent (leading system messages
    excluded). For checks such as :func:`windowkeeper.validate_messages`."""
    converted = _Converted(messages, {})
    output = []
    for message in converted.history:
        content = message["content"]
        if isinstance(content, list):
            content = [
                _sent_result(block) if block.get("type") == "tool_result" else block
                for block in content
                if not is_opaque(block)
            ]
        output.append({"role": message["role"], "content": content})
    return output


def _sent_result(block: Block) -> Block:
    content = block.get("content")
    if isinstance(content, list):
        return {**block, "content": [inner for inner in content if not is_opaque(inner)]}
    return block
