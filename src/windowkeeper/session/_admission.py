"""What a session lets in: every value is checked at the call that brings it, once.

Whatever a session commits it must be able to reload, send and store on every backend. So the
values that become persisted state (a usage, its timestamp, a hidden range, a checkpoint) are
refused at ``record_usage``, the ``deleted_range`` setter and ``rollback``, with an error naming
the argument, within the same bounds the state reader applies (:data:`MAX_STATE_INT`); and text
that a provider or a backend cannot take is refused at ``append``/``extend`` and at the
``system``/``tools`` arguments of ``prepare``, with the path of the offending value:

- the NUL character (PostgreSQL's ``jsonb`` cannot hold it, providers strip or refuse it);
- lone surrogates, NaN and infinities, and values JSON cannot carry
  (:func:`windowkeeper.core._inputs.check_json_value`);
- a ``thinking`` block without its ``signature`` (Anthropic refuses every request that sends
  one back).

Nothing is normalised: what is accepted is stored and sent exactly as given. Histories loaded
from a backend are not held to these rules (a Cline task folder may hold any of them); only what
a caller adds is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._errors import (
    ConfigurationError,
    InvalidRangeError,
    InvalidUsageError,
    MalformedMessageError,
    TaskFolderError,
)
from ..core._inputs import check_json_value
from ..core._messages import Message
from ..core._truncation import DeletedRange, check_range
from ..core._usage import TokenUsage
from ._prepared import Checkpoint
from ._state import SessionState, state_from_json, state_to_json
from ._units import parts, same_parts

__all__ = [
    "MAX_STATE_INT",
    "MAX_USAGE_TOKENS",
    "AdmittedArguments",
    "admit_checkpoint_fields",
    "admit_messages",
    "admit_range",
    "admit_request_arguments",
    "admit_timestamp",
    "admit_usage",
    "check_first",
]

MAX_STATE_INT = 10**15
"""Every integer of the persisted state is below this (the state reader refuses the rest)."""

# cline._task.MAX_TOKEN_COUNT (a test says so), written out so that a session does not load
# the task-folder reader
MAX_USAGE_TOKENS = 10**15 - 1
"""The largest usage count taken: the bound of every token count a task folder may hold."""

_FIELDS = ("tokens_in", "tokens_out", "cache_writes", "cache_reads")


def admit_timestamp(value: Any, name: str = "timestamp") -> int:
    """``value`` as a timestamp in milliseconds since the epoch, or :class:`ConfigurationError`."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_STATE_INT:
        too_large = isinstance(value, int) and value >= MAX_STATE_INT  # nanoseconds, say
        hint = " (milliseconds, not nanoseconds?)" if too_large else ""
        raise ConfigurationError(
            f"{name} must be milliseconds since the epoch, an integer from 0 to below"
            f" 10**15{hint}, got {value!r:.40}"
        )
    return value


def admit_usage(usage: TokenUsage, name: str = "usage") -> TokenUsage:
    """``usage`` unless one of its counts is negative or beyond what can be stored."""
    for field in _FIELDS:
        count = getattr(usage, field)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InvalidUsageError(f"{name}.{field} must be a non-negative integer, got {count!r}")
        if count > MAX_USAGE_TOKENS:
            raise InvalidUsageError(
                f"{name}.{field} is {count:,} tokens, more than can be stored"
                f" (at most {MAX_USAGE_TOKENS:,})"
            )
    return usage


def admit_range(
    value: Any, history_length: int, name: str = "deleted_range"
) -> DeletedRange | None:
    """A hidden range a session can keep: two indices >= 0, the last message left visible."""
    checked = check_range(value, name)
    if checked is None:
        return None
    start, end = checked
    if start < 0 or end < 0 or end >= MAX_STATE_INT:
        raise InvalidRangeError(f"{name} {checked}: indices must be >= 0")
    if end >= history_length:
        raise InvalidRangeError(
            f"{name} {checked} reaches past the history's {history_length} messages"
        )
    if end == history_length - 1:
        raise InvalidRangeError(
            f"{name} {checked} would hide the last message of the history's {history_length}"
            " (a range ends at most two before the history's length)"
        )
    return checked


def admit_checkpoint_fields(checkpoint: Any, history_length: int) -> None:
    """Refuse a checkpoint whose state the session could not commit and reload, or that holds
    more than the session's ``history_length`` messages.

    The state is held to the one codec every backend uses (written, then read back), so what a
    rollback commits is what a reopen reads.
    """
    if not isinstance(checkpoint, Checkpoint):
        raise ConfigurationError(
            f"rollback takes a Checkpoint from checkpoint(), got {type(checkpoint).__name__}"
        )
    length = checkpoint.history_length
    if isinstance(length, bool) or not isinstance(length, int) or length < 0:
        raise ConfigurationError(
            f"checkpoint.history_length must be an integer >= 0, got {length!r:.40}"
        )
    state = checkpoint.state
    if not isinstance(state, SessionState):
        raise ConfigurationError(
            f"checkpoint.state must be a SessionState, got {type(state).__name__}"
        )
    if state.deleted_range is not None:
        admit_range(state.deleted_range, length, "checkpoint.state.deleted_range")
    admit_timestamp(checkpoint.timestamp, "checkpoint.timestamp")
    admit_timestamp(state.usage_timestamp, "checkpoint.state.usage_timestamp")
    if state.usage is not None:
        if not isinstance(state.usage, TokenUsage):
            raise ConfigurationError("checkpoint.state.usage must be a TokenUsage or None")
        admit_usage(state.usage, "checkpoint.state.usage")
    try:
        state_from_json(state_to_json(state, length), "checkpoint.state", length)
    except (TaskFolderError, TypeError, AttributeError) as error:
        raise ConfigurationError(f"checkpoint.state cannot be stored: {error}") from None
    if not isinstance(checkpoint.store_json, str):
        raise ConfigurationError("checkpoint.store_json must be the store's JSON text")
    if length > history_length:
        raise ConfigurationError(
            f"checkpoint holds {length} messages, the history only"
            f" {history_length}: it belongs to another session or a rolled-back branch"
        )


