"""Provider SDK shapes windowkeeper accepts: the usage objects of the Anthropic and OpenAI APIs.

``usage_from_sdk`` turns what a response reports into a :class:`~windowkeeper.usage.TokenUsage`:

- Anthropic Messages: ``input_tokens`` (without cache), ``output_tokens``,
  ``cache_creation_input_tokens``, ``cache_read_input_tokens``;
- OpenAI Chat Completions: ``prompt_tokens`` (cached tokens included),
  ``completion_tokens``, ``prompt_tokens_details.cached_tokens``;
- OpenAI Responses: ``input_tokens`` (cached included), ``output_tokens``,
  ``input_tokens_details.cached_tokens``.

Dicts and SDK objects (pydantic models or anything with those attributes) are both accepted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._errors import InvalidUsageError
from .usage import TokenUsage

__all__ = ["usage_from_sdk"]


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


def _count(source: Mapping[str, Any], key: str, what: str) -> int:
    value = source.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidUsageError(f"{what}.{key} must be a non-negative integer, got {value!r}")
    return value


def _cached(source: Mapping[str, Any], key: str, what: str) -> int:
    details = source.get(key)
    if details is None:
        return 0
    mapping = _as_mapping(details)
    if mapping is None:
        raise InvalidUsageError(f"{what}.{key} must be an object, got {type(details).__name__}")
    return _count(mapping, "cached_tokens", f"{what}.{key}")


def usage_from_sdk(usage: Any, *, what: str = "usage") -> TokenUsage:
    """A :class:`TokenUsage` from a TokenUsage, or an Anthropic or OpenAI usage dict or object.

    Raises :class:`~windowkeeper.InvalidUsageError` naming the field for anything else.
    """
    if isinstance(usage, TokenUsage):
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
