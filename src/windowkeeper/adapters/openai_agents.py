"""OpenAI Agents SDK: :class:`WindowkeeperInputFilter`, a ``call_model_input_filter`` for ``RunConfig``.

::

    from agents import Agent, RunConfig, Runner
    from windowkeeper.adapters.openai_agents import WindowkeeperInputFilter

    windowkeeper = WindowkeeperInputFilter(model="gpt-4.1", task_root="tasks")
    agent = Agent("coder", instructions=SYSTEM, model="gpt-4.1", tools=[read_file])
    result = Runner.run_sync(
        agent,
        "Add pagination to the API.",
        run_config=RunConfig(call_model_input_filter=windowkeeper, group_id="pagination"),
        hooks=windowkeeper.hooks,  # records each response's usage
        max_turns=200,
    )

The SDK calls the filter immediately before each model call with the run's input items (OpenAI
Responses input items: the whole conversation) and the agent's resolved instructions. The filter
turns the items into plain dicts (each item object once: a long run converts only what is
new), ``sync``\\ s the conversation's :class:`~windowkeeper.ContextSession` (``format=
"responses"``) to them, ``prepare``\\ s the request with the instructions and the system and
developer messages of the input as the system prompt, the agent's tool, handoff and output
schemas and the output reserve, and returns ``ModelInputData(input=prepared.messages,
instructions=...)``: the items the session sends, valid for the Responses API (every
``function_call`` with its output), within the window. That input is for that model call only:
the run's history (``result.to_input_list()``, an SDK ``Session``) keeps every item.

The conversation: ``conversation_id_from(call_model_data)`` when given (and not None), else the
``group_id`` of the run's trace (``RunConfig(group_id=...)`` or an enclosing
``trace(..., group_id=...)``; visible only while tracing is on), else
``default_conversation_id``.

Usage: ``CallModelData`` carries no usage, so the filter comes with run hooks,
:attr:`WindowkeeperInputFilter.hooks`, whose ``on_llm_end`` records the response's ``usage`` for
the request the filter prepared in the same run (``Runner.run(..., hooks=windowkeeper.hooks)``;
with hooks of your own, call :meth:`WindowkeeperInputFilter.record_response` from their
``on_llm_end``). Without them the session still keeps every request within its estimate, only
uncalibrated.

Not for server-managed conversations (``conversation_id=``, ``previous_response_id=``,
``auto_previous_response_id=``): there the server holds the history and the filter sees only
the new items.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, cast

from agents import Agent, AgentOutputSchema, AgentOutputSchemaBase, FunctionTool, Handoff, handoff
from agents.items import ModelResponse, TResponseInputItem
from agents.lifecycle import RunHooks
from agents.run_config import CallModelData, ModelInputData
from agents.run_context import RunContextWrapper
from agents.tracing import get_current_trace

from .._errors import ConfigurationError, MalformedMessageError
from ..core._usage import TokenUsage
from ..core._window import ContextWindowInfo
from ..formats import responses
from ..session._session import ContextSession, Prepared, Synced
from . import (
    Conversation,
    SessionFactory,
    Sessions,
    StoreFactory,
    default_conversation,
    folder_name,
    jsonable,
    renamed,
    usage_counts,
    warn_renamed,
)

__all__ = ["KeyFunction", "WindowkeeperInputFilter", "WindowkeeperRunHooks"]

KeyFunction = Callable[[CallModelData[Any]], str | None]
_SYSTEM_ROLES = frozenset({"system", "developer"})


# -- the SDK's items to plain dicts ----------------------------------------------------------


def _plain(item: Any) -> Any:
    """An input item as a plain JSON dict (a pydantic item through its ``model_dump``); anything
    else is returned as it is, for the session to refuse with its place."""
    if isinstance(item, Mapping):
        return jsonable(item)
    dump = getattr(item, "model_dump", None)
    if callable(dump) and not isinstance(item, type):
        return jsonable(dump(mode="json", exclude_unset=True))
    return item


def _plain_items(items: Sequence[Any], memo: dict[Any, Any]) -> list[Any]:
    """Every item as a plain dict; a dict item seen in the last call and equal to its plain
    form then is not converted again (``memo``: ``id(item) -> (item, plain)``)."""
    fresh: dict[Any, Any] = {}
    output = []
    for item in items:
        known = memo.get(id(item))
        if (
            known is not None
            and known[0] is item
            and isinstance(item, Mapping)
            and known[1] == item
        ):
            plain = known[1]
        else:
            plain = _plain(item)
        fresh[id(item)] = (item, plain)
        output.append(plain)
    memo.clear()
    memo.update(fresh)
    return output


def _system(instructions: str | None, items: Sequence[Any]) -> str | None:
    """The instructions and the text of the input's system and developer messages, joined."""
    parts = [instructions] if instructions else []
    for item in items:
        if (
            isinstance(item, dict)
            and item.get("type", "message") == "message"
            and item.get("role") in _SYSTEM_ROLES
        ):
            try:
                text = responses.to_anthropic([item]).system
            except MalformedMessageError:
                continue  # the session's sync names it
            if text:
                parts.append(text)
    return "\n\n".join(parts) or None


