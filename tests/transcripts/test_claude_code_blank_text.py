"""Claude Code's blank text blocks: recorded, never sent, so never read.

Recent Claude Code sessions (2.1.x, with interleaved thinking) record a response as one record
per block, and many responses open with a text block of only ``"\\n\\n"`` before their thinking
block. The Messages API refuses a text block of only whitespace (and a thinking block after
another block), so Claude Code does not send it back; the reader drops it too, so the history
is what the agent sent and a request built from it keeps its thinking first.
"""

from __future__ import annotations

import pytest

from windowkeeper import ContextSession, validate_messages
from windowkeeper.transcripts.claude_code import parse_claude_code

from .claude_lines import line, results


def _session(blank: str) -> str:
    """A response written block by block: a blank text, thinking, text, a tool call."""
    thinking = {"type": "thinking", "thinking": "Look at the file first.", "signature": "sig-1"}
    call = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.py"}}
    lines = [
        line("user", "u-1", None, "Fix the bug in a.py."),
        line("assistant", "a-1", "u-1", [{"type": "text", "text": blank}], "1"),
        line("assistant", "a-2", "a-1", [thinking], "1"),
        line("assistant", "a-3", "a-2", [{"type": "text", "text": "Reading it."}], "1"),
        line("assistant", "a-4", "a-3", [call], "1"),
        line("user", "u-2", "a-4", results(("toolu_1", "x = 1"))),
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("blank", ["\n\n", " ", "\t\n  "])
def test_blank_text_before_thinking_is_dropped(blank: str) -> None:
    """The response reads as thinking, text, tool_use: the blank text is gone."""
    transcript = parse_claude_code(_session(blank))
    assistant = transcript.messages[1]
    assert [block["type"] for block in assistant["content"]] == ["thinking", "text", "tool_use"]
    assert validate_messages(transcript.messages) == []


def test_a_request_after_truncation_keeps_thinking_first() -> None:
    """Truncated, the request's message 1 carries the notice and still opens with thinking."""
    transcript = parse_claude_code(_session("\n\n"))
    history = [
        *transcript.messages,
        {"role": "assistant", "content": [{"type": "text", "text": "Found it."}]},
        {"role": "user", "content": "Now add a test."},
        {"role": "assistant", "content": [{"type": "text", "text": "Added."}]},
        {"role": "user", "content": "Thanks."},
    ]
    session = ContextSession(1_000, clock=lambda: 1)
    session.extend(history)
    session.record_usage({"input_tokens": 5_000, "output_tokens": 10}, timestamp=1)
    prepared = session.prepare()
    assert prepared.deleted_range is not None
    assert prepared.messages[1]["content"][0]["type"] == "thinking"
    assert validate_messages(prepared.messages) == []


def test_text_with_words_is_kept() -> None:
    """A text block with any non-blank character stays, blank lines and all."""
    transcript = parse_claude_code(_session("\n.\n"))
    assert transcript.messages[1]["content"][0] == {"type": "text", "text": "\n.\n"}
