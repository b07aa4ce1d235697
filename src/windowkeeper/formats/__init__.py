"""Other message formats, converted to and from the Anthropic shape windowkeeper works on.

- :mod:`windowkeeper.formats.openai`: OpenAI Chat Completions messages, both ways, and
  :func:`validate_openai` for their tool pairing.
- :mod:`windowkeeper.formats.swe_agent`: SWE-agent ``.traj`` files, read.
"""

from __future__ import annotations

from .openai import NOTE_KEYS, AnthropicConversation, from_anthropic, to_anthropic, validate_openai
from .swe_agent import (
    ModelStats,
    SweAgentTrajectory,
    parse_swe_agent_trajectory,
    read_swe_agent_trajectory,
)

__all__ = [
    "NOTE_KEYS",
    "AnthropicConversation",
    "ModelStats",
    "SweAgentTrajectory",
    "from_anthropic",
    "parse_swe_agent_trajectory",
    "read_swe_agent_trajectory",
    "to_anthropic",
    "validate_openai",
]
