"""Gemini CLI saved chats, checkpoints and session recordings."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import MalformedMessageError, TaskFolderError, TokenUsage, validate_messages
from windowkeeper.transcripts import Unknown
from windowkeeper.transcripts.gemini_cli import (
    looks_like_gemini_cli,
    parse_gemini_cli,
    read_gemini_cli,
)

FIXTURES = Path(__file__).parent / "fixtures"
LEGACY = FIXTURES / "gemini_checkpoint_legacy.json"
SAVED = FIXTURES / "gemini_saved_chat.json"
RESTORABLE = FIXTURES / "gemini_restorable_checkpoint.json"
SESSION = FIXTURES / "gemini_session.json"
SESSION_JSONL = FIXTURES / "gemini_session.jsonl"


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


def _call(name: str, call_id: str | None = None, **args: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": args}
    if call_id is not None:
        call["id"] = call_id
    return {"functionCall": call}


def _response(name: str, output: str, call_id: str | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {"name": name, "response": {"output": output}}
    if call_id is not None:
        response["id"] = call_id
    return {"functionResponse": response}


def _ids(messages: tuple[dict[str, Any], ...]) -> list[tuple[str, str]]:
    return [
        (block["type"], block.get("id") or block.get("tool_use_id"))
        for message in messages
        for block in message["content"]
        if block["type"] in ("tool_use", "tool_result")
    ]


class TestSavedChats:
    """Checkpoints: lists of Gemini API contents."""

    def test_legacy_checkpoint_pairs_by_order(self) -> None:
        """Calls and responses without ids get the same id, paired by name in order."""
        transcript = read_gemini_cli(LEGACY)
        assert transcript.format == "gemini-cli"
        assert [m["role"] for m in transcript.messages] == ["user", "assistant"] * 4
        assert _ids(transcript.messages) == [
            ("tool_use", "gemini-3-2"),
            ("tool_use", "gemini-3-3"),
            ("tool_result", "gemini-3-2"),
            ("tool_result", "gemini-3-3"),
            ("tool_use", "gemini-5-0"),
            ("tool_use", "gemini-5-1"),
            ("tool_result", "gemini-5-0"),
            ("tool_result", "gemini-5-1"),
        ]
        assert validate_messages(list(transcript.messages)) == []

    def test_responses_and_errors(self) -> None:
        """An output response is its text; an error response is flagged."""
        transcript = read_gemini_cli(LEGACY)
        results = transcript.messages[6]["content"]
        assert results[0] == {
            "type": "tool_result",
            "tool_use_id": "gemini-5-0",
            "content": "import pytest\n",
        }
        assert results[1]["is_error"] is True
        assert results[1]["content"] == "File not found: /work/app/setup.cfg"

    def test_thoughts_dropped_and_unknown_reported(self) -> None:
        """Thought parts are dropped silently; executable code is reported."""
        transcript = read_gemini_cli(LEGACY)
        assert transcript.messages[3]["content"][0] == _text(
            "Let me read the Makefile and run the tests."
        )
        assert "Checking the Makefile" not in json.dumps(transcript.messages)
        assert transcript.unknown == (Unknown(f"{LEGACY}: [7].parts[1]", "executableCode"),)
        assert transcript.model is None
        assert transcript.requests == ()

    def test_saved_chat_with_ids_and_an_image(self) -> None:
        """A {"history": [...]} chat keeps the ids it has and reads inline images."""
        transcript = read_gemini_cli(SAVED)
        first = transcript.messages[0]["content"]
        assert first[0] == _text("What does this screenshot show?")
        assert first[1]["type"] == "image"
        assert first[1]["source"]["media_type"] == "image/png"
        assert _ids(transcript.messages) == [
            ("tool_use", "glob-1759480000000-a1"),
            ("tool_result", "glob-1759480000000-a1"),
        ]
        assert transcript.unknown == (Unknown(f"{SAVED}: history[0].parts[2]", "fileData"),)
        assert validate_messages(list(transcript.messages)) == []

    def test_restorable_checkpoint_reads_the_client_history(self) -> None:
        """A restorable checkpoint's clientHistory is the conversation, before the tool ran."""
        transcript = read_gemini_cli(RESTORABLE)
        assert [m["role"] for m in transcript.messages] == ["user", "assistant"]
        assert [str(v) for v in validate_messages(list(transcript.messages))] == [
            "messages[1]: tool-use-unanswered: the request ends with a tool_use"
        ]

    def test_round_trip(self) -> None:
        """Contents read back as the Anthropic messages they stand for."""
        contents = [
            {"role": "user", "parts": [{"text": "Read a.py"}]},
            {"role": "model", "parts": [_call("read_file", "c1", path="a.py")]},
            {"role": "user", "parts": [_response("read_file", "x = 1", "c1")]},
            {"role": "model", "parts": [{"text": "It sets x."}]},
        ]
        transcript = parse_gemini_cli(contents)
        assert list(transcript.messages) == [
            {"role": "user", "content": [_text("Read a.py")]},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a.py"}}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "x = 1"}],
            },
            {"role": "assistant", "content": [_text("It sets x.")]},
        ]

    def test_ids_half_given(self) -> None:
        """A call without an id takes its response's; a response without one takes its call's."""
        contents = [
            {"role": "user", "parts": [{"text": "Go"}]},
            {"role": "model", "parts": [_call("ls"), _call("cat", "k2")]},
            {"role": "user", "parts": [_response("cat", "b"), _response("ls", "a", "r1")]},
        ]
        transcript = parse_gemini_cli(contents)
        assert _ids(transcript.messages) == [
            ("tool_use", "r1"),
            ("tool_use", "k2"),
            ("tool_result", "r1"),
            ("tool_result", "k2"),
        ]
        assert validate_messages(list(transcript.messages)) == []

    def test_structured_response_is_json_text(self) -> None:
        """A response that is not a lone output or error is written as compact JSON."""
        part = {"functionResponse": {"name": "f", "response": {"files": ["a", "b"], "count": 2}}}
        contents = [{"role": "model", "parts": [_call("f")]}, {"role": "user", "parts": [part]}]
        result = parse_gemini_cli(contents).messages[1]["content"][0]
        assert result["content"] == '{"files":["a","b"],"count":2}'

    def test_value_is_not_modified(self) -> None:
        """Parsing a loaded value leaves it as it was (ids are not written back)."""
        contents = [
            {"role": "model", "parts": [_call("ls")]},
            {"role": "user", "parts": [_response("ls", "a")]},
        ]
        before = copy.deepcopy(contents)
        parse_gemini_cli(contents)
        assert contents == before


