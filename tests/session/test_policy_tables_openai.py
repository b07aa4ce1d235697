"""A session fed in OpenAI's shape, cut back: what the next request sends, message for message.

``format="openai"`` keeps the Chat Completions history beside its Anthropic form; ``sync`` with
a shorter history and ``rollback`` cut it and rebuild the Anthropic form from what is left.
"""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import ContextSession

SYSTEM = {"role": "system", "content": "Be brief."}
TASK = {"role": "user", "content": "Fix the parser."}
LATER = [{"role": "assistant", "content": "On it."}, {"role": "user", "content": "Go on."}]


def _fed(*messages: dict[str, Any]) -> ContextSession:
    keeper = ContextSession(10_000, format="openai")
    keeper.extend([*messages, *LATER])
    assert keeper.prepare().messages == [*messages, *LATER]
    return keeper


@pytest.mark.parametrize("kept", [[TASK], [SYSTEM, TASK]])
class TestCutBack:
    def test_a_sync_to_the_opening_sends_the_opening_alone(self, kept: list[Any]) -> None:
        keeper = _fed(*kept)
        synced = keeper.sync(kept)
        assert (synced.kept, synced.appended, synced.dropped) == (len(kept), 0, 2)
        assert keeper.prepare().messages == kept
        keeper.extend(LATER)  # and grows again from there
        assert keeper.prepare().messages == [*kept, *LATER]

    def test_a_rollback_to_the_opening_sends_the_opening_alone(self, kept: list[Any]) -> None:
        keeper = ContextSession(10_000, format="openai")
        keeper.extend(kept)
        opening = keeper.checkpoint()
        keeper.extend(LATER)
        keeper.prepare()
        keeper.rollback(opening)
        assert keeper.history == kept
        assert keeper.prepare().messages == kept


CALL = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"p": 1}'}}


def _text(text: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": text}]


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        # one plain text part beside tool calls, and in a user message after tool messages: its
        # string, the form the Anthropic shape gives back
        (
            [
                {"role": "assistant", "content": _text("Reading."), "tool_calls": [CALL]},
                {"role": "tool", "tool_call_id": "c1", "content": "x = 1"},
                {"role": "user", "content": _text("Go on.")},
            ],
            [
                {"role": "assistant", "content": "Reading.", "tool_calls": [CALL]},
                {"role": "tool", "tool_call_id": "c1", "content": "x = 1"},
                {"role": "user", "content": "Go on."},
            ],
        ),
        (  # a user message after a user message: kept as given
            [{"role": "assistant", "content": "On it."}, {"role": "user", "content": _text("Go.")}],
            [{"role": "assistant", "content": "On it."}, {"role": "user", "content": _text("Go.")}],
        ),
    ],
)
def test_the_history_keeps_the_canonical_form(given: list[Any], kept: list[Any]) -> None:
    keeper = ContextSession(10_000, format="openai")
    keeper.extend([TASK, *given])
    assert keeper.history == [TASK, *kept]
    assert keeper.prepare().messages == [TASK, *kept]
