"""Provider SDK shapes windowkeeper accepts: reply messages and usage of the Anthropic and OpenAI APIs.

``message_from_sdk`` turns what a response holds into a message dict a session can append: an
Anthropic ``Message`` (its role and content blocks), an OpenAI ``ChatCompletion`` (its first
choice's message) or ``ChatCompletionMessage`` (role, content, tool calls, name, refusal), or a
dict whose content blocks or tool calls are SDK objects. Fields the request side has no place
for (``annotations``, response ``audio``, ``None`` for every unset field) are left out. SDKs are
never imported: anything with a pydantic-style ``model_dump()`` is read through it.

``usage_from_sdk`` turns what a response reports into a :class:`~windowkeeper.core._usage.TokenUsage`:

- Anthropic Messages: ``input_tokens`` (without cache), ``output_tokens``,
  ``cache_creation_input_tokens``, ``cache_read_input_tokens``;
- OpenAI Chat Completions: ``prompt_tokens`` (cached tokens included),
  ``completion_tokens``, ``prompt_tokens_details.cached_tokens``;
- OpenAI Responses: ``input_tokens`` (cached included), ``output_tokens``,
  ``input_tokens_details.cached_tokens``.

Dicts and SDK objects (pydantic models or anything with those attributes) are both accepted.

For type checkers the accepted shapes are protocols (:class:`SdkModel`, :class:`AnthropicUsage`,
:class:`ChatCompletionUsage`, :class:`ResponseUsage`): the SDKs' classes match them
structurally, so a typed caller passes ``reply.usage`` as it is and a wrong value (an int, a
string) is a type error rather than ``Any``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from .._errors import InvalidUsageError
from ..core._messages import MessageInput
from ..core._usage import TokenUsage

__all__ = [
    "AnthropicUsage",
    "ChatCompletionUsage",
    "MessageLike",
    "ResponseUsage",
    "SdkModel",
    "UsageInput",
    "message_from_sdk",
    "usage_from_sdk",
]


class SdkModel(Protocol):
    """An SDK object read through its pydantic ``model_dump()`` (a reply message, a usage)."""

    def model_dump(self) -> Any: ...


MessageLike = MessageInput | SdkModel
"""What a session's ``append``, ``extend`` and ``sync`` take: a message dict (or TypedDict such as
``anthropic.types.MessageParam``) or an SDK reply object (an Anthropic ``Message``, an OpenAI
``ChatCompletion``, its ``ChatCompletionMessage``, a Responses output item)."""


class CachedTokens(Protocol):
    """OpenAI's ``prompt_tokens_details`` / ``input_tokens_details``: the cached share."""

    @property
    def cached_tokens(self) -> int | None: ...


class AnthropicUsage(Protocol):
    """Anthropic's ``Usage`` (and the beta and streaming ones): input excludes the cached tokens."""

    @property
    def input_tokens(self) -> int | None: ...
    @property
    def output_tokens(self) -> int | None: ...
    @property
    def cache_creation_input_tokens(self) -> int | None: ...
    @property
    def cache_read_input_tokens(self) -> int | None: ...


class ChatCompletionUsage(Protocol):
    """OpenAI Chat Completions' ``CompletionUsage``: the prompt includes the cached tokens."""

    @property
    def prompt_tokens(self) -> int | None: ...
    @property
    def completion_tokens(self) -> int | None: ...
    @property
    def prompt_tokens_details(self) -> CachedTokens | None: ...


class ResponseUsage(Protocol):
    """OpenAI Responses' ``ResponseUsage``: the input includes the cached tokens."""

    @property
    def input_tokens(self) -> int | None: ...
    @property
    def output_tokens(self) -> int | None: ...
    @property
    def input_tokens_details(self) -> CachedTokens | None: ...


UsageInput = TokenUsage | AnthropicUsage | ChatCompletionUsage | ResponseUsage | Mapping[str, Any]
"""What ``record_usage`` and :func:`usage_from_sdk` take: a TokenUsage, an SDK usage object, or
the same fields as a dict."""


def _as_mapping(value: Any) -> Mapping[str, Any] | None:
    if isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        dumped = dump()
        if isinstance(dumped, Mapping):
            return dumped
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return {key: item for key, item in vars(value).items() if not key.startswith("_")}
    return None


_MAX_COUNT = 10**15
"""No request is this large: a count at or above it is a bug, refused before it is stored."""