class TestRecordings:
    """Session recordings: JSON and JSON Lines."""

    def test_json_recording(self) -> None:
        """Messages become contents as Gemini CLI resumes them; notices and commands are skipped."""
        transcript = read_gemini_cli(SESSION)
        assert [m["role"] for m in transcript.messages] == ["user", "assistant"] * 3
        assert "Switched" not in json.dumps(transcript.messages)
        assert "/stats" not in json.dumps(transcript.messages)
        assert "Quota" not in json.dumps(transcript.messages)
        assert _ids(transcript.messages) == [
            ("tool_use", "read_file-1759478405000-0"),
            ("tool_result", "read_file-1759478405000-0"),
            ("tool_use", "replace-1759478410000-0"),
            ("tool_result", "replace-1759478410000-0"),
        ]
        assert transcript.messages[4]["content"][0]["content"].startswith("Successfully modified")
        assert validate_messages(list(transcript.messages)) == []

    def test_json_recording_usage(self) -> None:
        """Each gemini message's tokens are one request; thoughts count as output."""
        transcript = read_gemini_cli(SESSION)
        assert [(r.message_index, r.usage, r.model) for r in transcript.requests] == [
            (1, TokenUsage(tokens_in=5000, tokens_out=160, cache_reads=4000), "gemini-2.5-pro"),
            (3, TokenUsage(tokens_in=1108, tokens_out=140, cache_reads=8192), "gemini-2.5-pro"),
            (5, TokenUsage(tokens_in=1313, tokens_out=12, cache_reads=8192), "gemini-2.5-flash"),
        ]
        assert transcript.requests[0].where == f"{SESSION}: messages[2]"
        assert transcript.model == "gemini-2.5-flash"

    def test_jsonl_recording(self) -> None:
        """Rewritten messages replace theirs in place; a rewind drops what followed its target."""
        transcript = read_gemini_cli(SESSION_JSONL)
        assert [m["role"] for m in transcript.messages] == [
            "user",
            "assistant",
            "user",
            "assistant",
        ]
        text = json.dumps(transcript.messages)
        assert "rewound" not in text
        assert "Looking" not in text
        assert transcript.messages[2]["content"] == [
            {
                "type": "tool_result",
                "tool_use_id": "call-a",
                "content": "Directory listing for /work/app:\npixel.png",
            },
            _text("Is it transparent?"),
        ]
        assert [r.where for r in transcript.requests] == [
            f"{SESSION_JSONL}:4",
            f"{SESSION_JSONL}:9",
        ]
        assert transcript.unknown == (Unknown(f"{SESSION_JSONL}:10", "compression"),)
        assert validate_messages(list(transcript.messages)) == []

    def test_legacy_message_without_calls_in_content(self) -> None:
        """A gemini message whose content is text gets its toolCalls as calls after the text."""
        message = {
            "id": "g",
            "type": "gemini",
            "content": "Listing.",
            "toolCalls": [
                {"id": "t", "name": "ls", "args": {}, "result": "a.py", "status": "success"}
            ],
        }
        recording = {
            "sessionId": "s",
            "projectHash": "h",
            "messages": [{"id": "u", "type": "user", "content": "ls"}, message],
        }
        transcript = parse_gemini_cli(recording)
        assert [b["type"] for m in transcript.messages for b in m["content"]] == [
            "text",
            "text",
            "tool_use",
            "tool_result",
        ]
        assert transcript.messages[2]["content"][0]["content"] == "a.py"