# -- what the request carries besides its input ------------------------------------------------


def _tool_schema(tool: Any) -> dict[str, Any]:
    if isinstance(tool, FunctionTool):
        return {
            "type": "function",
            "name": tool.name,
            "description": tool.description or "",
            "parameters": jsonable(tool.params_json_schema),
        }
    name = getattr(tool, "name", None)
    return {"type": str(name) if name else type(tool).__name__}


def _handoff_schema(target: Any) -> dict[str, Any] | None:
    if isinstance(target, Agent):
        target = handoff(target)
    if not isinstance(target, Handoff):
        return None
    return {
        "type": "function",
        "name": target.tool_name,
        "description": target.tool_description or "",
        "parameters": jsonable(target.input_json_schema),
    }


def _output_schema(output_type: Any) -> dict[str, Any] | None:
    if output_type is None or output_type is str:
        return None
    try:
        schema = (
            output_type
            if isinstance(output_type, AgentOutputSchemaBase)
            else AgentOutputSchema(output_type)
        )
        if schema.is_plain_text():
            return None
        return {
            "type": "json_schema",
            "name": schema.name(),
            "schema": jsonable(schema.json_schema()),
        }
    except Exception:  # the SDK refuses it itself when the run starts
        return None


def _model_hint(agent: Agent[Any]) -> str | None:
    model = agent.model
    if isinstance(model, str):
        return model or None
    name = getattr(model, "model", None)
    return name if isinstance(name, str) and name else None


def _response_usage(response: ModelResponse) -> TokenUsage | None:
    """The usage of the one request ``response`` answers; None when it measured nothing or sums
    several requests (only the last successful attempt of a retried request counts)."""
    usage = response.usage
    entries = [entry for entry in usage.request_usage_entries if entry.input_tokens > 0]
    source: Any
    if entries:
        source = entries[-1]
    elif usage.requests > 1:
        return None
    else:
        source = usage
    details = source.input_tokens_details
    counts = usage_counts(
        source.input_tokens,
        source.output_tokens,
        getattr(details, "cached_tokens", 0),
        getattr(details, "cache_write_tokens", 0),
    )
    return TokenUsage(*counts) if counts is not None else None


# -- sessions in the Responses format ----------------------------------------------------------


class _ResponsesSessions(Sessions):
    """:class:`Sessions` whose sessions take and return OpenAI Responses input items."""

    def _new_session(self, key: str, model_hint: str | None) -> ContextSession:
        if self._session_factory is not None:
            session = super()._new_session(key, model_hint)
            if session.format != "responses":
                raise ConfigurationError(
                    "session_factory must return a ContextSession(format='responses')"
                )
            return session
        options = dict(self._options)
        if self._root is not None:
            options["task_dir"] = self._root / folder_name(key)
        elif self._store_factory is not None:
            options["store"] = self._store_factory(key)
        model = self._model
        if self._window is None and model is None and model_hint:
            model = model_hint
        return ContextSession(self._window, model=model, format="responses", **options)


@dataclass(eq=False)
class _Pending:
    """The request the filter prepared last in a run (a context variable of the run's task)."""

    owner: WindowkeeperInputFilter
    conversation: Conversation
    prepared: Prepared
    recorded: bool = False


