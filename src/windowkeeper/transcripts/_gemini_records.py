"""What a Gemini CLI JSON Lines recording holds once its rewrites and rewinds are applied.

Gemini CLI appends to the file as the session goes (``services/chatRecordingService.ts``): a
message record (a string ``id``) adds that message, or replaces the one of the same id where it
stands; ``{"$rewindTo": id}`` drops that message and everything after it (all of them when the
id is not there); ``{"$set": {...}}`` updates the metadata, and when it holds a ``messages``
list the whole history was written again (masking, ``/compress``): it starts over from that
list. A metadata line (``sessionId``) may list messages too, as a whole legacy record on one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._common import Unknown, array, mapping

__all__ = ["label", "latest_messages"]

_Messages = dict[str, tuple[str, dict[str, Any]]]


def label(prefix: str) -> str:
    """A location prefix (``"file:12: "``, ``"file: messages[3]."``) as a place name."""
    return prefix.rstrip(" .:")


def latest_messages(
    records: Sequence[tuple[str, Any]], unknown: list[Unknown]
) -> list[tuple[str, dict[str, Any]]]:
    """The messages of ``(where, record)`` pairs in file order, each with where it was read;
    a record of no known kind is added to ``unknown``."""
    messages: _Messages = {}
    for where, value in records:
        record = mapping(value, label(where))
        if isinstance(record.get("$rewindTo"), str):
            target = record["$rewindTo"]
            ids = list(messages)
            cut = ids.index(target) if target in ids else 0
            for message_id in ids[cut:]:
                del messages[message_id]
        elif isinstance(record.get("id"), str):
            messages[record["id"]] = (where, record)
        elif isinstance(record.get("$set"), dict):
            rewrite = record["$set"].get("messages")
            if isinstance(rewrite, list):  # the whole history, written again: it starts over
                messages.clear()
                _listed(rewrite, f"{where}$set.messages", messages, unknown)
        elif "sessionId" in record:
            _listed(record.get("messages") or [], f"{where}messages", messages, unknown)
        else:
            unknown.append(Unknown(label(where), "record without an id"))
    return list(messages.values())


def _listed(value: Any, where: str, messages: _Messages, unknown: list[Unknown]) -> None:
    """The messages a metadata line lists, added by id; one without an id is reported."""
    for position, item in enumerate(array(value, where)):
        at = f"{where}[{position}]"
        message = mapping(item, at)
        if isinstance(message.get("id"), str):
            messages[message["id"]] = (f"{at}.", message)
        else:
            unknown.append(Unknown(at, "record without an id"))
