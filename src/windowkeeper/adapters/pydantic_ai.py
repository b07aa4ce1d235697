"""PydanticAI v2: :class:`WindowkeeperCapability`, a capability for ``Agent(capabilities=[...])``.

::

    from pydantic_ai import Agent
    from windowkeeper.adapters.pydantic_ai import WindowkeeperCapability

    agent = Agent(
        "anthropic:claude-sonnet-4-5",
        instructions=SYSTEM,
        capabilities=[WindowkeeperCapability(task_root="tasks")],
    )
    result = agent.run_sync("Add pagination to the API.")
    more = agent.run_sync("Now the tests.", message_history=result.all_messages())

The capability works in ``prepare_model_request``, the hook PydanticAI runs before each attempt
at a model request once the serving model is known (the one meant for context-window fitting):
it converts ``request_context.messages`` to Anthropic-shaped dicts, ``sync``\\ s the
conversation's :class:`~windowkeeper.ContextSession` to them, ``prepare``\\ s the request with the
instructions, the tool definitions and the output reserve, and replaces
``request_context.messages`` with PydanticAI messages for what the session sends: the original
``ModelRequest``/``ModelResponse`` objects wherever a message is sent unchanged. That list is
for this attempt only: the run's history (``ctx.messages``, ``result.all_messages()``) keeps
every message. ``after_model_request`` records the response's ``usage``. One session per
conversation: ``ctx.conversation_id`` (which PydanticAI resolves from ``conversation_id=``, from
the ``message_history`` or makes new).

Conversion rules (each message object is converted once; the conversion is remembered while the
message and its parts stay the same):

- a ``ModelRequest`` is one user message (consecutive ones make one): a ``ToolReturnPart`` is a
  ``tool_result`` (its ``model_response_str()``, its image files as images; ``'failed'`` and
  ``'retried'`` outcomes are ``is_error``), a ``UserPromptPart`` its text and images, a
  ``RetryPromptPart`` answering a tool a ``tool_result`` with ``is_error``, one answering none
  and a ``RetryFeedbackPart`` the text the model is shown;
- a ``ModelResponse`` is one assistant message: ``TextPart`` text, ``ToolCallPart`` a
  ``tool_use`` (``args_as_dict()``);
- everything else (``SystemPromptPart``, ``ThinkingPart``, native tool parts, files, deltas,
  cache points, other media) is opaque: counted by its text, never edited, always sent where it
  stood.

A message the session changed (a masked or clipped tool result, the truncation notice, merged
runs of one role) is sent as a ``dataclasses.replace`` copy of the original with the new parts; a
tool result whose call is hidden becomes user text.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import pydantic_core
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    ERROR_OUTCOMES,
    BinaryContent,
    ImageUrl,
    InstructionPart,
    ModelMessage,
    ModelRequest,
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
from pydantic_ai.tools import AgentDepsT, RunContext

from .._errors import ConfigurationError
from ..core._usage import TokenUsage
from ..core._window import ContextWindowInfo
from ..session._session import ContextSession, Prepared, Synced
from . import (
    Conversation,
    SessionFactory,
    Sessions,
    StoreFactory,
    is_opaque,
    jsonable,
    merge_blocks,
    sent_blocks,
    sources,
    usage_counts,
)

if TYPE_CHECKING:
    from pydantic_ai.models import ModelRequestContext

__all__ = ["WindowkeeperCapability", "from_pydantic_ai"]

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


# -- PydanticAI -> Anthropic -------------------------------------------------------------------


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


# -- Anthropic -> PydanticAI -------------------------------------------------------------------


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
            view.append(_rebuild_response(message, group))
        else:
            view.append(_rebuild_request(message, group, names))
    return view


# -- the capability ------------------------------------------------------------------------------


def _tool_schemas(context: ModelRequestContext) -> list[dict[str, Any]]:
    parameters = context.model_request_parameters
    return [
        {
            "name": tool.name,
            "description": tool.description or "",
            "input_schema": jsonable(tool.parameters_json_schema),
        }
        for tool in [*parameters.function_tools, *parameters.output_tools]
    ]


def _system(context: ModelRequestContext) -> str | None:
    parts = context.model_request_parameters.instruction_parts
    if parts:
        return InstructionPart.join(parts)
    for message in reversed(context.messages):
        if isinstance(message, ModelRequest):
            return message.instructions
    return None


@dataclass
class WindowkeeperCapability(AbstractCapability[AgentDepsT]):
    """Keeps each conversation's model requests within the context window (see the module
    docstring).

    ``context_window`` (tokens, or a :class:`~windowkeeper.ContextWindowInfo`) or ``model`` (an
    id for :func:`windowkeeper.model_window`) sets the window; with neither, the serving
    model's ``model_name`` is looked up when a conversation starts. Persistence, at most one of:
    ``task_root`` (one task folder per conversation, ``task_root/<conversation id>``),
    ``store_factory`` (``conversation id -> SessionStore``), ``session_factory``
    (``conversation id -> ContextSession`` in the default Anthropic format, for full control).
    ``max_output_tokens`` is reserved for the answer (default: the request's ``max_tokens``
    setting); ``session_options`` go to each :class:`ContextSession` (``max_result_share``,
    ``mask_keep_recent``, ``shrink_target``, ``detector``, ...). A run without a conversation id
    uses ``default_conversation_id``.
    """

    context_window: int | ContextWindowInfo | None = None
    model: str | None = field(default=None, kw_only=True)
    task_root: str | os.PathLike[str] | None = field(default=None, kw_only=True)
    store_factory: StoreFactory | None = field(default=None, kw_only=True, repr=False)
    session_factory: SessionFactory | None = field(default=None, kw_only=True, repr=False)
    max_output_tokens: int | None = field(default=None, kw_only=True)
    session_options: Mapping[str, Any] = field(default_factory=dict, kw_only=True)
    default_conversation_id: str = field(default="default", kw_only=True)
    _sessions: Sessions = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        value = self.max_output_tokens
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            raise ConfigurationError(f"max_output_tokens must be a non-negative int, got {value!r}")
        if not isinstance(self.session_options, Mapping):
            raise ConfigurationError(
                "session_options must be a mapping of ContextSession arguments"
            )
        self._sessions = Sessions(
            context_window=self.context_window,
            model=self.model,
            task_root=self.task_root,
            store_factory=self.store_factory,
            session_factory=self.session_factory,
            options=self.session_options,
            adapter="WindowkeeperCapability",
        )

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds sessions and callables: not part of an agent spec

    # -- what it holds ---------------------------------------------------------------------

    def session(self, conversation_id: str | None = None) -> ContextSession:
        """The session of ``conversation_id`` (default: the default one), made or resumed now."""
        return self._conversation(conversation_id, None).session

    def last_prepared(self, conversation_id: str | None = None) -> Prepared | None:
        """What the session prepared for the conversation's latest model request, or None."""
        return self._conversation(conversation_id, None).last_prepared

    def last_synced(self, conversation_id: str | None = None) -> Synced | None:
        """What the latest ``sync`` did for the conversation: messages kept, appended, dropped."""
        return self._conversation(conversation_id, None).last_synced

    @property
    def conversation_ids(self) -> list[str]:
        """The conversations that have a session in this capability."""
        return self._sessions.known()

    def forget(self, conversation_id: str) -> None:
        """Drop the session of ``conversation_id`` (closing its store); persisted state stays."""
        self._sessions.forget(conversation_id)

    def close(self) -> None:
        """Close every session's storage backend."""
        self._sessions.close()

    # -- the hooks -------------------------------------------------------------------------

    async def prepare_model_request(
        self,
        ctx: RunContext[AgentDepsT],
        request_context: ModelRequestContext,
    ) -> ModelRequestContext:
        hint = getattr(request_context.model, "model_name", None)
        conversation = self._conversation(
            ctx.conversation_id, hint if isinstance(hint, str) else None
        )
        with conversation.lock:
            converted = _Converted(request_context.messages, conversation.memo)
        if not converted.history:
            return request_context
        prepared = conversation.prepare(
            converted.history,
            system=_system(request_context),
            tools=_tool_schemas(request_context),
            max_output_tokens=self._reserve(request_context),
        )
        request_context.messages = _view(converted, prepared)
        return request_context

    async def after_model_request(
        self,
        ctx: RunContext[AgentDepsT],
        *,
        request_context: ModelRequestContext,
        response: ModelResponse,
    ) -> ModelResponse:
        usage = response.usage
        if not usage.unmeasured_requests:
            counts = usage_counts(
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_tokens,
                usage.cache_write_tokens,
            )
            if counts is not None:
                conversation = self._conversation(ctx.conversation_id, None)
                if conversation.last_prepared is not None:
                    conversation.record_usage(TokenUsage(*counts))
        return response

    # -- inside ----------------------------------------------------------------------------

    def _conversation(self, conversation_id: str | None, model_hint: str | None) -> Conversation:
        key = conversation_id if conversation_id is not None else self.default_conversation_id
        return self._sessions.get(key, model_hint=model_hint)

    def _reserve(self, request_context: ModelRequestContext) -> int | None:
        if self.max_output_tokens is not None:
            return self.max_output_tokens
        value = (request_context.model_settings or {}).get("max_tokens")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
        return None
