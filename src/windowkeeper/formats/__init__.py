"""Other message formats, converted to and from the Anthropic shape windowkeeper works on.

- :mod:`windowkeeper.formats.openai`: OpenAI Chat Completions messages, both ways, and
  :func:`validate_openai` for their tool pairing.
- :mod:`windowkeeper.formats.responses`: OpenAI Responses items, both ways.

The names here are :mod:`~windowkeeper.formats.openai`'s, loaded on first use (PEP 562
``__getattr__``): an Anthropic session, which needs only the wire shaping, does not pay for them.
"""

from __future__ import annotations

from .._lazy import lazy_names

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .openai import (
        NOTE_KEYS,
        AnthropicConversation,
        from_anthropic,
        to_anthropic,
        validate_openai,
    )

__all__ = [
    "NOTE_KEYS",
    "AnthropicConversation",
    "from_anthropic",
    "to_anthropic",
    "validate_openai",
]

__getattr__, __dir__ = lazy_names(__name__, "openai", __all__, __all__)
