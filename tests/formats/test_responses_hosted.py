"""Hosted tools' items and reasoning in Responses input: carried, counted, never sent last."""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import CalibratedEstimator, ContextSession
from windowkeeper.formats.responses import responses_wire, to_anthropic, validate_responses

TASK = {"role": "user", "content": "Find the release date."}
SEARCH = {
    "type": "web_search_call",
    "id": "ws_1",
    "status": "completed",
    "action": {"type": "search", "query": "release date"},
}
ANSWER = {
    "type": "message",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "It is in May."}],
}
REASONING = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e" * 4_000}


@pytest.mark.parametrize(
    "hosted",
    [
        SEARCH,
        {"type": "file_search_call", "id": "fs_1", "queries": ["x"], "status": "completed"},
        {
            "type": "mcp_call",
            "id": "mcp_1",
            "name": "lookup",
            "server_label": "s",
            "arguments": "{}",
        },
    ],
    ids=["web-search", "file-search", "mcp"],
)
def test_hosted_items_are_carried_through_unchanged(hosted: dict[str, Any]) -> None:
    """Accepted, valid, and sent back exactly as they came, in their place."""
    items = [TASK, hosted, ANSWER, {"role": "user", "content": "Thanks."}]
    assert validate_responses(items) == []
    session = ContextSession(50_000, format="responses")
    session.extend(items)
    sent = session.prepare().messages
    assert sent == items


def test_a_computer_call_and_its_output_travel_together() -> None:
    """Both halves ride on the message after them: hidden together or sent together."""
    call = {"type": "computer_call", "id": "cu_1", "call_id": "c1", "action": {"type": "click"}}
    output = {"type": "computer_call_output", "call_id": "c1", "output": {"type": "x"}}
    converted = to_anthropic([TASK, call, output, ANSWER]).messages
    assert len(converted) == 2
    carried = converted[1]["responses_before"]
    assert carried == [call, output]


def test_carried_items_are_counted() -> None:
    """A hosted item or a reasoning item makes the estimate larger by about its size."""
    plain = to_anthropic([TASK, ANSWER]).messages
    with_reasoning = to_anthropic([TASK, REASONING, ANSWER]).messages
    bare = CalibratedEstimator().count(plain)
    counted = CalibratedEstimator().count(with_reasoning)
    assert counted - bare >= 4_000 / 3.0


def test_a_trailing_reasoning_item_is_flagged_and_not_sent() -> None:
    items = [TASK, ANSWER, {"role": "user", "content": "More?"}, REASONING]
    assert [v.rule for v in validate_responses(items)] == ["trailing-reasoning"]
    wired, repairs = responses_wire(items)
    assert wired == items[:3]
    assert any("reasoning" in repair.detail for repair in repairs)
    session = ContextSession(50_000, format="responses")
    session.extend(items)
    prepared = session.prepare()
    assert validate_responses(prepared.messages) == []
    assert prepared.messages[-1] == items[2]
