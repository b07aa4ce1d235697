"""What Cline's forks (Roo Code, Kilo Code) write differently in a task folder of Cline's shape.

Their ``api_req_started`` info names ``apiProtocol`` and ``usageMissing``, which Cline never
writes, and their UI messages record no ``conversationHistoryIndex``: here is how to read both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core._messages import Message
from ..core._usage import TokenUsage

__all__ = ["answers_by_time", "condensed_notes", "folder_agent", "fork_usage", "is_fork_info"]

_TOKEN_FIELDS = ("tokensIn", "tokensOut", "cacheWrites", "cacheReads")


def is_fork_info(info: Mapping[str, Any]) -> bool:
    """Whether an ``api_req_started`` info was written by a fork: it names ``apiProtocol``."""
    return "apiProtocol" in info


def folder_agent(
    ui_messages: Sequence[Any] | None, metadata: Mapping[str, Any] | None, *, forked: bool
) -> str:
    """Which agent wrote a task folder of Cline's shape, from what it left in it.

    Kilo Code marks a UI message's ``metadata`` with ``kiloCode``; Roo Code (and its forks)
    name ``roo_read_date`` / ``roo_edit_date`` in ``task_metadata.json``'s ``files_in_context``
    where Cline names ``cline_read_date``, and their requests name ``apiProtocol`` (``forked``).
    """
    for message in ui_messages or ():
        extra = message.get("metadata") if isinstance(message, Mapping) else None
        if isinstance(extra, Mapping) and "kiloCode" in extra:
            return "Kilo Code"
    files = metadata.get("files_in_context") if metadata is not None else None
    for entry in files if isinstance(files, list) else ():
        if isinstance(entry, Mapping) and ("roo_read_date" in entry or "roo_edit_date" in entry):
            return "Roo Code (or a fork of it)"
    return "Roo Code (or a fork of it)" if forked else "Cline"


def fork_usage(info: Mapping[str, Any], usage: TokenUsage) -> TokenUsage | None:
    """The usage of one ``api_req_started`` as the forks mean it.

    ``usageMissing``, or no token count at all beside ``apiProtocol``: the provider reported
    nothing, and zeros would be no measurement, so no decision follows. ``apiProtocol:
    "openai"``: ``tokensIn`` already counts the cached input (Roo's own context size is
    ``tokensIn + tokensOut`` then), so the cache reads and writes are taken out of it, to be
    counted once.
    """
    if info.get("usageMissing") is True:
        return None
    if is_fork_info(info) and not any(key in info for key in _TOKEN_FIELDS):
        return None  # a fork's request that never reported (cancelled, failed): no measurement
    if info.get("apiProtocol") != "openai":
        return usage
    cached = usage.cache_reads + usage.cache_writes
    return TokenUsage(
        tokens_in=max(usage.tokens_in - cached, 0),
        tokens_out=usage.tokens_out,
        cache_writes=usage.cache_writes,
        cache_reads=usage.cache_reads,
    )


def answers_by_time(times: Sequence[int | None], history: Sequence[Message]) -> list[int | None]:
    """For requests started at ``times`` (in order), the assistant message that answered each:
    the first one written at or after it started. A request after the last answer (a failed or
    pending one), or without a time, has None; so has every one when the messages have no times,
    and one whose first answer is a summary (``isSummary``): an older condense deleted the
    messages it sent and wrote the summary in their place."""
    answers = [
        (index, ts)
        for index, message in enumerate(history)
        if message.get("role") == "assistant" and isinstance(ts := message.get("ts"), int)
    ]
    found: list[int | None] = []
    next_answer = 0  # the requests are in order: the search never goes back
    for ts in times:
        if ts is None:
            found.append(None)
            continue
        while next_answer < len(answers) and answers[next_answer][1] < ts:
            next_answer += 1
        answer = answers[next_answer][0] if next_answer < len(answers) else None
        found.append(None if answer is None or history[answer].get("isSummary") is True else answer)
    return found


def condensed_notes(history: Sequence[Message]) -> list[str]:
    """What the forks hid without deleting: messages tagged ``condenseParent`` (or
    ``truncationParent``) that name a summary's ``condenseId`` (a truncation marker's
    ``truncationId``) in the history. The fork sent the summary or marker in their place;
    the folder holds them all, and so does what is read from it. One note per summary or
    marker, naming the messages it stands for."""
    kinds = (
        ("condenseParent", "isSummary", "condenseId", "condensed into the summary"),
        ("truncationParent", "isTruncationMarker", "truncationId", "hidden by the marker"),
    )
    notes: list[str] = []
    for parent_key, flag, id_key, what in kinds:
        heads = {
            message[id_key]: index
            for index, message in enumerate(history)
            if message.get(flag) is True and isinstance(message.get(id_key), str)
        }
        hidden: dict[str, list[int]] = {}
        for index, message in enumerate(history):
            parent = message.get(parent_key)
            if isinstance(parent, str) and parent in heads:
                hidden.setdefault(parent, []).append(index)
        for parent, indexes in hidden.items():
            notes.append(
                f"history{_ranges(indexes)}: {what} at history[{heads[parent]}] by Roo Code or"
                " Kilo Code, which sent that in their place; they are read here as the folder"
                " holds them"
            )
    for index, message in enumerate(history):
        if message.get("isSummary") is True and not isinstance(message.get("condenseId"), str):
            notes.append(
                f"history[{index}]: a summary Roo Code or Kilo Code wrote in place of the messages"
                " before it, which it deleted: the requests that sent them cannot be replayed"
            )
    return notes


def _ranges(indexes: list[int]) -> str:
    """``[1..10]``, ``[3]`` or ``[1..4, 7]`` for sorted indexes."""
    spans: list[str] = []
    start = previous = indexes[0]
    for index in [*indexes[1:], None]:
        if index is not None and index == previous + 1:
            previous = index
            continue
        spans.append(str(start) if start == previous else f"{start}..{previous}")
        if index is not None:
            start = previous = index
    return "[" + ", ".join(spans) + "]"
