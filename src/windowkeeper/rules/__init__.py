"""Provider rules: what the Anthropic and OpenAI APIs reject, reported, never raised.

Each :class:`Violation` names the rule it breaks by one of the rule names below (stable, for
callers that filter on them).
"""

from __future__ import annotations

from ._anthropic import Violation, validate_messages
from ._rule import (
    DUPLICATE_TOOL_USE_ID,
    EMPTY_CONTENT,
    FIRST_NOT_USER,
    MALFORMED,
    SAME_ROLE_TWICE,
    THINKING_IN_USER,
    THINKING_NOT_FIRST,
    THINKING_UNSIGNED,
    TOOL_RESULT_UNKNOWN,
    TOOL_USE_ID_REFUSED,
    TOOL_USE_IN_USER,
    TOOL_USE_UNANSWERED,
)

__all__ = [
    "DUPLICATE_TOOL_USE_ID",
    "EMPTY_CONTENT",
    "FIRST_NOT_USER",
    "MALFORMED",
    "SAME_ROLE_TWICE",
    "THINKING_IN_USER",
    "THINKING_NOT_FIRST",
    "THINKING_UNSIGNED",
    "TOOL_RESULT_UNKNOWN",
    "TOOL_USE_ID_REFUSED",
    "TOOL_USE_IN_USER",
    "TOOL_USE_UNANSWERED",
    "Violation",
    "validate_messages",
]
