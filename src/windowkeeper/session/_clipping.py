"""Clipping an oversized tool result: keep its head and tail, say what was cut.

Used by the session's pre-flight as the last remedy, when even the first pair plus the newest
turn cannot fit the window. A clip is a value (message index, block index, characters kept) so
it can be persisted, applied to any copy of the history, and rolled back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._record import record
from ..core._incremental import Growing, Seen
from ..core._messages import Message

__all__ = ["MIN_KEPT_CHARS", "Clip", "ClipMemo", "apply_clips", "clip_text", "clippable_blocks"]

MIN_KEPT_CHARS = 1_000
"""A clipped text keeps at least this many characters (head and tail together)."""

_HEAD_SHARE = 0.6  # more of the head than of the tail: headers and first errors matter most


@record(frozen=True, slots=True)
class Clip:
    """Keep at most ``kept`` characters of every text of block ``block_index`` of message ``message_index``."""

    message_index: int
    block_index: int
    kept: int


def clip_text(text: str, kept: int) -> str:
    """``text`` cut to its first and last characters (``kept`` in all) around a notice, if longer."""
    if len(text) <= kept:
        return text
    head = int(kept * _HEAD_SHARE)
    tail = kept - head
    cut = len(text) - kept
    notice = f"\n[... {cut:,} characters cut by windowkeeper to fit the context window ...]\n"
    return f"{text[:head]}{notice}{text[len(text) - tail :] if tail else ''}"


def _clip_block(block: Any, kept: int) -> Any:
    if not isinstance(block, dict):
        return block
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return {**block, "text": clip_text(block["text"], kept)}
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, str):
            return {**block, "content": clip_text(content, kept)}
        if isinstance(content, list):
            inner = [
                {**item, "text": clip_text(item["text"], kept)}
                if isinstance(item, dict)
                and item.get("type") == "text"
                and isinstance(item.get("text"), str)
                else item
                for item in content
            ]
            return {**block, "content": inner}
    return block


def block_size(block: Any) -> int:
    """Characters of text a block holds that clipping could cut."""
    if not isinstance(block, dict):
        return 0
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return len(text) if isinstance(text, str) else 0
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, str):
            return len(content)
        if isinstance(content, list):
            return max((block_size(item) for item in content), default=0)
    return 0


def clippable_blocks(message: Message) -> list[tuple[int, int]]:
    """``(block index, size)`` of the blocks of ``message`` longer than the minimum, largest first."""
    content = message.get("content")
    if isinstance(content, str):
        return [(0, len(content))] if len(content) > MIN_KEPT_CHARS else []
    if not isinstance(content, list):
        return []
    sizes = [(index, block_size(block)) for index, block in enumerate(content)]
    return sorted(
        (entry for entry in sizes if entry[1] > MIN_KEPT_CHARS), key=lambda entry: -entry[1]
    )


def apply_clips(
    history: Sequence[Message],
    clips: Sequence[Clip],
    memo: dict[Clip, tuple[Message, Message]] | None = None,
) -> list[Message]:
    """A copy of ``history`` with every clip applied (only the clipped messages are copied).

    ``memo`` keeps each clipped copy while its message is the same object, so repeated calls
    give the same objects (messages are treated as values).
    """
    output = list(history)
    _clip_into(output, clips, memo, 0)
    return output


def _clip_into(
    output: list[Message],
    clips: Sequence[Clip],
    memo: dict[Clip, tuple[Message, Message]] | None,
    start: int,
) -> None:
    """Apply the clips on messages ``start`` on to ``output``, in order."""
    setter = output.fill if isinstance(output, Growing) else output.__setitem__
    for clip in clips:
        if not start <= clip.message_index < len(output):
            continue
        message = output[clip.message_index]
        known = memo.get(clip) if memo is not None else None
        if known is not None and known[0] is message:
            setter(clip.message_index, known[1])
            continue
        content = message.get("content")
        if isinstance(content, str):
            setter(clip.message_index, {**message, "content": clip_text(content, clip.kept)})
        elif isinstance(content, list) and 0 <= clip.block_index < len(content):
            blocks = list(content)
            blocks[clip.block_index] = _clip_block(blocks[clip.block_index], clip.kept)
            setter(clip.message_index, {**message, "content": blocks})
        if memo is not None:
            memo[clip] = (message, output[clip.message_index])


class ClipMemo:
    """:func:`apply_clips` over a growing history: while the clips stand, new messages only.

    The list returned is the memo's own :class:`~windowkeeper.core._incremental.Growing` list:
    read it, never change it. Not thread-safe.
    """

    __slots__ = ("_clips", "_copies", "_in", "_out")

    def __init__(self) -> None:
        self._in = Seen()
        self._out = Growing()
        self._clips: tuple[Clip, ...] = ()
        self._copies: dict[Clip, tuple[Message, Message]] = {}

    def apply(self, history: Sequence[Message], clips: Sequence[Clip]) -> list[Message]:
        """``history`` with every clip applied, as :func:`apply_clips`."""
        clips = tuple(clips)
        done = self._in.prefix(history)
        if clips != self._clips:
            done = 0
            self._clips = clips
            self._copies = {c: known for c, known in self._copies.items() if c in clips}
        output = self._out
        if done == 0:
            output = self._out = Growing(history)
        else:
            if done < len(output):
                del output[done:]
            output.extend(history[done:])
        _clip_into(output, clips, self._copies, done)
        self._in.remember(history)
        return output
