"""Other message formats, converted to and from the Anthropic shape windowkeeper works on.

- :mod:`windowkeeper.formats.openai`: OpenAI Chat Completions messages, both ways, and
  :func:`validate_openai` for their tool pairing.
- :mod:`windowkeeper.formats.responses`: OpenAI Responses items, both ways.
"""

from __future__ import annotations

from .openai import NOTE_KEYS, AnthropicConversation, from_anthropic, to_anthropic, validate_openai

__all__ = [
    "NOTE_KEYS",
    "AnthropicConversation",
    "from_anthropic",
    "to_anthropic",
    "validate_openai",
]