def _check_text(value: Any, path: str) -> None:
    """Refuse NUL characters anywhere in ``value`` (a JSON value already checked)."""
    if _holds_nul(value):
        _refuse_nul(value, path)


def _holds_nul(value: Any) -> bool:
    """Whether a string or key in ``value`` holds a NUL character (no paths: the usual answer
    is no, and only the error names where)."""
    level = [value]
    while level:
        below: list[Any] = []
        for item in level:
            if isinstance(item, str):
                if "\x00" in item:
                    return True
            elif isinstance(item, dict):
                for key, child in item.items():
                    if "\x00" in key:
                        return True
                    below.append(child)
            elif isinstance(item, list):
                below += item
        level = below
    return False


def _refuse_nul(value: Any, path: str) -> None:
    """Raise for the first NUL character in ``value``, naming its path."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise MalformedMessageError(
                    where,
                    f"text holds a NUL character (at {item.index(chr(0))}), which"
                    " PostgreSQL cannot store and providers refuse",
                )
        elif isinstance(item, dict):
            for key, child in item.items():
                if "\x00" in key:
                    raise MalformedMessageError(where, "a key holds a NUL character")
                stack.append(
                    (child, f"{where}.{key}" if key.isidentifier() else f"{where}[{key!r}]")
                )
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(item))


def admit_messages(messages: Iterable[Any], start: int, name: str = "history") -> None:
    """Refuse what no provider accepts or no backend stores in messages about to be appended.

    Run after the message checks of :mod:`windowkeeper.core._inputs` (shapes, JSON values).
    """
    for offset, message in enumerate(messages):
        path = f"{name}[{start + offset}]"
        _check_text(message, path)
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, list):
            continue
        for position, block in enumerate(content):
            if isinstance(block, Mapping) and block.get("type") == "thinking":
                signature = block.get("signature")
                if not isinstance(signature, str) or not signature:
                    raise MalformedMessageError(
                        f"{path}.content[{position}].signature",
                        "a thinking block needs the signature the provider returned with it"
                        " (Anthropic refuses every request that sends one without)",
                    )


def admit_request_arguments(system: Any, tools: Sequence[Any] | None) -> None:
    """Refuse a ``system`` prompt or ``tools`` that cannot be sent (NaN, surrogates, NUL, ...)."""
    _admit_system(system)
    _admit_tools(tools)


def _admit_system(system: Any) -> None:
    if system is not None:
        check_json_value(system, "system")
        _check_text(system, "system")


def _admit_tools(tools: Sequence[Any] | None) -> None:
    if tools is not None:
        for position, tool in enumerate(tools):
            check_json_value(tool, f"tools[{position}]")
            _check_text(tool, f"tools[{position}]")


class AdmittedArguments:
    """:func:`admit_request_arguments` for one session: the ``system`` prompt and ``tools`` it
    let in last are not walked again on the next request.

    They are compared as the token counter compares them (:func:`~windowkeeper.session._units.parts`:
    by the identity of their blocks or tool definitions), which are values never changed in
    place, as messages are: an agent sends the same prompt and tools on every request.
    """

    __slots__ = ("_system", "_tools")

    def __init__(self) -> None:
        self._system: tuple[Any, ...] | None = None
        self._tools: tuple[Any, ...] | None = None

    def admit(self, system: Any, tools: Sequence[Any] | None) -> None:
        """Refuse ``system`` or ``tools`` as :func:`admit_request_arguments` does, unless they
        are the ones admitted last."""
        system_parts = parts(system)
        if not same_parts(self._system, system_parts):
            _admit_system(system)
            self._system = system_parts
        tools_parts = parts(tools)
        if not same_parts(self._tools, tools_parts):
            _admit_tools(tools)
            self._tools = tools_parts


def check_first(history: Sequence[Message], name: str) -> None:
    """A conversation opens with the user's task, or with one assistant greeting and then the task.

    Chat apps open with a greeting (``history[0]`` an assistant message); the session keeps it
    and the task after it as messages 0-1 (see :mod:`windowkeeper.session._greeting`). Two
    assistant messages before the task would leave the task hideable, so they are refused.
    """
    if len(history) > 1 and history[0].get("role") == history[1].get("role") == "assistant":
        raise MalformedMessageError(
            f"{name}[1].role",
            "a conversation that opens with an assistant greeting continues with the user's"
            " message (the task), not a second assistant message",
        )
