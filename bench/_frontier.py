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
clipped counts by its unclipped part.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from windowkeeper.core._messages import Message
from windowkeeper.session._ledger import LedgerBuilder

__all__ = ["Frontier", "FrontierCheck", "request_text"]

_ELLIPSIS = "…"


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


def _needle(item: str) -> str:
    return _normal(item.removesuffix(_ELLIPSIS))


class Frontier:
    """Follows one replay's history and checks requests against its frontier."""

    def __init__(self) -> None:
        self._ledger = LedgerBuilder()
        self._texts = _Texts()

    def check(self, history: Sequence[Message], messages: Sequence[Message]) -> FrontierCheck:
        """What ``messages`` (a request for ``history``) carry of the frontier at that point."""
        builder = self._ledger
        builder.extend(history[builder.count :])
        ledger = builder.ledger()
        haystack = request_text(messages, self._texts)
        task = not ledger.task or _needle(ledger.task) in haystack
        latest = ledger.latest_instruction
        instruction = latest is None or _needle(latest) in haystack
        files = all(_needle(path) in haystack for path in ledger.files_edited)
        return FrontierCheck(task, instruction, files)
