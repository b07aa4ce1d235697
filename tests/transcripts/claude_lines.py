"""Hand-written Claude Code records, one JSON line each, for the reader's tests."""

from __future__ import annotations

import json
from typing import Any


def line(
    kind: str, uuid: str, parent: str | None, content: Any, response: str = "", **extra: Any
) -> str:
    """A ``user`` or ``assistant`` record; an assistant's ``response`` names its request (the
    records of one streamed response share it); ``extra`` are more record fields."""
    message: dict[str, Any] = {"role": kind, "content": content}
    record: dict[str, Any] = {"parentUuid": parent, "isSidechain": False, "type": kind}
    if kind == "assistant":
        message |= {"id": f"msg_{response or uuid}", "model": "claude-x"}
        record["requestId"] = f"req_{response or uuid}"
    return json.dumps({**record, "message": message, "uuid": uuid, **extra})


def results(*answers: tuple[str, Any]) -> list[dict[str, Any]]:
    """tool_result blocks, one per ``(call id, content)``."""
    return [
        {"type": "tool_result", "tool_use_id": call_id, "content": content}
        for call_id, content in answers
    ]
