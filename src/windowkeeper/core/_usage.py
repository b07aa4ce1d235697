"""Provider-reported token usage of a request, and the decision to compact that follows from it."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from .._errors import InvalidUsageError
from .._record import record
from ._window import ContextWindowInfo, as_window_info

__all__ = ["TokenUsage", "UsageLike", "should_compact"]

_CLINE_FIELDS = ("tokensIn", "tokensOut", "cacheWrites", "cacheReads")


@record(frozen=True, slots=True)
class TokenUsage:
    """What the provider reported for one request; ``total`` is the size the original compares."""

    tokens_in: int = 0
    tokens_out: int = 0
    cache_writes: int = 0
    cache_reads: int = 0

    @property
    def total(self) -> int:
        """Input + output + cache writes + cache reads, the original's "total tokens"."""
        return self.tokens_in + self.tokens_out + self.cache_writes + self.cache_reads

    @classmethod
    def from_api_req_info(cls, info: str | Mapping[str, Any]) -> TokenUsage:
        """Read Cline's ``api_req_started`` JSON (a string or an already parsed mapping).

        Missing, null or zero fields count 0, as in the original. Anything that is not a JSON
        object, or a field that is not a number, raises :class:`InvalidUsageError`.
        """
        if isinstance(info, str):
            try:
                info = json.loads(info)
            except ValueError as error:
                raise InvalidUsageError(f"api_req_started text is not JSON: {error}") from None
        if not isinstance(info, Mapping):
            raise InvalidUsageError(
                f"api_req_started info must be a JSON object, got {type(info).__name__}"
            )
        values = [_token_count(info, field) for field in _CLINE_FIELDS]
        return cls(*values)


def _token_count(info: Mapping[str, Any], field: str) -> int:
    value = info.get(field)
    if value is None or value is False:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value  # any size: converting a huge count to float would overflow
    if not isinstance(value, float) or not math.isfinite(value):
        raise InvalidUsageError(f"api_req_started field {field!r} is not a number: {value!r}")
    return int(value) if value.is_integer() else value  # type: ignore[return-value]


UsageLike = TokenUsage | str | Mapping[str, Any]
"""Usage as accepted by the decision functions: a TokenUsage or Cline's api_req_started info."""


def _as_usage(usage: UsageLike) -> TokenUsage:
    return usage if isinstance(usage, TokenUsage) else TokenUsage.from_api_req_info(usage)


def should_compact(
    usage: UsageLike | None,
    context_window: int | ContextWindowInfo | None,
    threshold_percentage: float | None = None,
) -> bool:
    """The original's ``shouldCompactContextWindow``: has the previous request reached the limit?

    The threshold is ``floor(window * threshold_percentage)`` when the percentage is truthy, else
    ``max_allowed_size``; either way it is capped at ``max_allowed_size``. No usage means no
    previous request, so False. Unreadable usage raises :class:`InvalidUsageError` (deliberate
    fix 5: the original silently answers False here but raises in the per-request entry point).
    """
    if usage is None:
        return False
    total = _as_usage(usage).total
    info = as_window_info(context_window)
    threshold: float = info.max_allowed_size
    if threshold_percentage and not math.isnan(threshold_percentage):
        threshold = math.floor(info.context_window * threshold_percentage)
    return total >= min(threshold, info.max_allowed_size)
