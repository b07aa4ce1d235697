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

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import InstructionPart, ModelRequest, ModelResponse
from pydantic_ai.tools import AgentDepsT, RunContext

from .._errors import ConfigurationError
from ..core._usage import TokenUsage
from ..core._window import ContextWindowInfo
from ..session._session import ContextSession, Prepared, Synced
from . import Conversation, SessionFactory, Sessions, StoreFactory, jsonable, usage_counts
from ._pydantic_ai_back import _view
from ._pydantic_ai_in import _Converted, from_pydantic_ai

if TYPE_CHECKING:
    from pydantic_ai.models import ModelRequestContext

__all__ = ["WindowkeeperCapability", "from_pydantic_ai"]


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
