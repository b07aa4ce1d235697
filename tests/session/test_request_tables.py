"""What the session adds to the original's request, row by row: the truncation notice in a
greeting, and results whose call is not sent turned into text (and reported).
"""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import ContextSession

from .policy_tables import TRUNCATION_NOTICE
from .test_policy_tables_compaction import _asked

NOTICE = {"type": "text", "text": TRUNCATION_NOTICE}
OPENING = "[The conversation opens with the assistant's message that follows.]"
GREETED = [
    {"role": "assistant", "content": "Hello, how can I help?"},
    {"role": "user", "content": "Fix the parser."},
    {"role": "assistant", "content": "a2"},
    {"role": "user", "content": "u3"},
    {"role": "assistant", "content": "a4"},
    {"role": "user", "content": "u5"},
]


@pytest.mark.parametrize(
    ("hidden", "noticed", "after"),
    [
        (None, False, ["a2", "u3", "a4", "u5"]),
        ((2, 1), False, ["a2", "u3", "a4", "u5"]),  # an empty range hides nothing
        ((2, 3), True, ["a4", "u5"]),
    ],
)
def test_a_greeting_carries_the_notice_while_turns_are_hidden(
    hidden: tuple[int, int] | None, noticed: bool, after: list[str]
) -> None:
    keeper = ContextSession(100_000)
    keeper.extend(GREETED)
    keeper.deleted_range = hidden
    messages = keeper.prepare().messages
    assert messages[0] == {"role": "user", "content": [{"type": "text", "text": OPENING}]}
    greeting = "Hello, how can I help?"
    assert messages[1]["content"] == (
        [NOTICE, {"type": "text", "text": greeting}] if noticed else greeting
    )
    assert messages[2] == GREETED[1]
    assert [m["content"] for m in messages[3:]] == after


def test_the_noticed_greeting_is_the_same_object_from_request_to_request() -> None:
    keeper = ContextSession(100_000)
    keeper.extend(GREETED)
    keeper.deleted_range = (2, 3)
    first = keeper.prepare().messages[1]
    keeper.extend([{"role": "assistant", "content": "a6"}, {"role": "user", "content": "u7"}])
    assert keeper.prepare().messages[1] is first  # the cached prefix stays the same


ORPHAN = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t9", "content": "x"}]}
AS_TEXT = {
    "role": "user",
    "content": [
        {
            "type": "text",
            "text": "[windowkeeper: the result of a tool call (t9) whose call is not in this request:]",
        },
        {"type": "text", "text": "x"},
    ],
}


@pytest.mark.parametrize(
    ("opening", "where"),
    [
        ([{"role": "user", "content": "task"}], "messages[2]"),
        (
            [{"role": "assistant", "content": "Hello."}, {"role": "user", "content": "task"}],
            "messages[4]",
        ),
    ],
)
def test_a_result_whose_call_is_not_sent_becomes_text_and_is_reported(
    opening: list[dict[str, Any]], where: str
) -> None:
    keeper = ContextSession(100_000)
    keeper.extend([*opening, {"role": "assistant", "content": "a"}, ORPHAN])
    prepared = keeper.prepare()
    assert prepared.messages[-1] == AS_TEXT
    assert [(r.path, r.detail) for r in prepared.repairs] == [
        (where, "tool results whose call is not sent became text")
    ]


def test_a_request_with_nothing_to_repair_reports_nothing() -> None:
    keeper = ContextSession(100_000)
    keeper.extend(GREETED)
    assert keeper.prepare().repairs == ()


def test_a_range_of_one_message_is_noticed_too() -> None:
    keeper = ContextSession(100_000)
    keeper.extend(GREETED)
    keeper.deleted_range = (2, 2)  # a2 hidden: the task and u3 are sent as one user message
    messages = keeper.prepare().messages
    assert messages[1]["content"] == [NOTICE, {"type": "text", "text": "Hello, how can I help?"}]
    assert messages[2]["content"] == [
        {"type": "text", "text": "Fix the parser."},
        {"type": "text", "text": "u3"},
    ]


def test_the_continuation_is_the_same_object_while_the_fold_stands() -> None:
    keeper, _ = _asked()
    keeper.append({"role": "assistant", "content": "SUMMARY"})
    folded = keeper.prepare().messages
    keeper.extend([{"role": "assistant", "content": "next"}, {"role": "user", "content": "go"}])
    later = keeper.prepare().messages
    assert later[2] is folded[2]  # the cached prefix stays the same
    assert later[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "t0",
        "content": "[windowkeeper: this result was folded into the summary that follows]",
    }
