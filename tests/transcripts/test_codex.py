"""Codex CLI rollouts: response items to messages, token counts, compaction, old rollouts."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import MalformedMessageError, TaskFolderError, TokenUsage, validate_messages
from windowkeeper.transcripts import Unknown
from windowkeeper.transcripts.codex import looks_like_codex, parse_codex, read_codex

FIXTURES = Path(__file__).parent / "fixtures"
ROLLOUT = FIXTURES / "codex_rollout.jsonl"
LEGACY = FIXTURES / "codex_legacy.jsonl"


def _line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2025-10-02T09:00:00.000Z", "type": kind, "payload": payload}


def _message(role: str, text: str) -> dict[str, Any]:
    part = "output_text" if role == "assistant" else "input_text"
    return _line(
        "response_item",
        {"type": "message", "role": role, "content": [{"type": part, "text": text}]},
    )


def _call(call_id: str, command: str) -> dict[str, Any]:
    arguments = json.dumps({"command": ["bash", "-lc", command]})
    return _line(
        "response_item",
        {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": call_id},
    )


def _output(call_id: str, output: Any) -> dict[str, Any]:
    return _line(
        "response_item", {"type": "function_call_output", "call_id": call_id, "output": output}
    )


def _tokens(prompt: int, cached: int, output: int, total: int) -> dict[str, Any]:
    last = {"input_tokens": prompt, "cached_input_tokens": cached, "output_tokens": output}
    info = {"total_token_usage": {"total_tokens": total}, "last_token_usage": last}
    return _line("event_msg", {"type": "token_count", "info": info})


def _jsonl(records: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


class TestFixture:
    """The hand-written rollouts in fixtures/."""

    def test_keep_reads_every_turn(self) -> None:
        """With compaction="keep" all five responses are there, tool calls answered."""
        transcript = read_codex(ROLLOUT, compaction="keep")
        assert transcript.format == "codex"
        assert [m["role"] for m in transcript.messages] == ["user", "assistant"] * 5
        assert validate_messages(list(transcript.messages)) == []
        calls = [b for m in transcript.messages for b in m["content"] if b["type"] == "tool_use"]
        assert [(b["id"], b["name"]) for b in calls] == [
            ("call_1", "shell"),
            ("call_2", "shell"),
            ("call_3", "apply_patch"),
            ("call_4", "local_shell"),
            ("call_5", "shell"),
        ]
        assert calls[0]["input"] == {
            "command": ["bash", "-lc", "sed -n 1,80p src/dates.py"],
            "workdir": "/repo",
        }
        assert calls[2]["input"]["input"].startswith("*** Begin Patch")
        assert calls[3]["input"]["command"] == ["pytest", "-q"]

    def test_outputs(self) -> None:
        """Outputs keep the text Codex sent: JSON text, plain text, failure flag, content items."""
        transcript = read_codex(ROLLOUT, compaction="keep")
        results = {
            b["tool_use_id"]: b
            for m in transcript.messages
            for b in m["content"]
            if b["type"] == "tool_result"
        }
        assert json.loads(results["call_1"]["content"])["metadata"]["exit_code"] == 0
        assert results["call_3"]["content"].startswith("Success.")
        assert results["call_4"] == {
            "type": "tool_result",
            "tool_use_id": "call_4",
            "content": "1 failed, 11 passed",
            "is_error": True,
        }
        assert results["call_5"]["content"] == [_text("12 passed in 0.40s")]

    def test_system_tools_and_model(self) -> None:
        """Base instructions and developer text make the system; dynamic tools the tools."""
        transcript = read_codex(ROLLOUT, compaction="keep")
        assert transcript.system == (
            "You are Codex, a coding agent running in a terminal.\n\n"
            "<permissions instructions>Commands run in a workspace-write sandbox."
            "</permissions instructions>"
        )
        assert transcript.tools == (
            {
                "name": "lookup_ticket",
                "description": "Fetch a ticket by its id.",
                "input_schema": {
                    "type": "object",
                    "properties": {"id": {"type": "string"}},
                    "required": ["id"],
                },
            },
        )
        assert transcript.model == "gpt-5-codex"

    def test_token_counts(self) -> None:
        """One request per new token count; repeats and rate-limit-only events are skipped."""
        transcript = read_codex(ROLLOUT, compaction="keep")
        assert [(r.message_index, r.usage) for r in transcript.requests] == [
            (1, TokenUsage(tokens_in=1104, tokens_out=180, cache_reads=4096)),
            (3, TokenUsage(tokens_in=480, tokens_out=240, cache_reads=5120)),
            (5, TokenUsage(tokens_in=596, tokens_out=60, cache_reads=5504)),
            (9, TokenUsage(tokens_in=2400, tokens_out=90)),
        ]
        assert all(r.model == "gpt-5-codex" for r in transcript.requests)
        assert transcript.requests[0].where == f"{ROLLOUT}:13: payload"

    def test_last_compaction_restarts_at_the_replacement_history(self) -> None:
        """By default the history restarts at the replacement history of the compaction."""
        transcript = read_codex(ROLLOUT)
        assert transcript.compactions == 1
        assert [m["role"] for m in transcript.messages] == [
            "user",
            "assistant",
            "user",
            "assistant",
        ]
        first = transcript.messages[0]["content"]
        assert [b["text"] for b in first][-2:] == [
            "Summary: parse() now accepts ISO weeks; one test in tests/test_dates.py fails.",
            "Fix the failing test too.",
        ]
        assert [r.message_index for r in transcript.requests] == [3]
        assert validate_messages(list(transcript.messages)) == []

    def test_dropped_and_unknown(self) -> None:
        """Reasoning is dropped silently; a web search and an unknown line are reported."""
        transcript = read_codex(ROLLOUT, compaction="keep")
        assert transcript.unknown == (
            Unknown(f"{ROLLOUT}:22: payload", "web_search_call"),
            Unknown(f"{ROLLOUT}:32", "x_future_line"),
        )
        assert "Looking at the parser" not in json.dumps(transcript.messages)

    def test_legacy_rollout(self) -> None:
        """A rollout from before session_meta reads too; its state lines are skipped."""
        transcript = read_codex(LEGACY)
        assert transcript.system == "Always run the tests."
        assert [m["role"] for m in transcript.messages] == [
            "user",
            "assistant",
            "user",
            "assistant",
        ]
        assert transcript.messages[1]["content"][0]["name"] == "local_shell"
        assert transcript.messages[1]["content"][0]["id"] == "call_a"
        assert transcript.unknown == ()
        assert validate_messages(list(transcript.messages)) == []


class TestItems:
    """Small rollouts written by the tests."""

    def test_round_trip(self) -> None:
        """A turn with a call and its output reads as the Anthropic messages it stands for."""
        records = [
            _message("user", "List files"),
            _call("c1", "ls"),
            _output("c1", "a.py\n"),
            _message("assistant", "One file."),
        ]
        transcript = parse_codex(_jsonl(records))
        assert list(transcript.messages) == [
            {"role": "user", "content": [_text("List files")]},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "c1",
                        "name": "shell",
                        "input": {"command": ["bash", "-lc", "ls"]},
                    }
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "a.py\n"}],
            },
            {"role": "assistant", "content": [_text("One file.")]},
        ]

    def test_parallel_outputs_follow_call_order(self) -> None:
        """Outputs recorded in another order are put in the order of the calls."""
        records = [
            _message("user", "Go"),
            _call("c1", "ls"),
            _call("c2", "pwd"),
            _output("c2", "/repo"),
            _output("c1", "a.py"),
            _message("user", "And then?"),
        ]
        last = parse_codex(_jsonl(records)).messages[-1]["content"]
        assert [b.get("tool_use_id") for b in last] == ["c1", "c2", None]

    def test_token_count_ends_a_response(self) -> None:
        """Two responses without a user turn between stay two assistant messages."""
        records = [
            _message("user", "Go"),
            _message("assistant", "First"),
            _tokens(10, 0, 1, 11),
            _message("assistant", "Second"),
            _tokens(12, 0, 1, 24),
        ]
        transcript = parse_codex(_jsonl(records))
        assert [m["role"] for m in transcript.messages] == ["user", "assistant", "assistant"]
        assert [r.message_index for r in transcript.requests] == [1, 2]

    def test_request_without_a_message(self) -> None:
        """A response of reasoning only has a request with no message."""
        records = [
            _message("user", "Go"),
            _line("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "x"}),
            _tokens(10, 0, 5, 15),
        ]
        assert [r.message_index for r in parse_codex(_jsonl(records)).requests] == [None]

    def test_unparseable_arguments_are_kept(self) -> None:
        """Arguments that are not a JSON object are kept as text."""
        call = {"type": "function_call", "name": "shell", "arguments": "ls -la", "call_id": "c1"}
        records = [_message("user", "Go"), _line("response_item", call)]
        block = parse_codex(_jsonl(records)).messages[1]["content"][0]
        assert block["input"] == {"arguments": "ls -la"}

    def test_image_input(self) -> None:
        """An input_image data URL becomes a base64 image block."""
        item = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_image", "image_url": "data:image/png;base64,AAAA"}],
        }
        transcript = parse_codex(_jsonl([_line("response_item", item)]))
        assert transcript.messages[0]["content"] == [
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
            }
        ]

    def test_compaction_without_replacement_history(self) -> None:
        """An older compacted record leaves its summary as the first user message."""
        records = [
            _message("user", "Old task"),
            _message("assistant", "Old answer"),
            _line("compacted", {"message": "Summary of the old task."}),
            _message("user", "New task"),
        ]
        transcript = parse_codex(_jsonl(records))
        assert list(transcript.messages) == [
            {"role": "user", "content": [_text("Summary of the old task."), _text("New task")]}
        ]

    def test_records_are_not_modified(self) -> None:
        """Parsing loaded records leaves them as they were."""
        records = [_message("user", "Go"), _call("c1", "ls"), _output("c1", "a.py")]
        before = copy.deepcopy(records)
        parse_codex(records)
        assert records == before

    def test_unknown_content_part(self) -> None:
        """A content part of an unknown type is reported with its path."""
        item = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_audio", "data": "x"}],
        }
        transcript = parse_codex(_jsonl([_line("response_item", item)]), name="r.jsonl")
        assert transcript.unknown == (Unknown("r.jsonl:1: payload.content[0]", "input_audio"),)


class TestDetection:
    """looks_like_codex."""

    def test_rollouts(self) -> None:
        """New rollouts start with a typed line with a payload; old ones with id and timestamp."""
        assert looks_like_codex([_line("session_meta", {"id": "x"})])
        assert looks_like_codex(
            [{"id": "x", "timestamp": "t"}, {"record_type": "state"}, {"type": "message"}]
        )

    def test_other_records(self) -> None:
        """Claude Code records and plain messages are not rollouts."""
        assert not looks_like_codex([{"type": "user", "uuid": "u", "message": {}}])
        assert not looks_like_codex([{"role": "user", "content": "Hi"}])
        assert not looks_like_codex([])


class TestErrors:
    """Bad input names the file, the line and the JSON path."""

    def test_line_not_json(self, tmp_path: Path) -> None:
        """A broken line is named by its number."""
        path = tmp_path / "rollout.jsonl"
        path.write_text(_jsonl([_message("user", "Hi")]) + "not json\n", encoding="utf-8")
        with pytest.raises(TaskFolderError, match=r"rollout\.jsonl:2: not JSON"):
            read_codex(path)

    def test_payload_not_an_object(self) -> None:
        """A payload that is not an object is refused."""
        with pytest.raises(TaskFolderError, match=r"r\.jsonl:1: payload: expected an object"):
            parse_codex('{"type":"response_item","payload":[1]}', name="r.jsonl")

    def test_call_without_id(self) -> None:
        """A function call without a call_id is malformed, at its line and key."""
        call = {"type": "function_call", "name": "shell", "arguments": "{}"}
        with pytest.raises(MalformedMessageError) as caught:
            parse_codex(_jsonl([_line("response_item", call)]), name="r.jsonl")
        assert caught.value.path == "r.jsonl:1: payload.call_id"

    def test_bad_output(self) -> None:
        """An output that is a number is malformed."""
        with pytest.raises(MalformedMessageError) as caught:
            parse_codex(_jsonl([_output("c1", 3)]), name="r.jsonl")
        assert caught.value.path == "r.jsonl:1: payload.output"

    def test_bad_token_count(self) -> None:
        """A negative token count names its field."""
        with pytest.raises(TaskFolderError, match=r"last_token_usage\.input_tokens"):
            parse_codex(_jsonl([_tokens(-1, 0, 0, 5)]))

    def test_unknown_role(self) -> None:
        """A message role that is neither user, assistant, developer nor system is refused."""
        item = {"type": "message", "role": "critic", "content": []}
        with pytest.raises(MalformedMessageError, match="unknown role"):
            parse_codex(_jsonl([_line("response_item", item)]))


class TestCurrentRollout:
    """A rollout of Codex 0.144 (fixtures/codex_rollout_0144.jsonl)."""

    def test_world_state_is_bookkeeping(self) -> None:
        """world_state lines (a whole snapshot, then a change) are Codex's record of the context
        it sent, not content: the first user message is the environment and the task alone."""
        transcript = read_codex(Path(__file__).parent / "fixtures" / "codex_rollout_0144.jsonl")
        texts = [block["text"] for block in transcript.messages[0]["content"]]
        assert [text.split("\n")[0] for text in texts] == [
            "<environment_context>",
            "parse_date('2026-W05') raises; find out why and fix it.",
        ]
        assert transcript.version == "0.144.0"
        assert transcript.unknown == ()

    def test_shell_tools_of_current_versions_are_reads(self) -> None:
        """exec_command (cmd) and shell_command (command) reading one file count as its reads."""
        from windowkeeper import NativeReadDetector, OverwriteStore

        transcript = read_codex(Path(__file__).parent / "fixtures" / "codex_rollout_0144.jsonl")
        copies = NativeReadDetector().copies(list(transcript.messages), 0, OverwriteStore())
        assert {path: len(found) for path, found in copies.items()} == {
            "src/dates.py": 2,
            "tests/test_dates.py": 1,
        }


class TestForkedThreads:
    """Codex 0.15x: forked threads and per-call usage records."""

    def _meta(self, **extra: Any) -> dict[str, Any]:
        return _line("session_meta", {"id": "t-2", "cli_version": "0.159.0", **extra})

    def test_a_forked_thread_says_it_starts_partway(self) -> None:
        base = {"thread_id": "t-1", "end_ordinal_exclusive": 684, "end_byte_offset": 29454}
        records = [self._meta(ordinal=684, history_base=base), _message("user", "Go on.")]
        transcript = parse_codex(_jsonl(records), name="fork.jsonl")
        assert transcript.warnings == (
            "fork.jsonl:1: payload: this thread was forked from thread t-1: its first 684 items"
            " are in that thread's rollout, not in this file, so the transcript starts partway",
        )
        assert parse_codex(_jsonl([self._meta(), _message("user", "Hi")])).warnings == ()

    def test_a_usage_record_is_bookkeeping(self) -> None:
        """Its counts are the token_count event's: read once, and not reported as unknown."""
        usage = {"input_tokens": 14568, "cached_input_tokens": 9984, "output_tokens": 115}
        records = [
            self._meta(),
            _message("user", "Hi"),
            _message("assistant", "Hello"),
            _tokens(14568, 9984, 115, 14683),
            _line("token_usage_record", {"response_id": "resp_1", "usage": usage}),
        ]
        transcript = parse_codex(_jsonl(records))
        assert transcript.unknown == ()
        assert [request.usage for request in transcript.requests] == [
            TokenUsage(tokens_in=4584, tokens_out=115, cache_reads=9984)
        ]


