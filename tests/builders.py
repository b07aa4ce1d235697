"""The tests' one vocabulary for building Anthropic-shaped messages and blocks.

Upper-case names follow the notation of the original's test cases (cline-test-cases.md):
``U``/``A`` a user/assistant message, ``T`` a text block, ``TU``/``TR`` a tool_use/tool_result
block. The lower-case names are the same builders spelled out, for tests that read better that
way, plus the few composite shapes several modules need (a Cline file read, an image).
Every call returns fresh dicts, so a test may change what it built.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "TR",
    "TU",
    "A",
    "T",
    "U",
    "assistant",
    "image_block",
    "read_result",
    "text",
    "tool_result",
    "tool_use",
    "user",
]

Message = dict[str, Any]
Block = dict[str, Any]


def U(content: Any) -> Message:  # noqa: N802 - the reference's notation
    """A user message."""
    return {"role": "user", "content": content}


def A(content: Any) -> Message:  # noqa: N802
    """An assistant message."""
    return {"role": "assistant", "content": content}


def T(value: str) -> Block:  # noqa: N802
    """A text block."""
    return {"type": "text", "text": value}


def TU(tool_use_id: str, name: str = "read_file", **tool_input: Any) -> Block:  # noqa: N802
    """A tool_use block; its input is the keyword arguments (empty without them)."""
    return {"type": "tool_use", "id": tool_use_id, "name": name, "input": tool_input}


def TR(tool_use_id: str, content: Any = "ok") -> Block:  # noqa: N802
    """A tool_result block answering ``tool_use_id``."""
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}


user = U
assistant = A
text = T
tool_use = TU
tool_result = TR


def read_result(path: str, body: str) -> Message:
    """A user message holding a ``read_file`` result in Cline's text format."""
    return U([T(f"[read_file for '{path}'] Result:\n{body}")])


def image_block(data: str, media_type: str = "image/png") -> Block:
    """A base64 image block."""
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
