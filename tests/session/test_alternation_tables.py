"""Runs of one role merged before a request is sent, message for message, whole or grown.

A provider expects roles to alternate; the session merges each run of one role into its first
message: strings become text blocks (an empty one is dropped), a user message lists its
tool_results first (a ``result missing`` placeholder gives way to the real result), an assistant
message its thinking first. Roles that alternate are sent as they are.
"""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import ContextSession

TASK = {"role": "user", "content": "task"}
THINKING = {"type": "thinking", "thinking": "t", "signature": "s"}
CALL = {
    "role": "assistant",
    "content": [{"type": "tool_use", "id": "t1", "name": "R", "input": {}}],
}
RESULT = {"type": "tool_result", "tool_use_id": "t1", "content": "r"}


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


CASES = [
    (
        [
            TASK,
            {"role": "assistant", "content": "x"},
            {"role": "user", "content": "a"},
            {"role": "user", "content": "b"},
        ],
        [
            TASK,
            {"role": "assistant", "content": "x"},
            {"role": "user", "content": [_text("a"), _text("b")]},
        ],
    ),
    (
        [
            TASK,
            {"role": "assistant", "content": "x"},
            {"role": "user", "content": ""},
            {"role": "user", "content": "b"},
        ],
        [TASK, {"role": "assistant", "content": "x"}, {"role": "user", "content": [_text("b")]}],
    ),
    (
        [
            TASK,
            CALL,
            {"role": "user", "content": [_text("note")]},
            {"role": "user", "content": [RESULT]},
        ],
        [TASK, CALL, {"role": "user", "content": [RESULT, _text("note")]}],
    ),
    (
        [
            TASK,
            {"role": "assistant", "content": [_text("x")]},
            {"role": "assistant", "content": [THINKING, _text("y")]},
            {"role": "user", "content": "go"},
        ],
        [
            TASK,
            {"role": "assistant", "content": [THINKING, _text("x"), _text("y")]},
            {"role": "user", "content": "go"},
        ],
    ),
    (
        [
            TASK,
            {"role": "assistant", "content": "x"},
            {"role": "assistant", "content": "y"},
            {"role": "assistant", "content": "z"},
            {"role": "user", "content": "go"},
        ],
        [
            TASK,
            {"role": "assistant", "content": [_text("x"), _text("y"), _text("z")]},
            {"role": "user", "content": "go"},
        ],
    ),
]


@pytest.mark.parametrize(("history", "sent"), CASES)
def test_a_run_of_one_role_is_sent_as_one_message(
    history: list[dict[str, Any]], sent: list[dict[str, Any]]
) -> None:
    keeper = ContextSession(100_000)
    keeper.extend(history)
    assert keeper.prepare().messages == sent


@pytest.mark.parametrize(("history", "sent"), CASES)
def test_grown_a_message_at_a_time_it_is_the_same(
    history: list[dict[str, Any]], sent: list[dict[str, Any]]
) -> None:
    """A request after each message: the merge of the last request is not taken for the next."""
    keeper = ContextSession(100_000)
    keeper.append(history[0])
    keeper.prepare()
    for message in history[1:]:
        keeper.append(message)
        if message["role"] == "user":
            keeper.prepare()
    assert keeper.prepare().messages == sent
    keeper.extend([{"role": "assistant", "content": "more"}, {"role": "user", "content": "end"}])
    assert keeper.prepare().messages == [
        *sent,
        {"role": "assistant", "content": "more"},
        {"role": "user", "content": "end"},
    ]


def test_alternating_roles_are_sent_as_they_are() -> None:
    history = [TASK, {"role": "assistant", "content": "x"}, {"role": "user", "content": "y"}]
    keeper = ContextSession(100_000)
    keeper.extend(history)
    assert keeper.prepare().messages == history
