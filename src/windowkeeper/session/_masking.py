"""Observation masking: old tool outputs and bulky context replaced by placeholders, in rare batches.

Tool outputs, the inputs of file-writing calls and Cline's per-turn environment details make up
most of an agent's context, and matter less as they age. When a request has to shrink, masking
them (all but the most recent) keeps every message — the model still sees which tools ran, with
what arguments — and removes most of the tokens, so truncation, which drops whole turns, is needed
less often. Masks are overwrites in the store ("content" and "input" updates, which the original
ignores), so they persist, roll back with checkpoints, and keep every tool_use id and
tool_result pairing intact.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..core._messages import Message, tool_calls_before
from ..core._overwrites import CONTENT, INPUT, EditType, OverwriteStore, text_update
from ._clipping import block_size
from ._writes import patch_headers

__all__ = ["ENVIRONMENT_TAG", "MaskScan", "mask_old_context", "placeholder_for"]

ENVIRONMENT_TAG = "<environment_details>"
_ENVIRONMENT_PLACEHOLDER = "[windowkeeper: older environment details removed.]"
_INPUT_VALUE_LIMIT = 300  # characters a masked tool input value keeps whole


def placeholder_for(tool: str, size: int) -> str:
    """What a masked output says: which tool, how large it was, how to get it back."""
    return (
        f"[windowkeeper: the output of {tool} ({size:,} characters) was removed to save context;"
        " run the tool again if it is needed.]"
    )


_Found = tuple[
    tuple[tuple[int, Any], ...], tuple[tuple[int, Any], ...], tuple[tuple[int, str], ...]
]
"""What masking may change in one message: its tool_results ``(position, tool_use_id)``, its
tool_uses ``(position, input)`` and its environment-details blocks ``(position, text)``."""

_NOTHING: _Found = ((), (), ())


def _found_in(message: Message) -> _Found:
    content = message.get("content")
    if not isinstance(content, list):
        return _NOTHING
    user = message.get("role") == "user"
    results: list[tuple[int, Any]] = []
    uses: list[tuple[int, Any]] = []
    environments: list[tuple[int, str]] = []
    for position, block in enumerate(content):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if user:
            if kind == "tool_result":
                results.append((position, block.get("tool_use_id")))
            elif kind == "text" and str(block.get("text", "")).startswith(ENVIRONMENT_TAG):
                environments.append((position, block["text"]))
        elif kind == "tool_use":
            uses.append((position, block.get("input")))
    if not (results or uses or environments):
        return _NOTHING
    return tuple(results), tuple(uses), tuple(environments)


class MaskScan:
    """What :func:`mask_old_context` finds in each message, remembered while the message stays
    the same object (messages are values, see :mod:`windowkeeper.core._incremental`), so that a
    shrink reads again only the messages that are new or changed; not thread-safe."""

    __slots__ = ("_known",)

    def __init__(self) -> None:
        self._known: dict[int, tuple[Message, _Found]] = {}

    def found(self, history: Sequence[Message], start: int) -> list[_Found]:
        """What masking may change in each of ``history[start:]``."""
        known = self._known
        output = []
        for message in history[start:]:
            entry = known.get(id(message))
            if entry is None or entry[0] is not message:
                entry = known[id(message)] = (message, _found_in(message))
            output.append(entry[1])
        if len(known) > 2 * len(output) + 64:  # forget messages no longer visible
            live = set(map(id, history[start:]))
            self._known = {key: entry for key, entry in known.items() if key in live}
        return output


def mask_old_context(
    history: Sequence[Message],
    start: int,
    store: OverwriteStore,
    timestamp: int,
    keep_recent: int,
    *,
    scan: MaskScan | None = None,
) -> set[int]:
    """Mask the bulk of ``history[start:]`` but its newest parts; return the messages changed.

    Masked: every tool_result but the last ``keep_recent`` and those of the newest turn (the
    user messages after the last assistant one: the model has not seen them yet), long string
    values in the input of every tool_use but the last ``keep_recent`` (a patch text keeps its
    lines that name the files it changes), and every
    environment-details block but the newest. A block already edited, or smaller than its
    placeholder, is left as it is. ``scan`` remembers what each message holds between calls.
    """
    newest_turn = len(history)
    while newest_turn > 0 and history[newest_turn - 1].get("role") == "user":
        newest_turn -= 1
    start = max(start, 0)
    found = (
        scan.found(history, start) if scan is not None else list(map(_found_in, history[start:]))
    )
    results: list[tuple[int, int, Any]] = []  # (index, position, tool_use_id)
    uses: list[tuple[int, int, Any]] = []
    environments: list[tuple[int, int, str]] = []
    for index, (in_results, in_uses, in_environments) in enumerate(found, start):
        if in_results and index < newest_turn:
            results += [(index, position, tool_use_id) for position, tool_use_id in in_results]
        if in_uses:
            uses += [(index, position, tool_input) for position, tool_input in in_uses]
        if in_environments:
            environments += [(index, position, text) for position, text in in_environments]
    masked: set[int] = set()

    def mask(index: int, position: int, kind: str, text: str) -> None:
        update = text_update(timestamp, text, kind=kind)
        store.record(index, EditType.NO_FILE_READ, position, update)
        masked.add(index)

    # A block edited before is left as it is: looked up first, before its mask is worked out
    # (after a first shrink, most of the visible part is); so is the call a result answers.
    calls: dict[int, dict[Any, dict[str, Any]]] = {}
    for index, position, tool_use_id in results[: max(len(results) - keep_recent, 0)]:
        if store.has_update(index, position):
            continue
        answered = calls.get(index)
        if answered is None:
            answered = calls[index] = tool_calls_before(history, index)
        call = answered.get(tool_use_id)
        name = str(call.get("name")) if call else "a tool"
        size = block_size(history[index]["content"][position])
        text = placeholder_for(name, size)
        if len(text) < size:
            mask(index, position, CONTENT, text)
    for index, position, tool_input in uses[: max(len(uses) - keep_recent, 0)]:
        if store.has_update(index, position):
            continue
        shortened = _shortened(tool_input)
        if shortened is not None:
            mask(index, position, INPUT, json.dumps(shortened, ensure_ascii=False))
    for index, position, text in environments[:-1]:
        if len(_ENVIRONMENT_PLACEHOLDER) < len(text) and not store.has_update(index, position):
            mask(index, position, CONTENT, _ENVIRONMENT_PLACEHOLDER)
    return masked


def _shortened(tool_input: Any) -> dict[str, Any] | None:
    """The input with its long string values replaced by a note, or None when none is long."""
    if not isinstance(tool_input, dict):
        return None
    changed = False
    shortened: dict[str, Any] = {}
    for key, value in tool_input.items():
        long = isinstance(value, str) and len(value) > _INPUT_VALUE_LIMIT
        masked = _masked_value(value) if long else None
        if masked is not None and len(masked) < len(value):
            shortened[key] = masked
            changed = True
        else:
            shortened[key] = value
    return shortened if changed else None


def _masked_value(value: str) -> str:
    """The note that replaces a long input value; a patch keeps the lines naming its files.

    The file names of an ``apply_patch``-style input (``*** Update File: x``, ``+++ b/x``) are
    what the model and the ledger need to know what was changed; the hunks are the bulk.
    """
    headers = [value[start:end] for start, end, _ in patch_headers(value)]
    kept = "\n".join(dict.fromkeys(headers))
    removed = len(value) - len(kept)
    note = f"[windowkeeper: {removed:,} characters removed to save context.]"
    return f"{kept}\n{note}" if kept else note
