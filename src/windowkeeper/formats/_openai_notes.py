"""The keys of the notes that carry OpenAI-only data on Anthropic dicts (see formats.openai), and the
arguments string a tool call keeps."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ARGUMENTS_NOTE", "NOTE_KEYS", "SYSTEM_AFTER_NOTE", "SYSTEM_NOTE"]


SYSTEM_NOTE = "openai_system"
SYSTEM_AFTER_NOTE = "openai_system_after"
ARGUMENTS_NOTE = "openai_arguments"
NOTE_KEYS = frozenset({SYSTEM_NOTE, SYSTEM_AFTER_NOTE, ARGUMENTS_NOTE})
"""The keys under which OpenAI-only data rides on Anthropic messages and tool_use blocks."""


def _parse_arguments(arguments: str) -> dict[str, Any]:
    """The arguments as a JSON object; ``{}`` when they are not one."""
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
