"""Transcripts of other agents: the shared Transcript, detection, and reading by format."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from windowkeeper import TaskFolderError, TokenUsage, validate_messages
from windowkeeper.rules import TOOL_RESULT_UNKNOWN, TOOL_USE_UNANSWERED
from windowkeeper.transcripts import RecordedRequest, Transcript, Unknown
from windowkeeper.transcripts._detect import (
    TRANSCRIPT_FORMATS,
    Compaction,
    detect_transcript,
    read_transcript,
)

FIXTURES = Path(__file__).parent / "fixtures"

DETECTED = [
    ("claude_code_session.jsonl", "claude-code"),
    ("codex_rollout.jsonl", "codex"),
    ("codex_legacy.jsonl", "codex"),
    ("gemini_checkpoint_legacy.json", "gemini-cli"),
    ("gemini_saved_chat.json", "gemini-cli"),
    ("gemini_restorable_checkpoint.json", "gemini-cli"),
    ("gemini_session.json", "gemini-cli"),
    ("gemini_session.jsonl", "gemini-cli"),
    ("openhands_trajectory.json", "openhands"),
    ("roo_export.md", "roo"),
]

COMPLETE = [name for name, _ in DETECTED if name != "gemini_restorable_checkpoint.json"]
"""Every fixture but the checkpoint taken before its tool ran holds only answered calls."""


class TestDetection:
    """detect_transcript tells the formats apart by content."""

    @pytest.mark.parametrize(("name", "kind"), DETECTED)
    def test_fixture(self, name: str, kind: str) -> None:
        """Each fixture is detected as its format."""
        assert detect_transcript(FIXTURES / name) == kind

    @pytest.mark.parametrize(
        "content",
        [
            json.dumps([{"role": "user", "content": "Hi"}]),
            json.dumps({"messages": [{"role": "user", "content": "Hi"}]}),
            json.dumps(
                {
                    "history": [{"role": "system", "content": "x"}],
                    "trajectory": [{"action": "ls", "observation": "a"}],
                }
            ),
            json.dumps({"anything": 1}),
            "# Notes\n\nNot a transcript.\n",
            "",
        ],
    )
    def test_other_files(self, tmp_path: Path, content: str) -> None:
        """Cline and OpenAI messages, SWE-agent trajectories and other text are none of them."""
        path = tmp_path / "other.json"
        path.write_text(content, encoding="utf-8")
        assert detect_transcript(path) is None

    def test_one_line_session(self, tmp_path: Path) -> None:
        """A JSON Lines file of one record (also a JSON object) is still detected."""
        record = {
            "type": "user",
            "uuid": "u",
            "parentUuid": None,
            "message": {"role": "user", "content": "Hi"},
        }
        path = tmp_path / "one.jsonl"
        path.write_text(json.dumps(record) + "\n", encoding="utf-8")
        assert detect_transcript(path) == "claude-code"
        assert read_transcript(path).messages == ({"role": "user", "content": "Hi"},)

    def test_missing_file(self, tmp_path: Path) -> None:
        """A file that cannot be read raises TaskFolderError naming it."""
        with pytest.raises(TaskFolderError, match=r"absent\.jsonl"):
            detect_transcript(tmp_path / "absent.jsonl")


class TestReading:
    """read_transcript reads any fixture into the library's shape."""

    @pytest.mark.parametrize(("name", "kind"), DETECTED)
    def test_format_and_shape(self, name: str, kind: str) -> None:
        """Every message is a user or assistant dict with string or block-list content."""
        transcript = read_transcript(FIXTURES / name)
        assert isinstance(transcript, Transcript)
        assert transcript.format == kind
        assert transcript.messages
        for message in transcript.messages:
            assert set(message) == {"role", "content"}
            assert message["role"] in ("user", "assistant")
            assert isinstance(message["content"], str | list)

    @pytest.mark.parametrize("name", COMPLETE)
    @pytest.mark.parametrize("compaction", ["last", "keep"])
    def test_pairing_is_valid(self, name: str, compaction: Compaction) -> None:
        """No tool_use is left unanswered, no tool_result answers nothing: no violation at all."""
        transcript = read_transcript(FIXTURES / name, compaction=compaction)
        violations = validate_messages(list(transcript.messages))
        assert not [v for v in violations if v.rule in (TOOL_USE_UNANSWERED, TOOL_RESULT_UNKNOWN)]
        assert violations == []

    @pytest.mark.parametrize("name", COMPLETE)
    def test_requests_point_at_assistant_messages(self, name: str) -> None:
        """Every recorded request names an assistant message of the transcript, in order."""
        transcript = read_transcript(FIXTURES / name)
        indices = [r.message_index for r in transcript.requests if r.message_index is not None]
        assert indices == sorted(indices)
        assert all(transcript.messages[i]["role"] == "assistant" for i in indices)

    def test_format_given(self) -> None:
        """A format given skips detection."""
        transcript = read_transcript(FIXTURES / "codex_rollout.jsonl", "codex", compaction="keep")
        assert transcript.format == "codex"
        assert len(transcript.messages) == 10

    def test_format_given_but_wrong(self) -> None:
        """Reading a file as another format fails with that reader's error."""
        with pytest.raises(TaskFolderError, match=r"openhands_trajectory\.json"):
            read_transcript(FIXTURES / "openhands_trajectory.json", "codex")

    def test_unknown_format_name(self) -> None:
        """A format name that is not one of TRANSCRIPT_FORMATS is refused."""
        with pytest.raises(TaskFolderError, match=r"unknown transcript format 'aider'"):
            read_transcript(FIXTURES / "roo_export.md", "aider")

    def test_not_a_transcript(self, tmp_path: Path) -> None:
        """A file of no known format is refused, naming it."""
        path = tmp_path / "notes.txt"
        path.write_text("hello\n", encoding="utf-8")
        with pytest.raises(
            TaskFolderError, match=r"notes\.txt: not a transcript of a known format"
        ):
            read_transcript(path)

    def test_formats(self) -> None:
        """Five formats, named as Transcript.format gives them."""
        assert TRANSCRIPT_FORMATS == ("claude-code", "codex", "gemini-cli", "openhands", "roo")


class TestTranscript:
    """The shared dataclasses."""

    def test_frozen(self) -> None:
        """A Transcript cannot be changed."""
        transcript = Transcript(format="roo", messages=())
        with pytest.raises(dataclasses.FrozenInstanceError):
            transcript.model = "x"  # type: ignore[misc]

    def test_defaults(self) -> None:
        """What a transcript does not record is None or empty."""
        transcript = Transcript(format="roo", messages=())
        assert (transcript.system, transcript.tools, transcript.model) == (None, None, None)
        assert (transcript.requests, transcript.unknown, transcript.compactions) == ((), (), 0)

    def test_unknown_reads_as_a_line(self) -> None:
        """An Unknown prints as place and type, ready to report."""
        assert str(Unknown("s.jsonl:12: message.content[3]", "server_tool_use")) == (
            "s.jsonl:12: message.content[3]: server_tool_use"
        )

    def test_api_requests_skip_requests_without_a_message(self) -> None:
        """Requests whose answer left no message have no ApiRequest."""
        usage = TokenUsage(1, 2)
        transcript = Transcript(
            format="codex",
            messages=(),
            requests=(RecordedRequest(None, usage), RecordedRequest(3, usage)),
        )
        assert [r.history_index for r in transcript.api_requests()] == [3]
