"""JSON Lines files where a record was appended to a line that had lost its newline.

Claude Code (seen in 2.1.x sessions) appends ``summary`` and ``file-history-snapshot`` records
to a file whose last record was written without its closing newline, so two objects share one
line: ``{...assistant...}{"type":"summary",...}``. Such a file is the agent's own record of a
real session; the readers take each object of the line as a record of its own, with a warning,
instead of refusing the whole file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import TaskFolderError
from windowkeeper.tools._trace import load_trace
from windowkeeper.transcripts._common import head_records, jsonl_records
from windowkeeper.transcripts.claude_code import looks_like_claude_code, read_claude_code


def _record(kind: str, uuid: str, parent: str | None, content: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message |= {"id": f"msg_{uuid}", "model": "claude-x", "usage": {"input_tokens": 5}}
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": "s-1",
        "version": "2.1.7",
        "type": kind,
        "message": message,
        "uuid": uuid,
    }


SUMMARY = {"type": "summary", "summary": "Rename the flag", "leafUuid": "a-2"}
SNAPSHOT = {"type": "file-history-snapshot", "messageId": "u-3", "snapshot": {}}


def _glued_session() -> str:
    """A session whose second assistant record lost its newline before a summary record, and
    whose last user record lost it before a snapshot."""
    lines = [
        json.dumps(_record("user", "u-1", None, "Rename --fast to --quick.")),
        json.dumps(_record("assistant", "a-1", "u-1", [{"type": "text", "text": "On it."}])),
        json.dumps(_record("user", "u-2", "a-1", "Also update the docs.")),
        json.dumps(_record("assistant", "a-2", "u-2", [{"type": "text", "text": "Done."}]))
        + json.dumps(SUMMARY),
        json.dumps(_record("user", "u-3", "a-2", "Thanks, now the changelog."))
        + json.dumps(SNAPSHOT),
    ]
    return "\n".join(lines) + "\n"


@pytest.fixture
def glued(tmp_path: Path) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_text(_glued_session(), encoding="utf-8")
    return path


class TestGluedRecords:
    """Two JSON objects on one line are two records."""

    def test_each_object_is_a_record_with_the_line_number(self) -> None:
        """The objects of one line come out in order, both numbered with that line."""
        text = '{"a": 1}\n{"b": 2}{"c": 3}\n{"d": 4}\n'
        warnings: list[str] = []
        assert jsonl_records(text, "f.jsonl", warnings) == [
            (1, {"a": 1}),
            (2, {"b": 2}),
            (2, {"c": 3}),
            (3, {"d": 4}),
        ]
        assert warnings == ["f.jsonl:2: 2 records on one line (a newline was lost), read apart"]

    def test_whitespace_between_objects_is_allowed(self) -> None:
        """Objects separated by spaces on a line are read apart too."""
        assert jsonl_records('{"a": 1}  {"b": 2}\n', "f.jsonl", []) == [
            (1, {"a": 1}),
            (1, {"b": 2}),
        ]

    @pytest.mark.parametrize(
        ("line", "problem"),
        [
            ('{"a": 1}xyz', "not JSON"),
            ('{"a": 1}[1, 2]', "not JSON"),
            ('{"a": 1}{"b": ', "not JSON"),
        ],
    )
    def test_other_trailing_text_is_still_refused(self, line: str, problem: str) -> None:
        """Only whole objects are read apart: anything else after the first value is refused,
        naming the line."""
        with pytest.raises(TaskFolderError, match=rf"f\.jsonl:2: {problem}"):
            jsonl_records('{"x": 0}\n' + line + '\n{"y": 1}\n', "f.jsonl", [])

    def test_head_records_reads_them_apart(self) -> None:
        """Format detection sees the glued records as records."""
        assert head_records('{"a": 1}{"b": 2}\n{"c": 3}\n') == [{"a": 1}, {"b": 2}, {"c": 3}]

    def test_a_partial_last_line_is_still_dropped(self) -> None:
        """A last line with no newline whose second object is cut off is a record still being
        written: dropped with a warning, as before."""
        warnings: list[str] = []
        records = jsonl_records('{"a": 1}\n{"b": 2}{"c": ', "f.jsonl", warnings)
        assert records == [(1, {"a": 1})]
        assert warnings == ["f.jsonl:2: partial last line dropped"]


class TestClaudeCodeSession:
    """A Claude Code session with glued lines reads like the same session without them."""

    def test_detected_and_read(self, glued: Path) -> None:
        """The file is a Claude Code session: its four messages, the last user message kept."""
        assert looks_like_claude_code(head_records(glued.read_text(encoding="utf-8")))
        transcript = read_claude_code(glued)
        assert [m["role"] for m in transcript.messages] == ["user", "assistant"] * 2 + ["user"]
        assert transcript.messages[-1]["content"] == "Thanks, now the changelog."
        assert len(transcript.warnings) == 2

    def test_same_as_with_newlines(self, glued: Path, tmp_path: Path) -> None:
        """Putting the newlines back changes nothing but the warnings."""
        fixed = tmp_path / "fixed.jsonl"
        text = glued.read_text(encoding="utf-8").replace("}{", "}\n{")
        fixed.write_text(text, encoding="utf-8")
        assert read_claude_code(glued).messages == read_claude_code(fixed).messages

    def test_trace_loads(self, glued: Path) -> None:
        """The command-line tool's loader takes it, and says what it repaired."""
        trace = load_trace(glued)
        assert len(trace.history) == 5
        assert any("read apart" in warning for warning in trace.warnings)
