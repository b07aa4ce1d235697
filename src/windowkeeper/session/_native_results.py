"""Cline's native-tool results put back where the API expects them: inside tool_result blocks.

With native tool calling, Cline stores each result as a text block ``[tool for 'x'] Result: ...``
in the user message after the assistant's tool_use blocks, not as a tool_result. The original's
pairing repair then adds a ``result missing`` tool_result for every call, next to the real result
in text (all 231 calls of the 443-message real trace). :class:`ResultPlacer` turns each such text
block into the tool_result of its call, matched by order and tool name, at the same position (so
block indices, which the overwrite store uses, stay valid). A call Cline did not run (one tool
per message) is answered by its note ``Tool [name] was not executed because ...``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..core._messages import Message
from ..core._pairing import PairMemo

__all__ = ["ResultPlacer"]

# "[tool for 'what'] Result:" where "what" may itself hold quotes and lines (a question, a
# regex), or "[tool] Result:"; or the note Cline writes for a call it did not run because an
# earlier call of the same response ran ("Tool [tool] was not executed because ..."): that
# note is the call's answer.
_RESULT_HEADER = re.compile(
    r"\[([^\s\]]+)(?: for '(?s:.*?)')?\] Result:|Tool \[([^\s\]]+)\] was not executed because"
)


def _same_tool(name: Any, header_tool: str) -> bool:
    # Cline shortens a few names in its headers ("use_subagents" -> "[subagents]").
    return isinstance(name, str) and (name == header_tool or name.endswith(f"_{header_tool}"))


def _placed(assistant: Message, user: Message) -> Message | None:
    """``user`` with the text results of ``assistant``'s calls as tool_results, or None."""
    if not isinstance(user, dict) or user.get("role") != "user":
        return None
    calls = assistant.get("content")
    content = user.get("content")
    if not isinstance(calls, list) or not isinstance(content, list):
        return None
    uses = [
        (block.get("id"), block.get("name"))
        for block in calls
        if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("id")
    ]
    if not uses:
        return None
    if any(isinstance(block, dict) and block.get("type") == "tool_result" for block in content):
        return None  # results already native: nothing to place
    headers: list[tuple[int, str]] = []
    for position, block in enumerate(content):
        if isinstance(block, dict) and block.get("type") == "text":
            match = _RESULT_HEADER.match(block.get("text") or "")
            if match is not None:
                headers.append((position, match.group(1) or match.group(2)))
    if not headers:
        return None
    new_content = list(content)
    start = 0
    placed = False
    for tool_use_id, name in uses:
        for offset in range(start, len(headers)):
            position, tool = headers[offset]
            if _same_tool(name, tool):
                block = content[position]
                new_content[position] = {
                    "type": "tool_result",
                    "tool_use_id": tool_use_id,
                    "content": [{"type": "text", "text": block["text"]}],
                }
                start = offset + 1
                placed = True
                break
    return {**user, "content": new_content} if placed else None


class ResultPlacer:
    """Places Cline's text results into tool_results, remembering its work between calls.

    Like :class:`windowkeeper.core._pairing.RepairMemo`, it treats messages as values and reuses the
    message it built for an (assistant, user) pair while both are the same objects.
    """

    __slots__ = ("_memo",)

    def __init__(self) -> None:
        self._memo = PairMemo(_placed, shares=True, keeps_unchanged=False)

    def place(self, history: Sequence[Message]) -> list[Message]:
        """``history`` with text results placed (unchanged messages are shared).

        The list returned is the placer's own, kept up to date as the history grows: read it,
        never change it.
        """
        return self._memo.apply(history)
