"""LangChain v1: :class:`WindowkeeperMiddleware`, an ``AgentMiddleware`` for ``create_agent``.

::

    from langchain.agents import create_agent
    from windowkeeper.adapters.langchain import WindowkeeperMiddleware

    agent = create_agent(
        "anthropic:claude-sonnet-4-5",
        tools=[read_file],
        system_prompt=SYSTEM,
        middleware=[WindowkeeperMiddleware(task_root="tasks")],
        checkpointer=InMemorySaver(),
    )
    agent.invoke({"messages": [...]}, {"configurable": {"thread_id": "1234"}})

On every model call (``wrap_model_call`` and ``awrap_model_call``) the middleware converts
``request.messages`` to Anthropic-shaped dicts, ``sync``\\ s the thread's
:class:`~windowkeeper.ContextSession` to them, ``prepare``\\ s the request with the system prompt,
the tools as JSON schemas and the output reserve, and calls the model with
``request.override(messages=...)``: LangChain message objects, the original ones wherever the
session sends a message unchanged. The graph state keeps the full history. Then the
``usage_metadata`` of the model's answer is recorded.

Conversion rules (each message object is converted once; the conversion is remembered while the
object and its content stay the same):

- a run of ``ToolMessage``\\ s and the ``HumanMessage``\\ s after it make one user message: one
  ``tool_result`` per tool message (``status="error"`` is ``is_error``), then the human content;
- an ``AIMessage`` is one assistant message: its text, then one ``tool_use`` per tool call (and
  per invalid tool call, which LangChain answers with an error tool message); ``tool_use`` or
  ``tool_call`` blocks in its content that repeat a tool call are not counted twice;
- text blocks and strings are text; image blocks (standard ``image``, ``image_url`` data or
  https URLs, Anthropic ``image``) are Anthropic images; any other block (thinking, reasoning,
  provider-native parts) is kept opaque: counted, never edited, always sent where it stood;
- system messages before the first other message join ``request.system_message`` as the system
  prompt; a system message later in the conversation is an opaque part of the user message.

A message the session changed (a masked or clipped tool result, the truncation notice, merged
runs of one role) is sent as a copy of the original (``model_copy``, keeping its ids and
metadata) with the new content; a tool result whose call is hidden becomes human text.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.config import get_config

from .._errors import ConfigurationError
from ..core._usage import TokenUsage
from ..core._window import ContextWindowInfo
from ..session._session import ContextSession, Prepared, Synced
from . import (
    Conversation,
    SessionFactory,
    Sessions,
    StoreFactory,
    default_conversation,
    is_opaque,
    jsonable,
    merge_blocks,
    renamed,
    sent_blocks,
    sources,
    usage_counts,
    warn_renamed,
)

__all__ = ["WindowkeeperMiddleware", "from_langchain"]

OPAQUE = "x-langchain"
"""The block type under which the history keeps what the session must not touch."""

_DATA_URL = re.compile(r"data:([^;,]+);base64,(.*)", re.DOTALL)

Block = dict[str, Any]
Entry = tuple[Any, Block, Block | None]  # (LangChain item, history block, block sent or None)
ModelResult = ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]


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


# -- LangChain -> Anthropic --------------------------------------------------------------------


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


# -- Anthropic -> LangChain --------------------------------------------------------------------


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
        group = (
            [piece for index in runs[position] for piece in converted.groups[index]]
            if runs is not None
            else []
        )
        if group and sent_blocks(message.get("content")) == [
            block for piece in group for block in piece.wire
        ]:
            view.extend(piece.message for piece in group)
        elif message.get("role") == "assistant":
            view.extend(_rebuild_assistant(message, group))
        else:
            view.extend(_rebuild_user(message, group))
    return view  # type: ignore[return-value]  # every item is one of AnyMessage's classes


# -- the middleware ------------------------------------------------------------------------------


def _tool_schema(tool: Any) -> dict[str, Any]:
    if isinstance(tool, Mapping):
        if isinstance(tool.get("function"), Mapping):  # OpenAI's shape
            function = tool["function"]
            return {
                "name": str(function.get("name", "")),
                "description": str(function.get("description", "")),
                "input_schema": jsonable(function.get("parameters", {})),
            }
        value = jsonable(tool)
        return value if isinstance(value, dict) else {}
    return _tool_schema(convert_to_openai_tool(tool))


def _thread_id(request: ModelRequest[Any]) -> str | None:
    info = getattr(getattr(request, "runtime", None), "execution_info", None)
    thread = getattr(info, "thread_id", None)
    if thread is None:
        try:
            configurable = get_config().get("configurable") or {}
        except (RuntimeError, LookupError):  # outside a graph run
            configurable = {}
        thread = configurable.get("thread_id")
    return None if thread is None else str(thread)


def _response_usage(response: Any) -> TokenUsage | None:
    if isinstance(response, ExtendedModelResponse):
        response = response.model_response
    messages = response.result if isinstance(response, ModelResponse) else [response]
    for message in messages:
        metadata = getattr(message, "usage_metadata", None)
        if isinstance(message, AIMessage) and metadata:
            details = metadata.get("input_token_details") or {}
            counts = usage_counts(
                metadata.get("input_tokens"),
                metadata.get("output_tokens"),
                details.get("cache_read"),
                details.get("cache_creation"),
            )
            if counts is not None:
                return TokenUsage(*counts)
    return None


class WindowkeeperMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Keeps each thread's model requests within the context window (see the module docstring).

    ``context_window`` (tokens, or a :class:`~windowkeeper.ContextWindowInfo`) or ``model`` (an
    id for :func:`windowkeeper.model_window`) sets the window; with neither, the window of the
    chat model's ``model_name``/``model`` is looked up when a thread starts. One session per
    thread id (``runtime.execution_info.thread_id``, else ``configurable.thread_id``; without
    one, ``default_conversation_id``; ``default_thread_id`` is its deprecated older name), or per
    ``conversation_id_from(request)`` (``thread_key``, its deprecated older name) when given. Persistence, at
    most one of: ``task_root`` (one task folder per thread, ``task_root/<thread id>``),
    ``store_factory`` (``thread id -> SessionStore``), ``session_factory`` (``thread id ->
    ContextSession`` in the default Anthropic format, for full control). The output reserve is what the model sends (the request's ``max_tokens`` setting or the chat
    model's ``max_tokens``), or ``max_output_tokens`` when the model exposes neither or it is
    larger; other keyword arguments go to each :class:`ContextSession`
    (``max_result_share``, ``mask_keep_recent``, ``shrink_target``, ``detector``, ...).

    Not for sharing between agents whose conversations share a thread id (a subagent): give each
    agent its own middleware.
    """

    def __init__(
        self,
        context_window: int | ContextWindowInfo | None = None,
        *,
        model: str | None = None,
        task_root: str | os.PathLike[str] | None = None,
        store_factory: StoreFactory | None = None,
        session_factory: SessionFactory | None = None,
        max_output_tokens: int | None = None,
        default_conversation_id: str | None = None,
        default_thread_id: str | None = None,
        conversation_id_from: Callable[[ModelRequest[Any]], str | None] | None = None,
        thread_key: Callable[[ModelRequest[Any]], str | None] | None = None,
        **session_options: Any,
    ) -> None:
        super().__init__()
        if max_output_tokens is not None and (
            isinstance(max_output_tokens, bool)
            or not isinstance(max_output_tokens, int)
            or max_output_tokens < 0
        ):
            raise ConfigurationError(
                f"max_output_tokens must be a non-negative int, got {max_output_tokens!r}"
            )
        default = default_conversation(
            default_conversation_id, default_thread_id, "default_thread_id"
        )
        self._sessions = Sessions(
            context_window=context_window,
            model=model,
            task_root=task_root,
            store_factory=store_factory,
            session_factory=session_factory,
            options=session_options,
            adapter="WindowkeeperMiddleware",
        )
        self._max_output_tokens = max_output_tokens
        self._default_thread = default
        self._thread_key = renamed(
            conversation_id_from, thread_key, "thread_key", "conversation_id_from"
        )
        self._tools: dict[int, tuple[Any, dict[str, Any]]] = {}
        self._tools_lock = threading.Lock()

    # -- what it holds ---------------------------------------------------------------------

    # ``thread_id=`` (and ``thread_ids``) are the deprecated older names of ``conversation_id``.

    def session(
        self, conversation_id: str | None = None, *, thread_id: str | None = None
    ) -> ContextSession:
        """The session of ``conversation_id`` (default: the default one), made or resumed now."""
        return self._conversation(renamed(conversation_id, thread_id, "thread_id"), None).session

    def last_prepared(
        self, conversation_id: str | None = None, *, thread_id: str | None = None
    ) -> Prepared | None:
        """What the session prepared for the conversation's latest model call, or None."""
        conversation = renamed(conversation_id, thread_id, "thread_id")
        return self._conversation(conversation, None).last_prepared

    def last_synced(
        self, conversation_id: str | None = None, *, thread_id: str | None = None
    ) -> Synced | None:
        """What the latest ``sync`` did for the conversation: messages kept, appended, dropped."""
        conversation = renamed(conversation_id, thread_id, "thread_id")
        return self._conversation(conversation, None).last_synced

    @property
    def conversation_ids(self) -> list[str]:
        """The conversations (threads) that have a session in this middleware."""
        return self._sessions.known()

    @property
    def thread_ids(self) -> list[str]:
        """Deprecated: :attr:`conversation_ids`."""
        warn_renamed("thread_ids", "conversation_ids")
        return self.conversation_ids

    def forget(self, conversation_id: str | None = None, *, thread_id: str | None = None) -> None:
        """Drop the session of ``conversation_id`` (closing its store); persisted state stays."""
        conversation = renamed(conversation_id, thread_id, "thread_id")
        if conversation is None:
            raise ConfigurationError("forget() needs the conversation_id to drop")
        self._sessions.forget(conversation)

    def close(self) -> None:
        """Close every session's storage backend."""
        self._sessions.close()

    # -- the hooks -------------------------------------------------------------------------

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResult:
        conversation, windowed = self._windowed(request)
        response = handler(windowed)
        self._record(conversation, response)
        return response

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResult:
        conversation, windowed = self._windowed(request)
        response = await handler(windowed)
        self._record(conversation, response)
        return response

    # -- inside ----------------------------------------------------------------------------

    def _conversation(self, conversation_id: str | None, model_hint: str | None) -> Conversation:
        key = conversation_id if conversation_id is not None else self._default_thread
        return self._sessions.get(key, model_hint=model_hint)

    def _windowed(self, request: ModelRequest[Any]) -> tuple[Conversation, ModelRequest[Any]]:
        thread = self._thread_key(request) if self._thread_key is not None else _thread_id(request)
        hint = getattr(request.model, "model_name", None) or getattr(request.model, "model", None)
        conversation = self._conversation(thread, hint if isinstance(hint, str) else None)
        with conversation.lock:
            converted = _Converted(request.messages, conversation.memo)
        if not converted.history:  # nothing but system messages: nothing to keep in a window
            return conversation, request
        system = [str(request.system_message.text)] if request.system_message is not None else []
        prepared = conversation.prepare(
            converted.history,
            system="\n\n".join([*system, *converted.system]),
            tools=self._tool_schemas(request.tools),
            max_output_tokens=self._reserve(request),
        )
        return conversation, request.override(messages=_view(converted, prepared))

    def _record(self, conversation: Conversation, response: Any) -> None:
        usage = _response_usage(response)
        if usage is not None:
            conversation.record_usage(usage)

    def _reserve(self, request: ModelRequest[Any]) -> int | None:
        """What the model reserves for its answer: its own ``max_tokens`` where it exposes it
        (the provider counts that against the window), ``max_output_tokens`` when larger."""
        settings = request.model_settings or {}
        sent = None
        for value in (
            settings.get("max_tokens"),
            settings.get("max_completion_tokens"),
            getattr(request.model, "max_tokens", None),
        ):
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                sent = value
                break
        given = self._max_output_tokens
        if sent is None or given is None:
            return sent if given is None else given
        return max(sent, given)

    def _tool_schemas(self, tools: Sequence[Any]) -> list[dict[str, Any]]:
        schemas = []
        with self._tools_lock:
            if len(self._tools) > 4096:
                self._tools.clear()
            for tool in tools:
                known = self._tools.get(id(tool))
                if known is None or known[0] is not tool:
                    known = (tool, _tool_schema(tool))
                    self._tools[id(tool)] = known
                schemas.append(known[1])
        return schemas
