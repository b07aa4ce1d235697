"""The contract every transcript reader keeps, tested once per reader, and counts on fixtures.

Unknown record or block types are skipped and counted, never fatal; a partial last line is
dropped with a warning; every model call is one assistant message and one request; recorded
usage is attached to the assistant message of its request; system prompt, tool definitions and
model are kept where the format records them. The counts are what ``inspect`` shows, counted by
hand on each fixture (see fixtures/README.md).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import TaskFolderError, validate_messages
from windowkeeper.cli._main import format_inspection
from windowkeeper.tools._inspection import inspect_trace
from windowkeeper.tools._trace import load_trace
from windowkeeper.transcripts import Transcript
from windowkeeper.transcripts._detect import read_transcript

FIXTURES = Path(__file__).parent / "fixtures"

# fixture: (agent, version, model calls, messages, tool calls, file-read copies, skipped types,
#           forks, requests with usage)
COUNTS: dict[str, tuple[Any, ...]] = {
    "claude_code_2_1.jsonl": ("Claude Code", "2.1.92", 5, 10, 5, 3, {"attachment": 1}, 1, 5),
    "claude_code_session.jsonl": (
        "Claude Code",
        "2.0.30",
        3,
        6,
        1,
        0,
        {"server_tool_use": 1, "x-future-record": 1},
        1,
        3,
    ),
    "codex_rollout_0144.jsonl": ("Codex CLI", "0.144.0", 4, 8, 4, 3, {}, 0, 4),
    "openhands_v1": ("OpenHands", None, 3, 6, 2, 1, {"FutureEvent": 1}, 0, 0),
    "roo_export.md": ("Roo Code", None, 2, 5, 1, 1, {}, 0, 0),
}


@pytest.mark.parametrize(("name", "expected"), sorted(COUNTS.items()))
def test_inspect_counts(name: str, expected: tuple[Any, ...]) -> None:
    """inspect agrees with the hand count of each fixture."""
    found = inspect_trace(load_trace(FIXTURES / name))
    assert (
        found.agent,
        found.version,
        found.model_calls,
        found.messages,
        sum(found.tool_calls.values()),
        sum(found.file_reads.values()),
        found.skipped,
        found.forks,
        found.usage.with_usage,
    ) == expected


def test_inspect_text_of_a_current_claude_code_session() -> None:
    """The lines a user checks against Claude Code's own view."""
    text = format_inspection(inspect_trace(load_trace(FIXTURES / "claude_code_2_1.jsonl")))
    lines = text.splitlines()
    assert lines[1:5] == [
        "agent         Claude Code 2.1.92",
        "model calls   5 (usage recorded for 5)",
        "skipped       1 of unknown types: attachment 1",
        "forks         1 branch left out (the live one is read)",
    ]
    assert "tool calls    5: Read 3, ToolSearch 1, Edit 1" in lines


# -- the contract, once per reader ------------------------------------------------------------

READERS = {
    "claude-code": "claude_code_2_1.jsonl",
    "codex": "codex_rollout_0144.jsonl",
    "gemini-cli": "gemini_session.jsonl",
    "openhands": "openhands_v1",
    "roo": "roo_export.md",
}

UNKNOWN_LINE = {
    "claude-code": {"type": "x-record-of-a-later-release", "sessionId": "s"},
    "codex": {"timestamp": "2026-08-20T12:41:00Z", "type": "x-later-line", "payload": {}},
    "gemini-cli": {"id": "x9", "timestamp": "2025-10-04T08:09:00Z", "type": "x-later"},
}


def _read(name: str) -> Transcript:
    return read_transcript(FIXTURES / name)


@pytest.mark.parametrize(("kind", "name"), sorted(READERS.items()))
class TestContract:
    def test_one_model_call_one_message_one_request(self, kind: str, name: str) -> None:
        """No two assistant messages in a row; each request names its own assistant message."""
        transcript = _read(name)
        roles = [message["role"] for message in transcript.messages]
        assert ("assistant", "assistant") not in set(itertools.pairwise(roles))
        indexes = [request.message_index for request in transcript.requests]
        assert len(indexes) == len(set(indexes))
        assert all(roles[index] == "assistant" for index in indexes if index is not None)
        assert validate_messages(list(transcript.messages)) == []

    def test_what_the_format_records_is_kept(self, kind: str, name: str) -> None:
        """System prompt, tools and model where the format records them."""
        transcript = _read(name)
        recorded = {
            "claude-code": (False, False, True),
            "codex": (True, False, True),
            "gemini-cli": (False, False, True),
            "openhands": (True, True, True),
            "roo": (False, False, True),
        }[kind]
        assert (
            transcript.system is not None,
            transcript.tools is not None,
            transcript.model is not None,
        ) == recorded


def _openhands_lines() -> str:
    events = sorted((FIXTURES / "openhands_v1" / "events").glob("*.json"))
    return "".join(json.dumps(json.loads(file.read_text())) + "\n" for file in events)


def _lines(kind: str) -> str:
    if kind == "openhands":
        return _openhands_lines()
    return (FIXTURES / READERS[kind]).read_text(encoding="utf-8")


UNKNOWN_LINE["openhands"] = {"id": "x", "source": "environment", "kind": "LaterKindEvent"}


