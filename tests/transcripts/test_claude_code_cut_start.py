"""A Claude Code file whose chain starts in the middle of a session.

Files cut out of a longer session (a tool that copies the records since some point, or a
session file whose first record's parent lives in another file) start with the user record
that answers calls the file does not hold. Those results answer nothing in the file: read as
tool_result blocks they would make the first message break the provider's rules. They are kept
as text, each saying it is the result of a call made before the transcript begins, so the
history is valid and nothing the file holds is lost.
"""

from __future__ import annotations

from typing import Any

from windowkeeper import validate_messages
from windowkeeper.transcripts.claude_code import parse_claude_code

from .claude_lines import line, results


def _cut_session(result: Any) -> str:
    """Starts with the results of two calls made before the file (parent not in the file)."""
    call = {"type": "tool_use", "id": "toolu_new", "name": "Read", "input": {"file_path": "b.py"}}
    lines = [
        line(
            "user", "u-1", "earlier-record", results(("toolu_old1", result), ("toolu_old2", "ok"))
        ),
        line("assistant", "a-1", "u-1", [{"type": "text", "text": "Next, b.py."}, call]),
        line("user", "u-2", "a-1", results(("toolu_new", "b = 2"))),
    ]
    return "\n".join(lines) + "\n"


def test_results_before_the_file_become_text() -> None:
    """The first message holds the earlier results as text, named by call id; the history is
    valid; the file's own call and result are untouched."""
    transcript = parse_claude_code(_cut_session("a = 1"))
    first = transcript.messages[0]
    assert first == {
        "role": "user",
        "content": [
            {
                "type": "text",
                "text": "[result of tool call toolu_old1, made before this transcript begins]"
                "\na = 1",
            },
            {
                "type": "text",
                "text": "[result of tool call toolu_old2, made before this transcript begins]\nok",
            },
        ],
    }
    assert transcript.messages[2]["content"][0]["type"] == "tool_result"
    assert validate_messages(transcript.messages) == []


def test_block_results_keep_their_parts() -> None:
    """A result given as blocks keeps each block after the note (text and images alike)."""
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "AA=="},
    }
    transcript = parse_claude_code(_cut_session([{"type": "text", "text": "a = 1"}, image]))
    content = transcript.messages[0]["content"]
    assert content[:3] == [
        {
            "type": "text",
            "text": "[result of tool call toolu_old1, made before this transcript begins]",
        },
        {"type": "text", "text": "a = 1"},
        image,
    ]
    assert validate_messages(transcript.messages) == []
