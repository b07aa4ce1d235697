"""Claude Code session transcripts: the main line, split responses, sidechains, compaction."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import MalformedMessageError, TaskFolderError, TokenUsage, validate_messages
from windowkeeper.cline import ApiRequest
from windowkeeper.transcripts import Transcript, Unknown
from windowkeeper.transcripts.claude_code import (
    looks_like_claude_code,
    parse_claude_code,
    read_claude_code,
)

FIXTURE = Path(__file__).parent / "fixtures" / "claude_code_session.jsonl"
MODEL = "claude-sonnet-4-5-20250929"


def _usage(output: int = 10) -> dict[str, int]:
    return {
        "input_tokens": 4,
        "output_tokens": output,
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 1000,
    }


def _record(kind: str, uuid: str, parent: str | None, content: Any, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message.update(id=extra.pop("message_id", f"msg_{uuid}"), model="claude-x")
        message["usage"] = extra.pop("usage", _usage())
    record = {"parentUuid": parent, "isSidechain": False, "sessionId": "s-1", "type": kind}
    return {**record, "message": message, "uuid": uuid, **extra}


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


def _jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def _types(message: dict[str, Any]) -> list[str]:
    return [block["type"] for block in message["content"]]


def _texts(transcript: Transcript) -> str:
    return json.dumps(transcript.messages)


class TestFixture:
    """The hand-written session in fixtures/claude_code_session.jsonl."""

    def test_last_compaction_starts_at_the_summary(self) -> None:
        """By default the history starts with the summary written after the last boundary."""
        transcript = read_claude_code(FIXTURE)
        assert transcript.format == "claude-code"
        assert [m["role"] for m in transcript.messages] == ["user", "assistant"] * 3
        assert transcript.messages[0]["content"].startswith("This session is being continued")
        assert transcript.compactions == 1
        assert validate_messages(list(transcript.messages)) == []

    def test_keep_compaction_reads_the_whole_session(self) -> None:
        """With compaction="keep" the chain goes on through logicalParentUuid to the start."""
        transcript = read_claude_code(FIXTURE, compaction="keep")
        assert [m["role"] for m in transcript.messages] == ["user", "assistant"] * 5
        assert transcript.messages[0] == {
            "role": "user",
            "content": "Fix the failing test in tests/test_parser.py",
        }
        summary = transcript.messages[4]["content"]
        assert _types(transcript.messages[4]) == ["tool_result", "text"]
        assert summary[1]["text"].startswith("This session is being continued")
        assert validate_messages(list(transcript.messages)) == []

    def test_split_response_is_one_message(self) -> None:
        """Four records sharing message.id make one assistant message, its usage counted once."""
        transcript = read_claude_code(FIXTURE, compaction="keep")
        first = transcript.messages[1]
        assert _types(first) == ["thinking", "text", "tool_use", "tool_use"]
        assert first["content"][0] == {
            "type": "thinking",
            "thinking": "Read the test, then run it.",
            "signature": "sig-01",
        }
        request = transcript.requests[0]
        assert request.message_index == 1
        assert request.usage == TokenUsage(
            tokens_in=3, tokens_out=71, cache_writes=5120, cache_reads=10240
        )
        assert request.where.endswith("claude_code_session.jsonl:7: message")

    def test_result_on_a_sibling_branch_is_recovered(self) -> None:
        """The first parallel result, whose parent is off the main line, still answers its call."""
        transcript = read_claude_code(FIXTURE, compaction="keep")
        results = transcript.messages[2]["content"]
        assert [block["tool_use_id"] for block in results] == ["toolu_01", "toolu_02"]
        assert results[1]["is_error"] is True

    def test_sidechains_dead_ends_and_errors_are_left_out(self) -> None:
        """Subagent records, an abandoned prompt and an API error notice are not in the history."""
        for compaction in ("last", "keep"):
            text = _texts(read_claude_code(FIXTURE, compaction=compaction))
            assert "Find every caller" not in text
            assert "abandoned" not in text
            assert "API Error" not in text

    def test_unknown_types_are_reported(self) -> None:
        """A record type and a block type the reader does not know are listed with their place."""
        transcript = read_claude_code(FIXTURE, compaction="keep")
        assert transcript.unknown == (
            Unknown(f"{FIXTURE}:14: message.content[0]", "server_tool_use"),
            Unknown(f"{FIXTURE}:23", "x-future-record"),
        )
        assert "server_tool_use" not in _texts(transcript)

    def test_requests_and_model(self) -> None:
        """One request per response with usage; the model is the last real one."""
        transcript = read_claude_code(FIXTURE, compaction="keep")
        assert [r.message_index for r in transcript.requests] == [1, 3, 5, 7, 9]
        assert {r.model for r in transcript.requests} == {MODEL}
        assert transcript.model == MODEL
        assert transcript.system is None
        assert transcript.tools is None

    def test_api_requests(self) -> None:
        """Requests convert to the ApiRequest values a Cline task gives."""
        transcript = read_claude_code(FIXTURE)
        first = transcript.api_requests()[0]
        assert first == ApiRequest(transcript.requests[0].usage, None, -1, history_index=1)


class TestRecords:
    """Small sessions written by the tests."""

    def test_round_trip(self) -> None:
        """A plain session reads back as the Anthropic messages it holds."""
        records = [
            _record("user", "u1", None, "List the files."),
            _record(
                "assistant",
                "a1",
                "u1",
                [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
            ),
            _record(
                "user",
                "r1",
                "a1",
                [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}],
                toolUseResult={"stdout": "a.py"},
            ),
            _record("assistant", "a2", "r1", [_text("One file: a.py.")]),
        ]
        transcript = parse_claude_code(_jsonl(records))
        assert list(transcript.messages) == [
            {"role": "user", "content": "List the files."},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}],
            },
            {"role": "assistant", "content": [_text("One file: a.py.")]},
        ]
        assert [r.usage for r in transcript.requests] == [
            TokenUsage(4, 10, 100, 1000),
            TokenUsage(4, 10, 100, 1000),
        ]

    def test_records_already_loaded(self) -> None:
        """A list of records reads like the file, record i reported as line i + 1."""
        records = [_record("user", "u1", None, [{"type": "mystery"}])]
        transcript = parse_claude_code(records, name="s.jsonl")
        assert transcript.unknown == (Unknown("s.jsonl:1: message.content[0]", "mystery"),)
        assert transcript.messages == ()

    def test_records_are_not_modified(self) -> None:
        """Parsing loaded records leaves them as they were."""
        records = [
            _record("user", "u1", None, "Hi"),
            _record("assistant", "a1", "u1", [_text("Hello")]),
        ]
        before = copy.deepcopy(records)
        parse_claude_code(records)
        assert records == before

    def test_newest_branch_wins(self) -> None:
        """After a redo the conversation follows the branch of the newest message."""
        records = [
            _record("user", "u1", None, "Question"),
            _record("assistant", "a1", "u1", [_text("First answer")]),
            _record("assistant", "a2", "u1", [_text("Second answer")]),
        ]
        transcript = parse_claude_code(_jsonl(records))
        assert _texts(transcript).count("answer") == 1
        assert transcript.messages[1]["content"] == [_text("Second answer")]

    def test_repeated_snapshot_is_kept_once(self) -> None:
        """A later record of a response repeating a block does not duplicate it."""
        block = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a"}}
        records = [
            _record("user", "u1", None, "Read a"),
            _record("assistant", "a1", "u1", [block], message_id="m", usage=_usage(2)),
            _record("assistant", "a2", "a1", [block], message_id="m", usage=_usage(9)),
            _record("user", "r1", "a2", [{"type": "tool_result", "tool_use_id": "t1"}]),
        ]
        transcript = parse_claude_code(_jsonl(records))
        assert transcript.messages[1]["content"] == [block]
        assert [r.usage.tokens_out for r in transcript.requests] == [9]
        assert validate_messages(list(transcript.messages)) == []

    def test_consecutive_user_records_are_merged(self) -> None:
        """Results and an interruption written as separate user records make one message."""
        calls = [
            {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": "ls"}}
            for n in (1, 2)
        ]
        records = [
            _record("user", "u1", None, "Go"),
            _record("assistant", "a1", "u1", calls),
            _record("user", "r2", "a1", [{"type": "tool_result", "tool_use_id": "t2"}]),
            _record("user", "r1", "r2", [{"type": "tool_result", "tool_use_id": "t1"}]),
            _record("user", "i1", "r1", [_text("[Request interrupted by user]")]),
        ]
        transcript = parse_claude_code(_jsonl(records))
        assert len(transcript.messages) == 3
        last = transcript.messages[2]["content"]
        assert [block.get("tool_use_id") for block in last] == ["t1", "t2", None]

    def test_subagent_file_is_read_as_its_own_conversation(self) -> None:
        """A file holding only sidechain records is the subagent's conversation."""
        records = [
            _record("user", "s1", None, "Find callers", isSidechain=True, agentId="x"),
            _record("assistant", "s2", "s1", [_text("Only cli.py")], isSidechain=True),
        ]
        transcript = parse_claude_code(_jsonl(records))
        assert [m["role"] for m in transcript.messages] == ["user", "assistant"]

    def test_sidechain_records_in_a_session_are_left_out(self) -> None:
        """Sidechain records beside the main line are not part of it, even when newer."""
        records = [
            _record("user", "u1", None, "Main task"),
            _record("assistant", "a1", "u1", [_text("Main answer")]),
            _record("user", "s1", None, "Side task", isSidechain=True),
        ]
        transcript = parse_claude_code(_jsonl(records))
        assert "Side task" not in _texts(transcript)
        assert len(transcript.messages) == 2

    def test_empty_text_and_unknown_result_parts(self) -> None:
        """Empty text blocks are dropped; unknown parts inside a tool_result are reported."""
        result = {
            "type": "tool_result",
            "tool_use_id": "t1",
            "content": [_text("ok"), {"type": "x-future-part", "name": "x"}],
        }
        records = [
            _record("user", "u1", None, "Go"),
            _record(
                "assistant",
                "a1",
                "u1",
                [_text(""), {"type": "tool_use", "id": "t1", "name": "X", "input": {}}],
            ),
            _record("user", "r1", "a1", [result]),
        ]
        transcript = parse_claude_code(_jsonl(records), name="s.jsonl")
        assert _types(transcript.messages[1]) == ["tool_use"]
        assert transcript.messages[2]["content"][0]["content"] == [_text("ok")]
        assert transcript.unknown == (
            Unknown("s.jsonl:3: message.content[0].content[1]", "x-future-part"),
        )

    def test_tool_reference_is_carried_as_text(self) -> None:
        """A ToolSearch result's tool_reference blocks are what the model saw: kept as text."""
        result = {
            "type": "tool_result",
            "tool_use_id": "t1",
            "content": [
                {"type": "tool_reference", "tool_name": "WebFetch"},
                {"type": "tool_reference", "tool_name": "mcp__docs__read"},
            ],
        }
        call = {"type": "tool_use", "id": "t1", "name": "ToolSearch", "input": {"query": "q"}}
        records = [
            _record("user", "u1", None, "Go"),
            _record("assistant", "a1", "u1", [call]),
            _record("user", "r1", "a1", [result]),
        ]
        transcript = parse_claude_code(_jsonl(records), name="s.jsonl")
        assert transcript.messages[2]["content"][0]["content"] == [
            _text("[tool_reference: WebFetch]"),
            _text("[tool_reference: mcp__docs__read]"),
        ]
        assert transcript.unknown == ()

    def test_every_compaction_is_counted(self) -> None:
        """Two boundaries: the history starts after the second, both are counted."""
        boundary = {"type": "system", "subtype": "compact_boundary", "parentUuid": None}
        records = [
            _record("user", "u1", None, "One"),
            {**boundary, "uuid": "c1", "logicalParentUuid": "u1"},
            _record("user", "k1", "c1", "Summary one"),
            {**boundary, "uuid": "c2", "logicalParentUuid": "k1"},
            _record("user", "k2", "c2", "Summary two"),
        ]
        last = parse_claude_code(_jsonl(records))
        assert last.messages == ({"role": "user", "content": "Summary two"},)
        kept = parse_claude_code(_jsonl(records), compaction="keep")
        texts = ["One", "Summary one", "Summary two"]
        assert kept.messages == ({"role": "user", "content": [_text(t) for t in texts]},)
        assert last.compactions == kept.compactions == 2

    def test_empty_file(self) -> None:
        """A file of summaries only holds no conversation."""
        transcript = parse_claude_code('{"type":"summary","summary":"x","leafUuid":"u"}\n')
        assert transcript.messages == ()
        assert transcript.requests == ()


