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

__all__ = ["ENVIRONMENT_TAG", "mask_old_context", "placeholder_for"]

ENVIRONMENT_TAG = "<environment_details>"
_ENVIRONMENT_PLACEHOLDER = "[windowkeeper: older environment details removed.]"
_INPUT_VALUE_LIMIT = 300  # characters a masked tool input value keeps whole


def placeholder_for(tool: str, size: int) -> str:
    """What a masked output says: which tool, how large it was, how to get it back."""
    return (
        f"[windowkeeper: the output of {tool} ({size:,} characters) was removed to save context;"
        " run the tool again if it is needed.]"
    )


def mask_old_context(
    history: Sequence[Message],
    start: int,
    store: OverwriteStore,
    timestamp: int,
    keep_recent: int,
) -> set[int]:
    """Mask the bulk of ``history[start:]`` but its newest parts; return the messages changed.

    Masked: every tool_result but the last ``keep_recent`` and those of the newest turn (the
    user messages after the last assistant one: the model has not seen them yet), long string
    values in the input of every tool_use but the last ``keep_recent`` (a patch text keeps its
    lines that name the files it changes), and every
    environment-details block but the newest. A block already edited, or smaller than its
    placeholder, is left as it is.
    """
    newest_turn = len(history)
    while newest_turn > 0 and history[newest_turn - 1].get("role") == "user":
        newest_turn -= 1
    results: list[tuple[int, int, str]] = []
    uses: list[tuple[int, int, Any]] = []
    environments: list[tuple[int, int, str]] = []
    for index in range(max(start, 0), len(history)):
        message = history[index]
        content = message.get("content")
        if not isinstance(content, list):
            continue
        user = message.get("role") == "user"
        calls: dict[Any, dict[str, Any]] | None = None  # read once a result needs its call
        for position, block in enumerate(content):
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if user and kind == "tool_result":
                if index >= newest_turn:
                    continue
                if calls is None:
                    calls = tool_calls_before(history, index)
                call = calls.get(block.get("tool_use_id"))
                results.append((index, position, str(call.get("name")) if call else "a tool"))
            elif user and kind == "text" and str(block.get("text", "")).startswith(ENVIRONMENT_TAG):
                environments.append((index, position, block["text"]))
            elif not user and kind == "tool_use":
                uses.append((index, position, block.get("input")))
    masked: set[int] = set()

    def mask(index: int, position: int, kind: str, text: str) -> None:
        if not store.has_update(index, position):
            update = text_update(timestamp, text, kind=kind)
            store.record(index, EditType.NO_FILE_READ, position, update)
            masked.add(index)

    # A block edited before is left as it is: looked up first, before its mask is worked out
    # (after a first shrink, most of the visible part is).
    for index, position, name in results[: max(len(results) - keep_recent, 0)]:
        if store.has_update(index, position):
            continue
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
        if len(_ENVIRONMENT_PLACEHOLDER) < len(text):
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