def _count(source: Mapping[str, Any], key: str, what: str) -> int:
    value = source.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _MAX_COUNT:
        raise InvalidUsageError(f"{what}.{key} must be a non-negative integer, got {value!r:.40}")
    return value


def _cached(source: Mapping[str, Any], key: str, what: str) -> int:
    details = source.get(key)
    if details is None:
        return 0
    mapping = _as_mapping(details)
    if mapping is None:
        raise InvalidUsageError(f"{what}.{key} must be an object, got {type(details).__name__}")
    return _count(mapping, "cached_tokens", f"{what}.{key}")


def usage_from_sdk(usage: UsageInput, *, what: str = "usage") -> TokenUsage:
    """A :class:`TokenUsage` from a TokenUsage, or an Anthropic or OpenAI usage dict or object.

    Raises :class:`~windowkeeper.InvalidUsageError` naming the field for anything else.
    """
    if isinstance(usage, TokenUsage):
        for field in ("tokens_in", "tokens_out", "cache_writes", "cache_reads"):
            value = getattr(usage, field)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _MAX_COUNT:
                raise InvalidUsageError(
                    f"{what}.{field} must be a non-negative integer, got {value!r:.40}"
                )
        return usage
    source = _as_mapping(usage)
    if source is None:
        raise InvalidUsageError(
            f"{what} must be a TokenUsage or an Anthropic/OpenAI usage object, got {type(usage).__name__}"
        )
    if "prompt_tokens" in source or "completion_tokens" in source:
        prompt = _count(source, "prompt_tokens", what)
        cached = min(_cached(source, "prompt_tokens_details", what), prompt)
        completion = _count(source, "completion_tokens", what)
        return TokenUsage(tokens_in=prompt - cached, tokens_out=completion, cache_reads=cached)
    if "input_tokens" in source or "output_tokens" in source:
        if "input_tokens_details" in source:  # OpenAI Responses: input includes cached tokens
            prompt = _count(source, "input_tokens", what)
            cached = min(_cached(source, "input_tokens_details", what), prompt)
            return TokenUsage(
                tokens_in=prompt - cached,
                tokens_out=_count(source, "output_tokens", what),
                cache_reads=cached,
            )
        return TokenUsage(
            tokens_in=_count(source, "input_tokens", what),
            tokens_out=_count(source, "output_tokens", what),
            cache_writes=_count(source, "cache_creation_input_tokens", what),
            cache_reads=_count(source, "cache_read_input_tokens", what),
        )
    raise InvalidUsageError(
        f"{what} has neither Anthropic (input_tokens, output_tokens) nor OpenAI"
        f" (prompt_tokens, completion_tokens) fields: {sorted(source)[:8]}"
    )


_OPENAI_REPLY_KEYS = ("role", "content", "tool_calls", "name", "refusal")


def _dumped(value: Any) -> Any:
    """``value.model_dump(exclude_none=True)`` for an SDK object, else ``value`` itself."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, Mapping | type):
        try:
            return dump(exclude_none=True)
        except TypeError:  # a model_dump without exclude_none
            return {key: item for key, item in dump().items() if item is not None}
    return value


def _plain_list(items: Any) -> Any:
    if not isinstance(items, list) or all(isinstance(item, dict) for item in items):
        return items
    return [_dumped(item) for item in items]


def message_from_sdk(message: MessageLike) -> Any:
    """A message dict for an SDK reply object (see the module docstring); dicts pass through.

    A dict is returned as it is unless its ``content`` or ``tool_calls`` hold SDK objects (then
    a new dict holds their dumps). Anything else is returned unchanged, for the caller's checks
    to refuse with the message's place.
    """
    if isinstance(message, dict):
        content, calls = message.get("content"), message.get("tool_calls")
        plain_content, plain_calls = _plain_list(content), _plain_list(calls)
        if plain_content is content and plain_calls is calls:
            return message
        converted = {**message, "content": plain_content}
        if calls is not None:
            converted["tool_calls"] = plain_calls
        return converted
    value = _dumped(message)
    if not isinstance(value, Mapping):
        return message
    if "choices" in value:  # an OpenAI ChatCompletion: its first choice's message
        choices = value.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            return message
        value = choices[0].get("message")
        if not isinstance(value, Mapping):
            return message
    if value.get("type") == "message":  # an Anthropic Message
        return {"role": value.get("role"), "content": value.get("content")}
    if "role" not in value:
        return message
    reply = {key: value[key] for key in _OPENAI_REPLY_KEYS if key in value}
    reply.setdefault("content", None)
    return reply
