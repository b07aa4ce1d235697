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

import os
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.messages import AIMessage
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
    jsonable,
    renamed,
    usage_counts,
    warn_renamed,
)
from ._langchain_back import _view
from ._langchain_in import _Converted, from_langchain

__all__ = ["WindowkeeperMiddleware", "from_langchain"]


ModelResult = ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]


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
