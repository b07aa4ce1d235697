"""The shape checks a message of a trace passes before anything walks it: its nesting depth and
the types of the fields of known blocks (the estimator and the providers need them as strings).

Shared by the Cline task-folder reader and the trace loader of the tools.
"""

from __future__ import annotations

from typing import Any

from .._errors import MalformedMessageError
from ..core._inputs import MAX_DEPTH

__all__ = ["MAX_JSON_DEPTH", "check_block_fields", "check_depth"]

MAX_JSON_DEPTH = MAX_DEPTH
"""The deepest nesting of arrays and objects a message may have, the message itself included: the
session's limit (real traces stay under 10). Deeper messages are refused when a trace is loaded,
so that nothing walking them later runs out of stack."""

# The fields of known blocks that the estimator and the providers need as strings (None: absent).
_STRING_FIELDS: dict[str, tuple[str, ...]] = {
    "text": ("text",),
    "thinking": ("thinking",),
    "redacted_thinking": ("data",),
    "tool_use": ("id", "name"),
    "tool_result": ("tool_use_id",),
}


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def check_depth(value: object, path: str, limit: int = MAX_JSON_DEPTH) -> None:
    """Raise :class:`MalformedMessageError` when ``value`` nests more than ``limit`` arrays and
    objects (``value`` itself included). The walk uses a stack of its own, never recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if depth > limit:
            raise MalformedMessageError(
                path, f"nested too deeply: more than {limit} levels of arrays and objects"
            )
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))


def check_block_fields(block: dict[str, Any], path: str) -> None:
    """Raise :class:`MalformedMessageError` when a known block has a field of the wrong type.

    The ids and names of tool_use and tool_result blocks, the text of text and thinking blocks
    must be strings when present (as the original, a block may lack them); a tool_result's content
    a string or a list of blocks, each checked the same way.
    """
    kind = block.get("type")
    for key in _STRING_FIELDS.get(kind, ()) if isinstance(kind, str) else ():
        value = block.get(key)
        if value is not None and not isinstance(value, str):
            raise MalformedMessageError(f"{path}.{key}", f"expected a string, got {_kind(value)}")
    if kind != "tool_result":
        return
    content = block.get("content", "")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise MalformedMessageError(
            f"{path}.content", f"expected a string or a list of blocks, got {_kind(content)}"
        )
    for position, inner in enumerate(content):
        where = f"{path}.content[{position}]"
        if not isinstance(inner, dict) or not isinstance(inner.get("type"), str):
            raise MalformedMessageError(where, "expected a block dict with a string 'type'")
        check_block_fields(inner, where)  # as deep as the value, which check_depth bounds
