"""Provider rules: what the Anthropic and OpenAI APIs reject, reported, never raised."""

from __future__ import annotations

from ._anthropic import Violation, validate_messages

__all__ = ["Violation", "validate_messages"]
