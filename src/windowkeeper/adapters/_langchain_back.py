"""Anthropic messages back to LangChain messages: the request the middleware sends (see adapters.langchain)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from ..session._session import Prepared
from . import jsonable, merge_blocks, sent_blocks, sent_from, sources
from ._langchain_in import Block, _Converted, _Piece

__all__ = []


def _back(block: Block) -> Any:
    """A LangChain content block for a block the session made or changed."""
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block.get("text", "")}
    if kind == "image":
        source = block.get("source")
        if isinstance(source, Mapping) and source.get("type") == "base64":
            return {
                "type": "image",
                "base64": source.get("data"),
                "mime_type": source.get("media_type"),
            }
        if isinstance(source, Mapping) and source.get("type") == "url":
            return {"type": "image", "url": source.get("url")}
    return jsonable(block)


def _collapsed(items: list[Any], was_string: bool) -> str | list[Any]:
    """The content for ``items``: a string where the original was one and one text is left."""
    if not items:
        return ""
    if was_string and len(items) == 1:
        item = items[0]
        if isinstance(item, str):
            return item
        if isinstance(item, Mapping) and set(item) == {"type", "text"} and item["type"] == "text":
            return str(item["text"])
    return items


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n\n".join(
        str(block.get("text", "")) if isinstance(block, Mapping) else str(block)
        for block in content
        if not isinstance(block, Mapping) or block.get("type") == "text"
    )


def _rebuild_assistant(message: Mapping[str, Any], group: Sequence[_Piece]) -> list[BaseMessage]:
    sent = sent_blocks(message.get("content"))
    uses = [block for block in sent if block.get("type") == "tool_use"]
    others = [block for block in sent if block.get("type") != "tool_use"]
    base = group[0].message if group else None
    pairs = [
        (entry[0], entry[2])
        for piece in group
        for entry in piece.entries
        if not (entry[2] is not None and entry[2].get("type") == "tool_use")
    ]
    items = merge_blocks(pairs, others, _back)
    calls_by_id: dict[str, tuple[Any, Block]] = {}
    invalid: set[str] = set()
    for piece in group:
        invalid |= piece.invalid_ids
        for entry in piece.entries:
            if entry[2] is not None and entry[2].get("type") == "tool_use":
                calls_by_id[entry[2]["id"]] = (entry[0], entry[2])
    tool_calls: list[Any] = []
    invalid_calls: list[Any] = []
    for use in uses:
        known = calls_by_id.get(use["id"])
        if use["id"] in invalid and known is not None:
            invalid_calls.append(known[0])
        elif known is not None and known[1] == use:
            tool_calls.append(known[0])
        else:
            original = dict(known[0]) if known is not None else {"type": "tool_call"}
            tool_calls.append(
                {**original, "name": use["name"], "args": jsonable(use["input"]), "id": use["id"]}
            )
    was_string = isinstance(base.content, str) if base is not None else True
    content = _collapsed(items, was_string)
    if isinstance(base, AIMessage):
        return [
            base.model_copy(
                update={
                    "content": content,
                    "tool_calls": tool_calls,
                    "invalid_tool_calls": invalid_calls,
                }
            )
        ]
    if base is not None and not tool_calls:
        return [base.model_copy(update={"content": content})]
    return [AIMessage(content=content, tool_calls=tool_calls)]


def _rebuild_tool(result: Block, piece: _Piece | None) -> BaseMessage:
    content = result.get("content", "")
    error = bool(result.get("is_error"))
    if piece is None:
        new_content: str | list[Any] = (
            content if isinstance(content, str) else [_back(b) for b in content]
        )
        return ToolMessage(
            content=new_content,
            tool_call_id=result["tool_use_id"],
            status="error" if error else "success",
        )
    original = piece.message
    if isinstance(content, str):
        new_content = content
    else:
        pairs = [(entry[0], entry[2]) for entry in piece.inner]
        new_content = _collapsed(
            merge_blocks(pairs, content, _back), isinstance(original.content, str)
        )
    update: dict[str, Any] = {"content": new_content}
    if result["tool_use_id"] != getattr(original, "tool_call_id", None):
        update["tool_call_id"] = result["tool_use_id"]
    return original.model_copy(update=update)


def _rebuild_user(message: Mapping[str, Any], group: Sequence[_Piece]) -> list[BaseMessage]:
    sent = sent_blocks(message.get("content"))
    results = [block for block in sent if block.get("type") == "tool_result"]
    rest = [block for block in sent if block.get("type") != "tool_result"]
    tools = {
        piece.entries[0][2]["tool_use_id"]: piece
        for piece in group
        if piece.role == "tool" and piece.entries[0][2] is not None
    }
    output: list[BaseMessage] = []
    for result in results:
        piece = tools.get(result.get("tool_use_id", ""))
        if piece is not None and piece.entries[0][2] == result:
            output.append(piece.message)
        else:
            output.append(_rebuild_tool(result, piece))
    systems = [piece for piece in group if isinstance(piece.message, SystemMessage)]
    humans = [piece for piece in group if piece.role == "user" and piece not in systems]
    output.extend(piece.message for piece in systems)
    if [block for piece in humans for block in piece.wire] == rest:
        output.extend(piece.message for piece in humans)
        return output
    pairs = [(entry[0], entry[2]) for piece in humans for entry in piece.entries]
    items = merge_blocks(pairs, rest, _back)
    if not items:
        return output
    base = humans[0].message if humans else None
    if base is not None:
        content = _collapsed(items, len(humans) == 1 and isinstance(base.content, str))
        output.append(base.model_copy(update={"content": content}))
    else:
        output.append(HumanMessage(content=_collapsed(items, True)))
    return output


def _view(converted: _Converted, prepared: Prepared) -> list[AnyMessage]:
    """LangChain messages for what the session sends (leading system messages first)."""
    roles = [message["role"] for message in converted.history]
    runs = sources(roles, prepared.deleted_range, prepared.messages)
    view: list[BaseMessage] = list(converted.leading)
    for position, message in enumerate(prepared.messages):
        group, unchanged = sent_from(converted.groups, runs, position, message)
        if unchanged:
            view.extend(piece.message for piece in group)
        elif message.get("role") == "assistant":
            view.extend(_rebuild_assistant(message, group))
        else:
            view.extend(_rebuild_user(message, group))
    return view  # type: ignore[return-value]  # every item is one of AnyMessage's classes