@pytest.mark.parametrize("kind", sorted(UNKNOWN_LINE))
class TestJsonLines:
    """The readers of JSON Lines files (the OpenHands stream written one event a line too)."""

    def test_unknown_record_is_skipped_and_counted(self, kind: str, tmp_path: Path) -> None:
        """A record type of a later release is reported, and the rest read as before."""
        text = _lines(kind)
        before, after = tmp_path / "before.jsonl", tmp_path / "after.jsonl"
        before.write_text(text, encoding="utf-8")
        after.write_text(text + json.dumps(UNKNOWN_LINE[kind]) + "\n", encoding="utf-8")
        old, new = read_transcript(before, kind), read_transcript(after, kind)
        assert new.messages == old.messages
        assert len(new.unknown) == len(old.unknown) + 1
        assert new.unknown[-1].where.startswith(f"{after}:{len(text.splitlines()) + 1}")

    def test_partial_last_line_is_dropped_with_a_warning(self, kind: str, tmp_path: Path) -> None:
        """A last line cut short (the agent still writing) is left out, and said so."""
        text = _lines(kind)
        whole, cut = tmp_path / "whole.jsonl", tmp_path / "cut.jsonl"
        whole.write_text(text, encoding="utf-8")
        cut.write_text(text + '{"type":"assistant","message":{"role":"ass', encoding="utf-8")
        transcript = read_transcript(cut, kind)
        assert transcript.messages == read_transcript(whole, kind).messages
        line = len(text.splitlines()) + 1
        assert transcript.warnings == (f"{cut}:{line}: partial last line dropped",)

    def test_broken_middle_line_is_named_by_its_line(self, kind: str, tmp_path: Path) -> None:
        """A line that is not JSON before the last is an error at its own line number."""
        lines = _lines(kind).split("\n")
        path = tmp_path / "broken.jsonl"
        path.write_text("\n".join([*lines[:2], "{broken", *lines[2:]]), encoding="utf-8")
        with pytest.raises(TaskFolderError, match=r"broken\.jsonl:3: not JSON"):
            read_transcript(path, kind)


def test_real_roo_export_counts(corpus: Path) -> None:
    """The corpus's Roo export, counted by hand: 39 responses, 39 XML calls, 37 answered.

    14 read_file, 6 write_to_file, 6 apply_diff, 6 update_todo_list, 7 attempt_completion; two
    attempt_completion calls have no result (one before a task resumption, one the last turn)
    and stay text. UserStories.md is read 7 times.
    """
    found = inspect_trace(load_trace(corpus / "roo-markdown-export/roo_task_export_courseLLM.md"))
    assert (found.model_calls, found.messages) == (39, 79)
    assert found.tool_calls == {
        "read_file": 14,
        "update_todo_list": 6,
        "write_to_file": 6,
        "apply_diff": 6,
        "attempt_completion": 5,
    }
    assert found.file_reads["UserStories.md"] == 7


def test_real_swe_agent_counts(corpus: Path) -> None:
    """The corpus's SWE-agent function-calling run: 13 responses, 13 calls, open counted as reads."""
    found = inspect_trace(load_trace(corpus / "swe-agent/marshmallow-1867_function_calling.traj"))
    assert found.model_calls == 13
    assert sum(found.tool_calls.values()) == 13
    assert found.tool_calls["open"] == 2
    assert sum(found.file_reads.values()) == 2


def test_inspect_json_carries_the_per_file_numbers() -> None:
    """inspect --json has the same numbers as the text."""
    value = inspect_trace(load_trace(FIXTURES / "claude_code_2_1.jsonl")).to_json()
    assert value["agent"] == {"name": "Claude Code", "version": "2.1.92"}
    assert (value["model_calls"], value["forks"], value["skipped"]) == (5, 1, {"attachment": 1})
    assert value["warnings"] == []
    assert value["requests"]["with_usage"] == 5


def _codex_line(kind: str, payload: dict[str, Any]) -> str:
    return json.dumps({"timestamp": "2026-03-01T10:00:00.000Z", "type": kind, "payload": payload})


class TestNulCharacters:
    """A tool output holding NUL characters (a binary file printed) is read and replayable."""

    def _rollout(self, tmp_path: Path, output: str) -> Path:
        call = {"command": ["bash", "-lc", "head -c 16 out.bin"]}
        lines = [
            _codex_line("session_meta", {"id": "s", "cli_version": "0.140.0"}),
            _codex_line(
                "response_item",
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "What is in the build output?"}],
                },
            ),
            _codex_line(
                "response_item",
                {
                    "type": "function_call",
                    "name": "shell",
                    "arguments": json.dumps(call),
                    "call_id": "c1",
                },
            ),
            _codex_line(
                "response_item", {"type": "function_call_output", "call_id": "c1", "output": output}
            ),
        ]
        path = tmp_path / "rollout.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    def test_replaced_with_a_warning(self, tmp_path: Path) -> None:
        """Each NUL becomes U+FFFD, a warning counts them, and the session takes the messages."""
        from windowkeeper import ContextSession

        transcript = read_transcript(self._rollout(tmp_path, "ELF\x00\x00\x01 header"))
        result = transcript.messages[2]["content"][0]
        assert result["content"] == "ELF\ufffd\ufffd\x01 header"
        assert transcript.warnings == (
            "2 NUL characters replaced by U+FFFD (the first in messages[2])",
        )
        session = ContextSession(200_000)
        session.extend(list(transcript.messages))
        assert session.prepare().messages[-1]["content"][0]["tool_use_id"] == "c1"

    def test_without_nul_nothing_is_said(self, tmp_path: Path) -> None:
        """Nothing to replace: no warning, the output as it was."""
        transcript = read_transcript(self._rollout(tmp_path, "plain text"))
        assert transcript.warnings == ()
        assert transcript.messages[2]["content"][0]["content"] == "plain text"
