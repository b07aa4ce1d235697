"""Small hand-written histories and a counter exact for them, shared by ``test_policy_tables_*``.

Everything here is built from public names only, so the tables survive any reshaping of the
session's internals: a message is a plain dict in the Anthropic shape, a request is what
:meth:`~windowkeeper.ContextSession.prepare` returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from windowkeeper import ContextSession, Prepared
from windowkeeper.storage import Commit, Snapshot

from ..counters import RuleCounter

TASK = {"role": "user", "content": "Fix the parser."}
TRUNCATION_NOTICE = (  # the original's wording (Cline's context manager), pinned
    "[NOTE] Some previous conversation history with the user has been removed to maintain optimal"
    " context window length. The initial user task has been retained for continuity, while"
    " intermediate conversation history has been removed. Keep this in mind as you continue"
    " assisting the user. Pay special attention to the user's latest messages."
)


def characters(value: Any) -> int:
    """Characters of every string inside a JSON-like value (block types not counted)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(characters(item) for item in value)
    if isinstance(value, dict):
        return sum(characters(item) for key, item in value.items() if key != "type")
    return 0


def tokens(messages: Sequence[Any], system: Any = None, tools: Any = None) -> int:
    """The tables' provider: four characters a token and five tokens of overhead a message."""
    return (characters(list(messages)) + characters(system) + characters(tools)) // 4 + 5 * len(
        messages
    )


class Clock:
    """Milliseconds that advance by one second a call."""

    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        self.now += 1_000
        return self.now


def session(window: int = 10_000, **options: Any) -> ContextSession:
    """A session counting exactly with :func:`tokens`, no arrival clips unless asked."""
    options.setdefault("max_result_share", None)
    return ContextSession(window, counter=RuleCounter(tokens), clock=Clock(), **options)


def call(turn: int, name: str = "Read", **arguments: Any) -> dict[str, Any]:
    """The assistant's turn ``turn``: a line of text and one tool call ``t<turn>``."""
    return {
        "role": "assistant",
        "content": [
            {"type": "text", "text": f"step {turn}"},
            {"type": "tool_use", "id": f"t{turn}", "name": name, "input": arguments},
        ],
    }


def result(turn: int, text: str) -> dict[str, Any]:
    """The user message answering :func:`call` ``turn`` with ``text``."""
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": f"t{turn}", "content": text}],
    }


def turn(number: int, size: int, name: str = "Read") -> list[dict[str, Any]]:
    """A call reading ``m<number>.py`` and its result of ``size`` characters."""
    return [call(number, name, file_path=f"m{number}.py"), result(number, "y" * size)]


def actions(prepared: Prepared) -> list[tuple[str, tuple[int, ...], Any]]:
    """Each action of a request as (step, messages, hidden range)."""
    return [(a.step, a.messages, a.deleted_range) for a in prepared.actions]


def tool_ids(messages: Sequence[Any]) -> list[str]:
    """The tool call ids of a request's assistant messages, in order."""
    return [
        block["id"]
        for message in messages
        if message["role"] == "assistant" and isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_use"
    ]


class Held:
    """A backend holding one snapshot, as a store of windowkeeper 0.1 left it; commits are kept."""

    name = "held"

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.commits: list[Commit] = []

    def load(self) -> Snapshot | None:
        return self.snapshot

    def commit(self, commit: Commit) -> int:
        self.commits.append(commit)
        return self.snapshot.version + len(self.commits)

    def close(self) -> None:
        pass


def state_v1(**extra: Any) -> dict[str, Any]:
    """A state as windowkeeper 0.1 wrote it (session/_session.py's _state_value at 53de5c0):
    version 1, the compaction keys at the top level, present once a fold or an ask existed."""
    return {
        "version": 1,
        "history_length": 12,
        "deleted_range": [2, 7],
        "generation": 3,
        "last_timestamp": 1_700_000_000_123,
        "usage": [10, 2, 3, 4],
        "usage_timestamp": 1_700_000_000_100,
        "usage_generation": 2,
        "clips": [[9, 0, 500]],
        **extra,
    }
