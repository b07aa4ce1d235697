"""Anthropic messages back to PydanticAI messages: the request the capability sends (see adapters.pydantic_ai)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

import pydantic_core
from pydantic_ai.messages import (
    BinaryContent,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from ..session._session import Prepared
from . import jsonable, merge_blocks, sent_blocks, sent_from, sources

if TYPE_CHECKING:
    pass

from ._pydantic_ai_in import Block, Entry, _Converted, _Item, _Piece

__all__ = []


def _result_text(block: Block) -> str:
    content = block.get("content", "")
    if isinstance(content, str):
        return content
    return "\n\n".join(
        str(inner.get("text", "")) for inner in content if inner.get("type") == "text"
    )


def _user_back(block: Block) -> Any:
    """A user prompt part for a block the session made or changed."""
    kind = block.get("type")
    if kind == "text":
        return UserPromptPart(content=str(block.get("text", "")))
    source = block.get("source")
    if kind == "image" and isinstance(source, Mapping):
        if source.get("type") == "url" and isinstance(source.get("url"), str):
            return UserPromptPart(content=[ImageUrl(url=source["url"])])
        try:
            data = base64.b64decode(str(source.get("data", "")), validate=True)
        except (binascii.Error, ValueError):
            data = None
        if data is not None and isinstance(source.get("media_type"), str):
            return UserPromptPart(
                content=[BinaryContent(data=data, media_type=source["media_type"])]
            )
    return UserPromptPart(content=pydantic_core.to_json(block).decode())


def _regrouped(items: list[Any]) -> list[Any]:
    """Items of list-content user prompts put back into their parts."""
    output: list[Any] = []
    position = 0
    while position < len(items):
        item = items[position]
        if not isinstance(item, _Item):
            output.append(item)
            position += 1
            continue
        indices = [item.index]
        position += 1
        while (
            position < len(items)
            and isinstance(items[position], _Item)
            and items[position].part is item.part
        ):
            indices.append(items[position].index)
            position += 1
        content = item.part.content
        if indices == list(range(len(content))):
            output.append(item.part)
        else:
            output.append(replace(item.part, content=[content[index] for index in indices]))
    return output


def _changed_return(result: Block, original: Any, names: Mapping[str, str]) -> ToolReturnPart:
    text = _result_text(result)
    call_id = str(result.get("tool_use_id", ""))
    if isinstance(original, ToolReturnPart):
        try:
            return replace(original, content=text, tool_call_id=call_id)
        except (TypeError, ValueError):  # a typed part whose content must keep its shape
            pass
    name = getattr(original, "tool_name", None) or names.get(call_id, "unknown")
    outcome: Literal["success", "failed", "denied", "interrupted", "retried"]
    if isinstance(original, RetryPromptPart):
        outcome = "retried"
    elif isinstance(original, ToolReturnPart):
        outcome = original.outcome
    else:
        outcome = "failed" if result.get("is_error") else "success"
    return ToolReturnPart(tool_name=name, content=text, tool_call_id=call_id, outcome=outcome)


def _rebuild_request(
    message: Mapping[str, Any], group: Sequence[_Piece], names: Mapping[str, str]
) -> ModelRequest:
    sent = sent_blocks(message.get("content"))
    results = [block for block in sent if block.get("type") == "tool_result"]
    rest = [block for block in sent if block.get("type") != "tool_result"]
    returns: dict[str, Entry] = {}
    others: list[tuple[Any, Block | None]] = []
    for piece in group:
        for entry in piece.entries:
            if entry[1].get("type") == "tool_result":
                returns[entry[1]["tool_use_id"]] = entry
            else:
                others.append((entry[0], entry[2]))
    parts: list[Any] = []
    for result in results:
        known = returns.get(str(result.get("tool_use_id", "")))
        if known is not None and known[2] == result:
            parts.append(known[0])
        else:
            parts.append(_changed_return(result, known[0] if known else None, names))
    parts.extend(_regrouped(merge_blocks(others, rest, _user_back)))
    base = group[0].message if group else None
    if isinstance(base, ModelRequest):
        return replace(base, parts=parts)
    return ModelRequest(parts=parts)


def _rebuild_response(message: Mapping[str, Any], group: Sequence[_Piece]) -> ModelResponse:
    sent = sent_blocks(message.get("content"))
    calls = {
        part.tool_call_id: part
        for piece in group
        for part in getattr(piece.message, "parts", ())
        if isinstance(part, ToolCallPart)
    }

    def back(block: Block) -> Any:
        if block.get("type") == "tool_use":
            original = calls.get(block["id"])
            arguments = jsonable(block["input"])
            if original is not None:
                return replace(original, args=arguments)
            return ToolCallPart(block["name"], arguments, tool_call_id=block["id"])
        if block.get("type") == "text":
            return TextPart(content=str(block.get("text", "")))
        return TextPart(content=pydantic_core.to_json(block).decode())

    pairs = [(entry[0], entry[2]) for piece in group for entry in piece.entries]
    parts = merge_blocks(pairs, sent, back)
    base = group[0].message if group else None
    if isinstance(base, ModelResponse):
        return replace(base, parts=parts)
    return ModelResponse(parts=parts)


def _view(converted: _Converted, prepared: Prepared) -> list[ModelMessage]:
    roles = [message["role"] for message in converted.history]
    runs = sources(roles, prepared.deleted_range, prepared.messages)
    names = {
        str(block.get("id")): str(block.get("name"))
        for message in prepared.messages
        if message.get("role") == "assistant"
        for block in sent_blocks(message.get("content"))
        if block.get("type") == "tool_use"
    }
    view: list[ModelMessage] = []
    for position, message in enumerate(prepared.messages):
        group, unchanged = sent_from(converted.groups, runs, position, message)
        if unchanged:
            view.extend(piece.message for piece in group)
        elif message.get("role") == "assistant":
            view.append(_rebuild_response(message, group))
        else:
            view.append(_rebuild_request(message, group, names))
    return view
