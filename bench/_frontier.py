"""The task frontier: whether a request still carries what the work needs to go on.

After a policy first shrinks the history (hides turns, drops them, or folds them into a
summary), each request should still carry three things, found anywhere in it (a kept message,
a summary, a ledger):

- the task: message 0's task text;
- the latest user instruction, when the user gave any after the task;
- every file edited so far, by its path.

What counts as each item is read from the full history by windowkeeper's ledger
(:class:`~windowkeeper.session._ledger.LedgerBuilder`, no model), the same items for every
policy. Each item must appear verbatim, up to whitespace (runs of spaces and line breaks are one
space, so an indented quote counts) and path separators (``\\`` as ``/``). An item the ledger
clipped counts by its unclipped part; a long instruction it kept by its head and tail counts when
both are there (the whole message, or the ledger's copy).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from windowkeeper.core._messages import Message
from windowkeeper.session._ledger import LedgerBuilder

__all__ = ["FoldCheck", "Frontier", "FrontierCheck", "TodoTracker", "request_text"]

_ELLIPSIS = "…"
_TODO_TOOLS = ("todowrite", "update_plan", "update_todo_list", "todo_write", "todo")
_TODO_KEYS = ("task_progress", "todos", "plan")
_CUT = re.compile(r"\n\[… [\d,]+ characters cut here …\]\n")
"""The line :func:`~windowkeeper.session._ledger_text.head_and_tail` puts between a head and a tail."""
_ROO_TODO = re.compile(r"<update_todo_list>\s*<todos>(.*?)</todos>", re.DOTALL)


def _normal(text: str) -> str:
    return " ".join(text.replace("\\", "/").split())


def _strings(value: Any, out: list[str]) -> None:
    """Every string inside a block (texts, tool results, tool inputs), depth first."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for key, inner in value.items():
            if key not in ("type", "id", "tool_use_id", "cache_control", "source", "signature"):
                _strings(inner, out)
    elif isinstance(value, list):
        for inner in value:
            _strings(inner, out)


class _Texts:
    """Normalized text of each message content, remembered by object (contents are shared)."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Any, str]] = {}

    def of(self, message: Message) -> str:
        content = message.get("content")
        entry = self._memo.get(id(content))
        if entry is None or entry[0] is not content:
            found: list[str] = []
            _strings(content, found)
            entry = self._memo[id(content)] = (content, _normal("\n".join(found)))
        return entry[1]


def request_text(messages: Sequence[Message], texts: _Texts | None = None) -> str:
    """The normalized text of a request's messages, one string to search."""
    texts = texts if texts is not None else _Texts()
    return "\n".join(texts.of(message) for message in messages)


@dataclass(frozen=True, slots=True)
class FrontierCheck:
    """What one request carried of the frontier."""

    task: bool
    instruction: bool
    files: bool

    @property
    def whole(self) -> bool:
        return self.task and self.instruction and self.files


@dataclass(frozen=True, slots=True)
class FoldCheck:
    """What the request sent right after a fold carried of the state of work."""

    instruction: bool
    files: bool
    todo: bool


def _todo_items(value: Any) -> list[str]:
    """The texts of one todo / plan state: a checklist string, or a list of items."""
    if isinstance(value, str):
        return [line for line in value.splitlines() if line.strip()]
    if isinstance(value, list):
        items = []
        for item in value:
            if isinstance(item, str):
                items.append(item)
            elif isinstance(item, dict):
                text = item.get("content") or item.get("step") or item.get("text")
                if isinstance(text, str) and text.strip():
                    items.append(text)
        return items
    return []


class TodoTracker:
    """The latest todo / plan state of a growing history: the last call of a todo tool
    (TodoWrite, update_plan, update_todo_list), a tool input's ``task_progress`` checklist
    (Cline), or a Roo Code ``<update_todo_list>`` in assistant text; each item a line."""

    def __init__(self) -> None:
        self.count = 0
        self.items: list[str] = []

    def extend(self, messages: Sequence[Message]) -> None:
        for message in messages:
            self.count += 1
            if message.get("role") != "assistant":
                continue
            content = message.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            for block in blocks if isinstance(blocks, list) else []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and isinstance(block.get("text"), str):
                    for found in _ROO_TODO.findall(block["text"]):
                        self.items = _todo_items(found) or self.items
                elif block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
                    tool_input = block["input"]
                    name = str(block.get("name", "")).lower()
                    for key in _TODO_KEYS:
                        if key in tool_input and (key == "task_progress" or name in _TODO_TOOLS):
                            self.items = _todo_items(tool_input[key]) or self.items


def _needle(item: str) -> str:
    return _normal(item.removesuffix(_ELLIPSIS))


def _carries(haystack: str, item: str) -> bool:
    """Whether ``haystack`` holds ``item`` as the ledger keeps it: whole; clipped, by the part
    before the ellipsis; a long one kept by its head and tail, by both (so the message itself,
    sent whole, counts, and so does the ledger's copy; a head alone does not)."""
    return all(_needle(part) in haystack for part in _CUT.split(item))


class Frontier:
    """Follows one replay's history and checks requests against its frontier."""

    def __init__(self) -> None:
        self._ledger = LedgerBuilder()
        self._texts = _Texts()
        self._todo = TodoTracker()

    def after_fold(self, history: Sequence[Message], messages: Sequence[Message]) -> FoldCheck:
        """What ``messages``, the request right after a fold, carry of the state of work: the
        latest instruction verbatim, every edited file, every item of the latest todo state."""
        builder = self._ledger
        builder.extend(history[builder.count :])
        self._todo.extend(history[self._todo.count :])
        ledger = builder.ledger()
        haystack = request_text(messages, self._texts)
        latest = ledger.latest_instruction
        return FoldCheck(
            instruction=latest is None or _carries(haystack, latest),
            files=all(_needle(path) in haystack for path in ledger.files_edited),
            todo=all(_needle(item) in haystack for item in self._todo.items),
        )

    def check(self, history: Sequence[Message], messages: Sequence[Message]) -> FrontierCheck:
        """What ``messages`` (a request for ``history``) carry of the frontier at that point."""
        builder = self._ledger
        builder.extend(history[builder.count :])
        ledger = builder.ledger()
        haystack = request_text(messages, self._texts)
        task = not ledger.task or _needle(ledger.task) in haystack
        latest = ledger.latest_instruction
        instruction = latest is None or _carries(haystack, latest)
        files = all(_needle(path) in haystack for path in ledger.files_edited)
        return FrontierCheck(task, instruction, files)