_PENDING: ContextVar[_Pending | None] = ContextVar("windowkeeper_openai_agents", default=None)


class WindowkeeperRunHooks(RunHooks[Any]):
    """Run hooks that record each model response's usage in its conversation's session."""

    def __init__(self, owner: WindowkeeperInputFilter) -> None:
        self._owner = owner

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        self._owner.record_response(response)


# -- the filter ---------------------------------------------------------------------------------


class WindowkeeperInputFilter:
    """Keeps each conversation's model requests within the context window (see the module
    docstring): pass it as ``RunConfig(call_model_input_filter=...)`` and its :attr:`hooks` as
    ``Runner.run(..., hooks=...)``.

    ``context_window`` (tokens, or a :class:`~windowkeeper.ContextWindowInfo`) or ``model`` (an
    id for :func:`windowkeeper.model_window`) sets the window; with neither, the agent's model
    (``Agent.model``, a name or a model object's ``model``) is looked up when a conversation
    starts. One session per conversation: ``conversation_id_from(call_model_data)`` (``key``, its
    deprecated older name) when it returns a string,
    else the run's trace ``group_id``, else ``default_conversation_id`` (``default_key`` is its
    deprecated older name). Persistence, at most one of:
    ``task_root`` (one task folder per conversation, ``task_root/<conversation id>``),
    ``store_factory`` (``conversation id -> SessionStore``), ``session_factory``
    (``conversation id -> ContextSession(format="responses")``,
    for full control). ``max_output_tokens`` is reserved for the answer (default: the agent's
    ``model_settings.max_tokens``); other keyword arguments go to each :class:`ContextSession`
    (``max_result_share``, ``mask_keep_recent``, ``shrink_target``, ``detector``, ...).
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
        conversation_id_from: KeyFunction | None = None,
        key: KeyFunction | None = None,
        default_conversation_id: str | None = None,
        default_key: str | None = None,
        **session_options: Any,
    ) -> None:
        if max_output_tokens is not None and (
            isinstance(max_output_tokens, bool)
            or not isinstance(max_output_tokens, int)
            or max_output_tokens < 0
        ):
            raise ConfigurationError(
                f"max_output_tokens must be a non-negative int, got {max_output_tokens!r}"
            )
        key = renamed(conversation_id_from, key, "key", "conversation_id_from")
        if key is not None and not callable(key):
            raise ConfigurationError(
                f"conversation_id_from must be callable, got {type(key).__name__}"
            )
        default = default_conversation(default_conversation_id, default_key, "default_key")
        self._sessions = _ResponsesSessions(
            context_window=context_window,
            model=model,
            task_root=task_root,
            store_factory=store_factory,
            session_factory=session_factory,
            options=session_options,
            adapter="WindowkeeperInputFilter",
            session_format="responses",
        )
        self._max_output_tokens = max_output_tokens
        self._key = key
        self._default_key = default
        self._hooks = WindowkeeperRunHooks(self)
        self._schemas: dict[int, tuple[Any, tuple[Any, ...], list[dict[str, Any]]]] = {}
        self._schemas_lock = threading.Lock()

    # -- what it holds ---------------------------------------------------------------------

    @property
    def hooks(self) -> WindowkeeperRunHooks:
        """Run hooks that record usage: ``Runner.run(..., hooks=windowkeeper.hooks)``."""
        return self._hooks

    # ``key=`` (and ``conversation_keys``) are the deprecated older names of ``conversation_id``.

    def session(
        self, conversation_id: str | None = None, *, key: str | None = None
    ) -> ContextSession:
        """The session of ``conversation_id`` (default: the default one), made or resumed now."""
        return self._conversation(renamed(conversation_id, key, "key"), None).session

    def last_prepared(
        self, conversation_id: str | None = None, *, key: str | None = None
    ) -> Prepared | None:
        """What the session prepared for the conversation's latest model call, or None."""
        return self._conversation(renamed(conversation_id, key, "key"), None).last_prepared

    def last_synced(
        self, conversation_id: str | None = None, *, key: str | None = None
    ) -> Synced | None:
        """What the latest ``sync`` did for the conversation: items kept, appended, dropped."""
        return self._conversation(renamed(conversation_id, key, "key"), None).last_synced

    @property
    def conversation_ids(self) -> list[str]:
        """The conversations that have a session in this filter."""
        return self._sessions.known()

    @property
    def conversation_keys(self) -> list[str]:
        """Deprecated: :attr:`conversation_ids`."""
        warn_renamed("conversation_keys", "conversation_ids")
        return self.conversation_ids

    def forget(self, conversation_id: str | None = None, *, key: str | None = None) -> None:
        """Drop the session of ``conversation_id`` (closing its store); persisted state stays."""
        conversation = renamed(conversation_id, key, "key")
        if conversation is None:
            raise ConfigurationError("forget() needs the conversation_id to drop")
        self._sessions.forget(conversation)

    def close(self) -> None:
        """Close every session's storage backend."""
        self._sessions.close()

    # -- the filter and the usage ----------------------------------------------------------

    def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        model_data = data.model_data
        conversation = self._conversation(self._key_of(data), _model_hint(data.agent))
        with conversation.lock:
            items = _plain_items(model_data.input, conversation.memo)
        if not items:
            return model_data
        prepared = conversation.prepare(
            items,
            system=_system(model_data.instructions, items),
            tools=self._schemas_of(data.agent),
            max_output_tokens=self._reserve(data.agent),
        )
        _PENDING.set(_Pending(self, conversation, prepared))
        return ModelInputData(
            input=cast(list[TResponseInputItem], prepared.messages),
            instructions=model_data.instructions,
        )

    def record_response(self, response: ModelResponse) -> bool:
        """Record ``response.usage`` for the request this filter prepared last in the current run
        (call it from ``on_llm_end``). False when there is nothing to record: no request of
        this filter in this run, already recorded, another request of the conversation
        prepared since, or a usage that measured nothing."""
        pending = _PENDING.get()
        if pending is None or pending.owner is not self or pending.recorded:
            return False
        usage = _response_usage(response)
        if usage is None:
            return False
        conversation = pending.conversation
        with conversation.lock:
            if pending.recorded or conversation.last_prepared is not pending.prepared:
                return False
            pending.recorded = True
            conversation.session.record_usage(usage)
        return True

    # -- inside ----------------------------------------------------------------------------

    def _key_of(self, data: CallModelData[Any]) -> str:
        if self._key is not None:
            key = self._key(data)
            if key is not None:
                if not isinstance(key, str):
                    raise ConfigurationError(
                        f"conversation_id_from must return a string or None, got {type(key).__name__}"
                    )
                return key
        group = getattr(get_current_trace(), "group_id", None)
        return group if isinstance(group, str) and group else self._default_key

    def _conversation(self, key: str | None, model_hint: str | None) -> Conversation:
        return self._sessions.get(
            key if key is not None else self._default_key, model_hint=model_hint
        )

    def _reserve(self, agent: Agent[Any]) -> int | None:
        if self._max_output_tokens is not None:
            return self._max_output_tokens
        value = agent.model_settings.max_tokens
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
        return None

    def _schemas_of(self, agent: Agent[Any]) -> list[dict[str, Any]]:
        """The agent's tool, handoff and output schemas (remade when any of them changes)."""
        parts = (*agent.tools, None, *agent.handoffs, None, agent.output_type)
        with self._schemas_lock:
            known = self._schemas.get(id(agent))
            if (
                known is not None
                and known[0] is agent
                and len(known[1]) == len(parts)
                and all(map(_is, known[1], parts))
            ):
                return known[2]
        schemas = [_tool_schema(tool) for tool in agent.tools]
        schemas.extend(
            schema for target in agent.handoffs if (schema := _handoff_schema(target)) is not None
        )
        output = _output_schema(agent.output_type)
        if output is not None:
            schemas.append(output)
        with self._schemas_lock:
            if len(self._schemas) > 1024:
                self._schemas.clear()
            self._schemas[id(agent)] = (agent, parts, schemas)
        return schemas


def _is(left: Any, right: Any) -> bool:
    return left is right