class TestToolSearch:
    """Codex 0.14x loads tools on demand: a ``tool_search_call`` between the response's text and
    its next call, answered by a ``tool_search_output`` naming the tools it loaded."""

    def test_a_tool_search_is_a_call_and_its_answer(self) -> None:
        loaded = [
            {"type": "namespace", "name": "app", "tools": [{"type": "function", "name": "f"}]}
        ]
        search = {
            "type": "tool_search_call",
            "id": "tsc_1",
            "call_id": "call_s",
            "status": "completed",
            "execution": "client",
            "arguments": {"query": "job logs", "limit": 8},
        }
        found = {"type": "tool_search_output", "call_id": "call_s", "tools": loaded}
        transcript = parse_codex(
            _jsonl(
                [
                    _message("user", "Why did the job fail?"),
                    _message("assistant", "Looking for a tool."),
                    _line("response_item", search),
                    _line("response_item", found),
                    _tokens(100, 0, 10, 110),
                    _call("c1", "cat job.log"),
                    _output("c1", "boom"),
                    _tokens(200, 100, 10, 320),
                ]
            )
        )
        assert [m["role"] for m in transcript.messages] == [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
        ]
        assert transcript.messages[1]["content"][1] == {
            "type": "tool_use",
            "id": "call_s",
            "name": "tool_search",
            "input": {"query": "job logs", "limit": 8},
        }
        answer = transcript.messages[2]["content"][0]
        assert answer["tool_use_id"] == "call_s"
        assert json.loads(answer["content"]) == loaded
        assert transcript.unknown == ()
        assert validate_messages(list(transcript.messages)) == []

    def test_a_search_the_server_ran_is_left_out_and_string_arguments_are_read(self) -> None:
        """``execution: "server"`` (no call id) pairs nothing: reported, never fatal; a client
        search whose arguments are JSON text reads as one whose arguments are an object."""
        server_call = {"type": "tool_search_call", "call_id": None, "execution": "server"}
        server_output = {
            "type": "tool_search_output",
            "call_id": None,
            "execution": "server",
            "tools": [],
        }
        client = {"type": "tool_search_call", "call_id": "s1", "arguments": '{"query": "x"}'}
        answer = {"type": "tool_search_output", "call_id": "s1", "execution": "client", "tools": []}
        transcript = parse_codex(
            _jsonl(
                [
                    _message("user", "Go."),
                    _line("response_item", server_call),
                    _line("response_item", server_output),
                    _line("response_item", client),
                    _line("response_item", answer),
                    _tokens(100, 0, 10, 110),
                ]
            ),
            name="r.jsonl",
        )
        assert [u.type for u in transcript.unknown] == ["tool_search_call", "tool_search_output"]
        assert transcript.messages[1]["content"] == [
            {"type": "tool_use", "id": "s1", "name": "tool_search", "input": {"query": "x"}}
        ]
        assert validate_messages(list(transcript.messages)) == []