class TestDetection:
    """looks_like_claude_code."""

    def test_session_records(self) -> None:
        """Records with uuid, parentUuid and a message are a session's, after bookkeeping ones."""
        records = [
            {"type": "summary", "summary": "x", "leafUuid": "u"},
            _record("user", "u1", None, "Hi"),
        ]
        assert looks_like_claude_code(records)

    def test_other_records(self) -> None:
        """Codex lines, plain messages and empty files are not."""
        assert not looks_like_claude_code([{"type": "session_meta", "payload": {}}])
        assert not looks_like_claude_code([{"role": "user", "content": "Hi"}])
        assert not looks_like_claude_code([])


class TestErrors:
    """Bad input names the file, the line and the JSON path."""

    def test_line_not_json(self, tmp_path: Path) -> None:
        """A broken line is named by its number."""
        path = tmp_path / "s.jsonl"
        path.write_text(_jsonl([_record("user", "u1", None, "Hi")]) + "{oops\n", encoding="utf-8")
        with pytest.raises(TaskFolderError, match=r"s\.jsonl:2: not JSON"):
            read_claude_code(path)

    def test_line_not_an_object(self) -> None:
        """A line holding an array is refused."""
        with pytest.raises(TaskFolderError, match=r"<string>:1: expected a JSON object, got array"):
            parse_claude_code("[1, 2]\n")

    def test_missing_file(self, tmp_path: Path) -> None:
        """A missing file raises TaskFolderError naming it."""
        with pytest.raises(TaskFolderError, match=r"absent\.jsonl"):
            read_claude_code(tmp_path / "absent.jsonl")

    def test_message_not_an_object(self) -> None:
        """A user record whose message is a string is malformed, at its line."""
        record = {"type": "user", "uuid": "u1", "parentUuid": None, "message": "Hi"}
        with pytest.raises(MalformedMessageError) as caught:
            parse_claude_code(_jsonl([record]), name="s.jsonl")
        assert caught.value.path == "s.jsonl:1: message"

    def test_bad_block(self) -> None:
        """A tool_use whose input is not an object is named down to the key."""
        block = {"type": "tool_use", "id": "t1", "name": "X", "input": "ls"}
        records = [_record("user", "u1", None, "Go"), _record("assistant", "a1", "u1", [block])]
        with pytest.raises(MalformedMessageError) as caught:
            parse_claude_code(_jsonl(records), name="s.jsonl")
        assert (
            str(caught.value)
            == "s.jsonl:2: message.content[0].input: expected an object, got string"
        )

    def test_bad_usage(self) -> None:
        """A usage count that is not a non-negative integer names its field."""
        records = [
            _record("user", "u1", None, "Go"),
            _record("assistant", "a1", "u1", [_text("x")], usage={"input_tokens": -1}),
        ]
        with pytest.raises(TaskFolderError, match=r"s\.jsonl:2: message\.usage\.input_tokens"):
            parse_claude_code(_jsonl(records), name="s.jsonl")

    def test_message_record_without_uuid(self) -> None:
        """A user record needs a uuid to be placed in the chain."""
        with pytest.raises(TaskFolderError, match=r"<string>:1: uuid"):
            parse_claude_code('{"type":"user","message":{"role":"user","content":"Hi"}}')

    def test_record_without_type(self) -> None:
        """A record whose type is not a string is refused."""
        with pytest.raises(TaskFolderError, match=r"<string>:1: type: expected a string"):
            parse_claude_code('{"uuid":"u1"}')

    def test_unknown_compaction_mode(self) -> None:
        """Only "last" and "keep" are compaction modes."""
        with pytest.raises(ValueError, match="compaction"):
            parse_claude_code("", compaction="all")  # type: ignore[arg-type]


