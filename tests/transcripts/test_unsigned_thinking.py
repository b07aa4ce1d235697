"""Thinking without a signature: another model's reasoning, recorded as thinking, left out.

Claude Code pointed at another model through a gateway (GLM, DeepSeek: seen in real 2.1.x
sessions, among responses of a Claude model) records that model's reasoning as a ``thinking``
block with ``"signature": ""``; OpenHands V1 through LiteLLM writes ``thinking_blocks`` whose
``signature`` is null. No Anthropic request can carry such a block (the session refuses it at
``append``, and the API refuses the request), so the readers leave it out: the transcript replays,
and the rest of each response is kept.
"""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import ContextSession, validate_messages
from windowkeeper.transcripts.claude_code import parse_claude_code

from ..doubles import CODING_TOOLS, AnthropicDouble
from .claude_lines import line, results

_READ = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}}


def _claude_session(thinking: dict[str, Any]) -> str:
    """Two responses: ``thinking`` then a call (one response), then ``thinking`` alone."""
    lines = [
        line("user", "u-1", None, "Fix the bug in a.py."),
        line("assistant", "a-1", "u-1", [thinking], "1"),
        line("assistant", "a-2", "a-1", [_READ], "1"),
        line("user", "u-2", "a-2", results(("toolu_1", "x = 1"))),
        line("assistant", "a-3", "u-2", [thinking], "2"),
        line("user", "u-3", "a-3", "Go on."),
    ]
    return "\n".join(lines) + "\n"


def _types(messages: Any) -> list[tuple[str, list[str]]]:
    return [
        (m["role"], [b["type"] for b in m["content"]] if isinstance(m["content"], list) else [])
        for m in messages
    ]


@pytest.mark.parametrize(
    "thinking",
    [
        {"type": "thinking", "thinking": "The user wants a fix.", "signature": ""},
        {"type": "thinking", "thinking": "The user wants a fix."},
        {"type": "thinking", "thinking": "The user wants a fix.", "signature": None},
    ],
    ids=["empty signature", "no signature", "null signature"],
)
def test_claude_code_leaves_unsigned_thinking_out(thinking: dict[str, Any]) -> None:
    """The call stays; a response of unsigned thinking alone leaves no message, and the user
    turns around it are one message."""
    transcript = parse_claude_code(_claude_session(thinking))
    assert _types(transcript.messages) == [
        ("user", []),
        ("assistant", ["tool_use"]),
        ("user", ["tool_result", "text"]),
    ]
    assert transcript.unknown == ()
    assert validate_messages(list(transcript.messages)) == []


def test_claude_code_keeps_signed_thinking() -> None:
    """A signed block is what Anthropic returned: kept as it was, signature and all."""
    signed = {"type": "thinking", "thinking": "Read it first.", "signature": "EpcBsig"}
    transcript = parse_claude_code(_claude_session(signed))
    assert transcript.messages[1]["content"][0] == signed
    assert _types(transcript.messages)[3] == ("assistant", ["thinking"])


def test_a_gateway_session_replays_through_the_api() -> None:
    """Read, appended and prepared: every request is one the strict Anthropic double accepts
    (with the unsigned block kept, ``append`` raised MalformedMessageError)."""
    unsigned = {"type": "thinking", "thinking": "The user wants a fix.", "signature": ""}
    transcript = parse_claude_code(_claude_session(unsigned))
    session = ContextSession(20_000)
    api = AnthropicDouble(window=20_000)
    for message in transcript.messages:
        session.append(message)
        if message["role"] == "user":
            body = {
                "model": "claude-sonnet-4-5",
                "max_tokens": 1_000,
                "tools": CODING_TOOLS,
                "messages": session.prepare().messages,
            }
            assert api.check(body) == []
