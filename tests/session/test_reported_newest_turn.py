"""The decision from reported usage never hides the answer the newest turn replies to.

Seen replaying real Claude Code sessions at a small window: early in a session a read returns a
large file, the provider reports a request over the limit, and the original's keep (a quarter of
a short rest) hides everything after message 1 but the newest user message. That message holds
the results of the assistant message just hidden, so they were stripped as orphans and the
request ended with placeholder results for message 1's calls: the caller's newest message was
lost. The pre-flight's hiding step already keeps that answer; the usage decision now does too.
"""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import ContextSession, validate_messages

from .policy_tables import call, result


def _history(turns: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "user", "content": "Refactor the parser."}]
    for number in range(1, turns + 1):
        history += [
            call(number, file_path=f"f{number}.py"),
            result(number, f"line {number}\n" * 20),
        ]
    return history


def _prepared(history: list[dict[str, Any]], reported: int) -> Any:
    session = ContextSession(32_000, clock=lambda: 1)
    session.extend(history)
    session.record_usage({"input_tokens": reported, "output_tokens": 10}, timestamp=1)
    return session.prepare()


def _result_ids(message: dict[str, Any]) -> list[str]:
    return [block["tool_use_id"] for block in message["content"] if block["type"] == "tool_result"]


@pytest.mark.parametrize("reported", [25_590, 26_000, 60_000, 200_000])  # 25,600 = the limit
def test_the_newest_results_are_sent_with_their_call(reported: int) -> None:
    """Two turns, usage at or over the limit (half or quarter keep): the newest results and the
    call they answer are both in the request, which the provider accepts (25,590 input and 10
    output tokens make exactly the limit, where the original already truncates)."""
    prepared = _prepared(_history(2), reported)
    assert _result_ids(prepared.messages[-1]) == ["t2"]
    assert prepared.messages[-2]["content"][1]["id"] == "t2"
    assert validate_messages(prepared.messages) == []


def test_a_range_short_of_the_newest_turn_is_the_originals() -> None:
    """With more turns the original's quarter keep (of 11 messages, 8) stops short of the
    newest turn's answer: its range is taken as it is."""
    prepared = _prepared(_history(6), 200_000)
    assert prepared.deleted_range == (2, 9)
    assert _result_ids(prepared.messages[-1]) == ["t6"]
    assert prepared.messages[-2]["content"][1]["id"] == "t6"


def test_the_pre_flight_still_makes_it_fit() -> None:
    """When the decision is left out, the pre-flight shrinks a request over the window: the
    newest turn whole, the request within the limit."""
    history = _history(2)
    history[2] = result(1, "x = 1\n" * 40_000)
    prepared = _prepared(history, 60_000)
    assert prepared.estimated_tokens <= prepared.max_allowed_size
    assert _result_ids(prepared.messages[-1]) == ["t2"]
    assert validate_messages(prepared.messages) == []