def _call(call_id: str, path: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "Read", "input": {"file_path": path}}


def _result(call_id: str, text: str = "ok") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": text}


def _piece(
    uuid: str, parent: str, content: Any, message_id: str, request: str, **extra: Any
) -> dict[str, Any]:
    """An assistant record of one model call (``message.id`` and ``requestId``)."""
    return _record(
        "assistant", uuid, parent, content, message_id=message_id, requestId=request, **extra
    )


def _roles(transcript: Transcript) -> list[str]:
    return [message["role"] for message in transcript.messages]


def _progress(uuid: str, parent: str) -> dict[str, Any]:
    return {"type": "progress", "uuid": uuid, "parentUuid": parent, "sessionId": "s-1"}


class TestCurrentRecords:
    """What Claude Code 2.1.x writes: metadata records, interleaved parallel calls, forks."""

    def test_metadata_records_first_are_passed_over(self) -> None:
        """Detection rests on the message records, whatever record types come before them."""
        records = [
            {"type": "permission-mode", "permissionMode": "default", "sessionId": "s-1"},
            {"type": "x-record-of-next-release", "sessionId": "s-1"},
            {"type": "ai-title", "aiTitle": "t", "sessionId": "s-1"},
            _record("user", "u1", None, "Hi", version="2.1.92"),
            _record("assistant", "a1", "u1", [_text("Hello")], version="2.1.92"),
            {"type": "last-prompt", "lastPrompt": "Hi", "sessionId": "s-1"},
            # 2.1.22x bookkeeping
            {"type": "file-history-delta", "messageId": "a1", "trackingPath": "/w/a.md"},
            {"type": "bridge-session", "bridgeSessionId": "cse_1", "lastSequenceNum": 0},
        ]
        assert looks_like_claude_code(records)
        transcript = parse_claude_code(_jsonl(records), name="s.jsonl")
        assert transcript.unknown == (Unknown("s.jsonl:2", "x-record-of-next-release"),)
        assert transcript.version == "2.1.92"
        assert len(transcript.messages) == 2

    def test_a_forked_worker_warns_that_its_context_is_elsewhere(self) -> None:
        """A forked worker's file (2.1.22x) opens with a ``fork-context-ref`` naming the parent
        session and its last record: the worker's context, which this file does not hold."""
        ref = {
            "type": "fork-context-ref",
            "agentId": "w1",
            "parentSessionId": "p-1",
            "parentLastUuid": "p-last",
            "contextLength": 1038,
        }
        worker = [
            ref,
            {**_record("user", "u1", None, "You are a worker fork; go."), "isSidechain": True},
            {**_record("assistant", "a1", "u1", [_text("On it")]), "isSidechain": True},
        ]
        transcript = parse_claude_code(_jsonl(worker), name="w.jsonl")
        assert transcript.unknown == ()
        assert len(transcript.messages) == 2
        (warning,) = transcript.warnings
        assert warning.startswith("w.jsonl:1: this worker was forked from session 'p-1'")
        assert "up to record 'p-last'" in warning

    def test_other_formats_are_not_taken(self) -> None:
        """A Codex line (type and payload) or a message record without a message is not ours."""
        assert not looks_like_claude_code([{"type": "session_meta", "payload": {}}])
        assert not looks_like_claude_code([{"type": "user", "id": "1", "content": []}])

    def test_interleaved_parallel_calls_are_one_response(self) -> None:
        """Calls of one requestId written between their results: one message, one request."""
        records = [
            _record("user", "u1", None, "Read both"),
            _piece("a1", "u1", [_call("t1", "a.py")], "m1", "req_1", usage=_usage(5)),
            _record("user", "r1", "a1", [_result("t1", "A")]),
            _piece("a2", "r1", [_call("t2", "b.py")], "m1", "req_1", usage=_usage(9)),
            _record("user", "r2", "a2", [_result("t2", "B")]),
            _record("assistant", "a3", "r2", [_text("Done")], message_id="m2", requestId="req_2"),
        ]
        transcript = parse_claude_code(_jsonl(records))
        assert _roles(transcript) == ["user", "assistant"] * 2
        assert transcript.messages[1]["content"] == [_call("t1", "a.py"), _call("t2", "b.py")]
        assert transcript.messages[2]["content"] == [_result("t1", "A"), _result("t2", "B")]
        assert [(r.message_index, r.usage.tokens_out) for r in transcript.requests] == [
            (1, 9),
            (3, 10),
        ]
        assert transcript.model_calls == 2
        assert validate_messages(list(transcript.messages)) == []

    def test_request_id_tells_responses_apart(self) -> None:
        """Two calls sharing a (redacted) message.id but not a requestId stay two responses."""
        records = [
            _record("user", "u1", None, "Go"),
            _piece("a1", "u1", [_call("t1", "a.py")], "REDACTED", "req_1"),
            _record("user", "r1", "a1", [_result("t1")]),
            _piece("a2", "r1", [_call("t2", "b.py")], "REDACTED", "req_2"),
            _record("user", "r2", "a2", [_result("t2")]),
        ]
        transcript = parse_claude_code(_jsonl(records))
        assert transcript.model_calls == 2
        assert len(transcript.requests) == 2

    def test_user_text_closes_a_response(self) -> None:
        """After the user typed, a record of the same id does not reopen the earlier response."""
        records = [
            _record("user", "u1", None, "Go"),
            _record("assistant", "a1", "u1", [_call("t1", "a.py")], message_id="m1"),
            _record("user", "r1", "a1", [_result("t1")]),
            _record("user", "i1", "r1", [_text("stop")]),
            _record("assistant", "a2", "i1", [_text("Stopped")], message_id="m1"),
        ]
        transcript = parse_claude_code(_jsonl(records))
        assert _roles(transcript) == ["user", "assistant"] * 2

    def test_fork_at_progress_follows_the_last_response(self) -> None:
        """A newest record on a branch parted at a progress record does not hide the live one."""
        records = [
            _record("user", "u1", None, "Task"),
            _record("assistant", "a1", "u1", [_call("t1", "a.py")], requestId="req_1"),
            _progress("p1", "a1"),
            _record("user", "r1", "p1", [_result("t1")]),
            _record("assistant", "a2", "r1", [_text("Long live answer")], requestId="req_2"),
            _record("user", "u2", "a2", "Next"),
            _record("assistant", "a3", "u2", [_text("Last response")], requestId="req_3"),
            _progress("p2", "a1"),
            _record("user", "x1", "p2", "A retry sent on a dead branch"),
        ]
        transcript = parse_claude_code(_jsonl(records))
        assert "Last response" in _texts(transcript)
        assert "dead branch" not in _texts(transcript)
        assert transcript.messages[0]["content"] == "Task"
        assert transcript.forks == 1

    def test_parallel_result_branch_is_not_a_fork(self) -> None:
        """The dead-end tool_result beside a progress passthrough is recovered, not a fork."""
        records = [
            _record("user", "u1", None, "Task"),
            _record("assistant", "a1", "u1", [_call("t1", "a.py")], requestId="req_1"),
            _record("user", "r1", "a1", [_result("t1")]),
            _progress("p1", "a1"),
            _record("assistant", "a2", "p1", [_text("Answer")], requestId="req_2"),
        ]
        transcript = parse_claude_code(_jsonl(records))
        assert _roles(transcript) == ["user", "assistant"] * 2
        assert transcript.forks == 0
        assert validate_messages(list(transcript.messages)) == []

    def test_redo_is_counted_as_a_fork(self) -> None:
        """The abandoned answer of a redo is one fork left out."""
        records = [
            _record("user", "u1", None, "Question"),
            _record("assistant", "a1", "u1", [_text("First answer")]),
            _record("assistant", "a2", "u1", [_text("Second answer")]),
        ]
        assert parse_claude_code(_jsonl(records)).forks == 1

    def test_partial_last_line_is_dropped_with_a_warning(self, tmp_path: Path) -> None:
        """A last line still being written is left out, and said so."""
        path = tmp_path / "s.jsonl"
        text = _jsonl([_record("user", "u1", None, "Hi")]) + '{"type":"assistant","mess'
        path.write_text(text, encoding="utf-8")
        transcript = read_claude_code(path)
        assert transcript.warnings == (f"{path}:2: partial last line dropped",)
        assert len(transcript.messages) == 1

    def test_line_numbers_count_newlines_only(self, tmp_path: Path) -> None:
        """A U+2028 inside a string does not shift the line a broken record is reported at."""
        path = tmp_path / "s.jsonl"
        first = _record("user", "u1", None, "a\u2028b")
        text = json.dumps(first, ensure_ascii=False) + "\n{oops\n" + _jsonl([first])
        path.write_text(text, encoding="utf-8")
        with pytest.raises(TaskFolderError, match=r"s\.jsonl:2: not JSON"):
            read_claude_code(path)
