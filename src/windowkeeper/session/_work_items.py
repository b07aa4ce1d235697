"""Two parts of the state of work that tool calls carry: the todo / plan list and failures.

- **Todo and plan state.** Agents keep their plan through a tool whose every call restates the
  whole list: Claude Code's ``TodoWrite`` (``todos``: content, status), OpenCode's
  ``todowrite``, Gemini CLI's ``write_todos`` (description, status), Codex's ``update_plan``
  (``plan``: step, status), Roo's and Cline's ``update_todo_list`` (``todos`` as a Markdown
  checklist), OpenHands' ``task_tracker`` (``task_list``), and Cline's ``task_progress``
  parameter on any tool call. :func:`todo_state` says whether a call is one of these and gives
  the list as text, one item a line, ``[x]`` done, ``[-]`` in progress, ``[ ]`` pending.
- **Failures.** :func:`result_failed` reads a tool result: failed (flagged ``is_error``, a
  non-zero exit code, Cline's "Command failed" or ``<error>``), succeeded (exit code 0, or a
  result without any sign of failure), so that the last failure not followed by a success of
  the same call can be kept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from typing import Any

__all__ = ["TODO_INPUT_KEY", "result_failed", "todo_state"]

TODO_INPUT_KEY = "task_progress"
"""Cline's parameter, on any tool call, that restates its todo list (a Markdown checklist)."""

_LIST_KEYS = ("todos", "plan", "task_list", "steps", "tasks", "items")
_TEXT_KEYS = ("content", "step", "description", "title", "task", "text", "name")
_MARKS = {
    "completed": "x",
    "complete": "x",
    "done": "x",
    "in_progress": "-",
    "in-progress": "-",
    "active": "-",
    "pending": " ",
    "todo": " ",
    "not_started": " ",
}
_PLAN_TOOLS = frozenset({"task_tracker"})


def _is_todo_tool(name: str, tool_input: Mapping[str, Any]) -> bool:
    lowered = name.casefold()
    if "todo" in lowered or lowered in _PLAN_TOOLS:
        return True
    # "plan" alone is not enough: Cline's plan_mode_respond answers the user
    return "plan" in lowered and any(key in tool_input for key in _LIST_KEYS)


def _item(value: Any) -> str:
    if not isinstance(value, Mapping):
        return f"- {value}" if not isinstance(value, str) else f"- {value.strip()}"
    text = next(
        (value[key] for key in _TEXT_KEYS if isinstance(value.get(key), str)),
        None,
    )
    if text is None:
        text = json.dumps(dict(value), ensure_ascii=False, sort_keys=True, default=str)
    status = value.get("status")
    mark = _MARKS.get(status.casefold(), status) if isinstance(status, str) else " "
    return f"- [{mark}] {' '.join(text.split())}"


def _rendered(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return "\n".join(_item(item) for item in value) if value else "(empty list)"
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def todo_state(name: Any, tool_input: Any) -> str | None:
    """The todo / plan list a call sets, as text, or None when the call sets none."""
    if not isinstance(tool_input, Mapping):
        return None
    if isinstance(name, str) and _is_todo_tool(name, tool_input):
        for key in _LIST_KEYS:
            if key in tool_input:
                return _rendered(tool_input[key])
        return _rendered(dict(tool_input)) if tool_input else None
    progress = tool_input.get(TODO_INPUT_KEY)
    if isinstance(progress, str) and progress.strip():
        return progress.strip()
    return None


@cache
def _exit_code() -> re.Pattern[str]:
    return re.compile(r"(?:exit(?:ed with)? code|exit_code\"?)\s*[:=]?\s*(-?\d+)", re.IGNORECASE)


_FAILED = ("Command failed with exit code", "The tool execution failed", "<error>")


def result_failed(text: str, *, is_error: Any = None) -> bool:
    """Whether a tool result (its text, and the block's ``is_error`` flag) reports a failure."""
    if is_error is True:
        return True
    head = text[:2_000]
    match = _exit_code().search(head)
    if match is not None:
        return match.group(1) != "0"
    return head.lstrip().startswith(_FAILED)
