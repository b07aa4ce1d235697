"""A Claude Code file that lost a record: the conversation goes on past it, mended.

A real 2.1.167 session names in ``parentUuid``, 60 lines in, a record the file does not hold
(the one its task notifications were delivered in); its recorded usage shows that the live
request held everything before. Read from the record the chain breaks at, the task and the
first 59 lines were lost and the transcript began with an assistant message. Now the chain goes
on at the record written before the lost one, when that record leads back to the session's
start, and the seam keeps the provider's rules: a notice where the lost turn was, a result
saying it is missing for each call it answered. A file cut out of a longer session, and a
summary whose compaction boundary is lost, still start where they start.
"""

from __future__ import annotations

import json
from typing import Any

from windowkeeper import validate_messages
from windowkeeper.transcripts.claude_code import parse_claude_code

from .claude_lines import line

LOST_TURN = "[windowkeeper: the transcript does not hold what was sent here (a record is missing)]"
LOST_RESULT = "[windowkeeper: the result of this call is not in the transcript]"


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


def _call(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "make"}}


def _jsonl(lines: list[str]) -> str:
    return "".join(f"{record}\n" for record in lines)


def test_the_chain_goes_on_past_a_lostline() -> None:
    """Two responses side by side: the lost turn is a notice between them, with a warning."""
    records = [
        line("user", "u1", None, "Task: fix a.py"),
        line("assistant", "a1", "u1", [_text("Done.")]),
        json.dumps({"type": "system", "subtype": "away_summary", "uuid": "s1", "parentUuid": "a1"}),
        line("assistant", "a2", "gone", [_text("The tests pass too.")]),
        line("user", "u2", "a2", "Thanks"),
    ]
    transcript = parse_claude_code(_jsonl(records), name="s.jsonl")
    assert [m["content"] for m in transcript.messages] == [
        "Task: fix a.py",
        [_text("Done.")],
        [_text(LOST_TURN)],
        [_text("The tests pass too.")],
        "Thanks",
    ]
    assert validate_messages(list(transcript.messages)) == []
    assert transcript.warnings == (
        "s.jsonl:4: the record it follows ('gone') is not in the file: the conversation goes"
        " on at line 3, written before it",
    )


def test_a_lost_result_is_said_to_be_missing() -> None:
    """The lost record held a call's result: the seam answers the call, saying so; a user
    message after the seam gets the missing result before its own words."""
    before_a_response = [
        line("user", "u1", None, "Build it"),
        line("assistant", "a1", "u1", [_call("toolu_1")]),
        line("assistant", "a2", "lost", [_text("Built.")]),
    ]
    transcript = parse_claude_code(_jsonl(before_a_response))
    assert transcript.messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": LOST_RESULT},
        _text(LOST_TURN),
    ]
    before_words = [*before_a_response[:2], line("user", "u2", "lost", "Go on")]
    transcript = parse_claude_code(_jsonl(before_words))
    assert transcript.messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": LOST_RESULT},
        _text("Go on"),
    ]
    for records in (before_a_response, before_words):
        assert validate_messages(list(parse_claude_code(_jsonl(records)).messages)) == []


def test_a_file_cut_out_of_a_longer_session_starts_where_it_starts() -> None:
    """Records before the break that lead to no start of their own (their parents are in
    another file) are not joined: nothing is warned."""
    records = [
        line("assistant", "x1", "prev-a", [_text("An abandoned answer")]),
        line("user", "u1", "prev-b", "Continue"),
        line("assistant", "a1", "u1", [_text("OK")]),
    ]
    transcript = parse_claude_code(_jsonl(records))
    assert [m["content"] for m in transcript.messages] == ["Continue", [_text("OK")]]
    assert transcript.warnings == ()


def test_a_summary_whose_boundary_is_lost_starts_the_chain() -> None:
    """The summary after a compaction starts what the agent sent next, boundary or not."""
    records = [
        line("user", "u1", None, "Old task"),
        line("assistant", "a1", "u1", [_text("Old answer")]),
        line("user", "s1", "lost-boundary", "Summary: a.py fixed", isCompactSummary=True),
        line("assistant", "a2", "s1", [_text("Continuing")]),
    ]
    transcript = parse_claude_code(_jsonl(records))
    assert [m["content"] for m in transcript.messages] == [
        "Summary: a.py fixed",
        [_text("Continuing")],
    ]


def test_glued_records_join_in_file_order() -> None:
    """Two records on one line (a lost newline): the one written first is the one joined to."""
    records = [
        line("user", "u1", None, "First prompt"),
        line("assistant", "a1", "u1", [_text("First answer")]),
    ]
    glued = line("user", "u2", "a1", "Second prompt") + line(
        "assistant", "a2", "gone", [_text("Second answer")]
    )
    transcript = parse_claude_code(_jsonl(records) + glued + "\n")
    assert [m["content"] for m in transcript.messages] == [
        "First prompt",
        [_text("First answer")],
        "Second prompt",
        [_text("Second answer")],
    ]
