"""The overwrite store's vocabulary: edit types, update kinds, and typed views of stored values.

An update is stored as the JSON value the original writes, ``[timestamp, "text", [new_text],
metadata]``; :class:`Update`, :class:`Block` and :class:`Entry` are read-only views of those
values, made of copies (changing them changes nothing in a store).
"""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING, Any

from .._record import record

if TYPE_CHECKING:
    from ._messages import JSONValue

__all__ = [
    "CONTENT",
    "INPUT",
    "TEXT",
    "Block",
    "EditType",
    "Entry",
    "Update",
    "clone",
    "freeze",
    "text_update",
    "thaw",
]


class EditType(IntEnum):
    """Why a message was edited; fixed by the first edit of the message."""

    UNDEFINED = 0  # the truncation notice (message 1) and the task replacement (message 0)
    NO_FILE_READ = 1  # declared by the original, never used
    READ_FILE_TOOL = 2
    ALTER_FILE_TOOL = 3
    FILE_MENTION = 4


@record(frozen=True, slots=True)
class Update:
    """A typed view of one stored update; its lists are copies, so changing them changes nothing."""

    timestamp: JSONValue
    kind: JSONValue
    content: JSONValue
    metadata: JSONValue

    @property
    def text(self) -> str | None:
        """The new text when this is a well-formed "text" update, else None."""
        if self.kind == "text" and isinstance(self.content, list) and self.content:
            first = self.content[0]
            return first if isinstance(first, str) else None
        return None

    @property
    def new_text(self) -> str | None:
        """The text this update puts in its block: that of a "text" or a "content" update."""
        if self.kind in (TEXT, CONTENT, INPUT) and isinstance(self.content, list) and self.content:
            first = self.content[0]
            return first if isinstance(first, str) else None
        return None

    @classmethod
    def of(cls, raw: JSONValue) -> Update:
        """View a stored JSON value as an update; missing parts read as None."""
        parts = [clone(part) for part in raw[:4]] if isinstance(raw, list) else []
        parts += [None] * (4 - len(parts))
        return cls(*parts)


@record(frozen=True, slots=True)
class Block:
    """The updates of one content block, oldest first."""

    index: Any
    updates: tuple[Update, ...]


@record(frozen=True, slots=True)
class Entry:
    """Everything recorded for one message: its edit type and its blocks, in insertion order."""

    message_index: Any
    edit_type: Any
    blocks: tuple[Block, ...]


TEXT = "text"
"""The original's update kind: sets the block's text (a text block, or the first text of a
tool_result whose content is a list)."""

CONTENT = "content"
"""windowkeeper's update kind for whole contents: a text block's text, or a tool_result's entire
content (string or list). The original keeps such updates on load and save but applies only
"text", so Cline ignores them."""


INPUT = "input"
"""windowkeeper's update kind for a tool_use block's input: the new input as JSON text. Ignored by
the original, like "content"."""


def text_update(
    timestamp: int, text: str, metadata: list[Any] | None = None, kind: str = TEXT
) -> list[Any]:
    """The JSON value of a "text" (or ``kind``) update."""
    return [timestamp, kind, [text], [] if metadata is None else metadata]


def clone(value: Any) -> Any:
    """A copy of a JSON value sharing no list or dict with it."""
    if isinstance(value, list):
        return [clone(item) for item in value]
    if isinstance(value, dict):
        return {key: clone(item) for key, item in value.items()}
    return value


def freeze(value: Any) -> Any:
    """A JSON value with every list made a tuple (the store's compact form; see :func:`thaw`).

    A tuple that holds only numbers, strings, None and such tuples is untracked by CPython's
    garbage collector after its first collection, so a store of thousands of frozen updates adds
    nothing to what a full collection visits. JSON has no tuples, so the form loses nothing.
    """
    if isinstance(value, list):
        return tuple([freeze(item) for item in value])
    if isinstance(value, dict):
        return {key: freeze(item) for key, item in value.items()}
    return value


def thaw(value: Any) -> Any:
    """The JSON value of a :func:`freeze` form: fresh lists for its tuples, fresh dicts."""
    if isinstance(value, tuple):
        return [thaw(item) for item in value]
    if isinstance(value, dict):
        return {key: thaw(item) for key, item in value.items()}
    return value