class TestDetection:
    """looks_like_gemini_cli."""

    def test_gemini_values(self) -> None:
        """Contents, saved chats, checkpoints and recordings are Gemini CLI's."""
        assert looks_like_gemini_cli([{"role": "user", "parts": [{"text": "x"}]}])
        assert looks_like_gemini_cli({"history": [{"role": "user", "parts": []}]})
        assert looks_like_gemini_cli({"clientHistory": []})
        assert looks_like_gemini_cli({"sessionId": "s", "projectHash": "h", "messages": []})
        assert looks_like_gemini_cli([{"sessionId": "s", "projectHash": "h"}, {"id": "m"}])
        # a recording's first line alone: a session that never got a message
        assert looks_like_gemini_cli({"sessionId": "s", "projectHash": "h", "kind": "main"})

    def test_other_values(self) -> None:
        """Anthropic and OpenHands lists are not."""
        assert not looks_like_gemini_cli([{"role": "user", "content": "x"}])
        assert not looks_like_gemini_cli([{"id": 0, "source": "user", "action": "message"}])
        assert not looks_like_gemini_cli({"history": [{"action": "message"}]})
        assert not looks_like_gemini_cli([])


class TestErrors:
    """Bad input names the file and the JSON path."""

    def test_unknown_shape(self) -> None:
        """An object of none of the shapes is refused, naming the file."""
        with pytest.raises(TaskFolderError, match=r"chat\.json: expected a saved chat"):
            parse_gemini_cli({"foo": 1}, name="chat.json")

    def test_bad_role(self) -> None:
        """A content role other than user and model is malformed at its index."""
        with pytest.raises(MalformedMessageError) as caught:
            parse_gemini_cli([{"role": "system", "parts": []}], name="chat.json")
        assert caught.value.path == "chat.json: [0].role"

    def test_bad_part(self) -> None:
        """A function call without a name is named down to the key."""
        contents = {"history": [{"role": "model", "parts": [{"functionCall": {"args": {}}}]}]}
        with pytest.raises(MalformedMessageError) as caught:
            parse_gemini_cli(contents, name="chat.json")
        assert caught.value.path == "chat.json: history[0].parts[0].functionCall.name"

    def test_bad_jsonl_line(self, tmp_path: Path) -> None:
        """A recording line that is not JSON is named by its number."""
        path = tmp_path / "session.jsonl"
        path.write_text('{"sessionId":"s","projectHash":"h"}\n{"id":\n', encoding="utf-8")
        with pytest.raises(TaskFolderError, match=r"session\.jsonl:2: not JSON"):
            read_gemini_cli(path)

    def test_bad_tokens(self) -> None:
        """A token count that is not a number names its field."""
        message = {"id": "g", "type": "gemini", "content": "x", "tokens": {"input": "many"}}
        recording = {"sessionId": "s", "projectHash": "h", "messages": [message]}
        with pytest.raises(TaskFolderError, match=r"s\.json: messages\[0\]\.tokens\.input"):
            parse_gemini_cli(recording, name="s.json")
