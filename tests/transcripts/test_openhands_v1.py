"""OpenHands V1 (software-agent-sdk) event streams: folders, lists, responses, condensation."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import MalformedMessageError, TaskFolderError, TokenUsage, validate_messages
from windowkeeper.tools._inspection import inspect_trace
from windowkeeper.tools._trace import load_trace
from windowkeeper.transcripts import Unknown
from windowkeeper.transcripts._detect import detect_transcript, read_transcript
from windowkeeper.transcripts.openhands import looks_like_openhands, parse_openhands
from windowkeeper.transcripts.openhands_v1 import (
    is_openhands_folder,
    looks_like_openhands_v1,
    parse_openhands_v1,
)

FOLDER = Path(__file__).parent / "fixtures" / "openhands_v1"


def _events() -> list[dict[str, Any]]:
    files = sorted((FOLDER / "events").glob("*.json"))
    return [json.loads(file.read_text(encoding="utf-8")) for file in files]


def _roles(messages: Any) -> list[str]:
    return [message["role"] for message in messages]


def _types(message: dict[str, Any]) -> list[str]:
    return [block["type"] for block in message["content"]]


def _action(call_id: str, response: str, command: str = "ls", **extra: Any) -> dict[str, Any]:
    call = {"id": call_id, "name": "terminal", "arguments": json.dumps({"command": command})}
    return {
        "id": f"a-{call_id}",
        "source": "agent",
        "kind": "ActionEvent",
        "thought": extra.pop("thought", []),
        "tool_name": "terminal",
        "tool_call_id": call_id,
        "tool_call": call,
        "llm_response_id": response,
        **extra,
    }


def _observation(call_id: str, text: str = "ok") -> dict[str, Any]:
    return {
        "id": f"o-{call_id}",
        "source": "environment",
        "kind": "ObservationEvent",
        "tool_name": "terminal",
        "tool_call_id": call_id,
        "action_id": f"a-{call_id}",
        "observation": {"content": [{"type": "text", "text": text}], "is_error": False},
    }


def _prompt(kind: str, text: str, tools: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """A SystemPromptEvent (or its update) with ``text`` and ``tools``."""
    return {
        "id": kind,
        "source": "agent",
        "kind": kind,
        "system_prompt": {"type": "text", "text": text},
        "tools": tools,
        **extra,
    }


def _user(text: str) -> dict[str, Any]:
    content = [{"type": "text", "text": text}]
    return {
        "id": f"u-{text}",
        "source": "user",
        "kind": "MessageEvent",
        "llm_message": {"role": "user", "content": content},
    }


class TestFolder:
    """The conversation folder in fixtures/openhands_v1 (events/ and base_state.json)."""

    def test_detected_and_read(self) -> None:
        """A folder with events/ is OpenHands, read in file-name order, with its model."""
        assert is_openhands_folder(FOLDER)
        assert is_openhands_folder(FOLDER / "events")
        assert detect_transcript(FOLDER) == "openhands"
        transcript = read_transcript(FOLDER)
        assert transcript.model == "litellm_proxy/claude-sonnet-4-5"
        assert transcript.system == "You are a careful coding agent working in /workspace."
        assert [tool["name"] for tool in transcript.tools or ()] == ["terminal", "file_editor"]
        assert validate_messages(list(transcript.messages)) == []

    def test_last_condensation_view(self) -> None:
        """By default forgotten events are gone and the summary stands at its offset."""
        transcript = read_transcript(FOLDER)
        assert _roles(transcript.messages) == ["user", "assistant"] * 3
        first = transcript.messages[0]["content"]
        assert [block["text"][:12] for block in first] == ["The date par", "The parser i"]
        assert transcript.compactions == 1
        assert transcript.model_calls == 3
        assert transcript.unknown == (
            Unknown(str(FOLDER / "events" / "event-00013-e13.json"), "FutureEvent"),
        )

    def test_keep_condensation(self) -> None:
        """With compaction="keep" the batch of two calls is one message and one response."""
        transcript = read_transcript(FOLDER, compaction="keep")
        assert _roles(transcript.messages) == ["user", "assistant"] * 4
        assert _types(transcript.messages[1]) == ["text", "tool_use", "tool_use"]
        assert _types(transcript.messages[2]) == ["tool_result", "tool_result"]
        error = transcript.messages[4]["content"][0]
        assert error["is_error"] is True
        assert transcript.model_calls == 4
        assert validate_messages(list(transcript.messages)) == []

    def test_load_trace_and_inspect(self) -> None:
        """The CLI's loader takes the folder as OpenHands, not as a Cline task folder."""
        trace = load_trace(FOLDER)
        assert trace.format.value == "openhands"
        found = inspect_trace(trace)
        assert found.tool_calls == {"terminal": 2}
        assert found.file_reads == {"src/dates.py": 1}


class TestStream:
    """Event lists, JSON Lines, and the rules of one response."""

    def test_list_and_jsonl_read_the_same(self) -> None:
        """The events as one JSON list, as {"events": [...]} and one a line: one conversation."""
        events = _events()
        as_list = parse_openhands(json.dumps(events))
        as_object = parse_openhands(json.dumps({"events": events}))
        as_lines = parse_openhands("".join(json.dumps(event) + "\n" for event in events))
        assert as_list.messages == as_object.messages == as_lines.messages
        assert looks_like_openhands(events)

    def test_call_written_after_a_result_joins_its_response(self) -> None:
        """A call of the same llm_response_id after an observation is still one message."""
        events = [
            _user("go"),
            _action("c1", "r1", thought=[{"type": "text", "text": "Two looks."}]),
            _observation("c1", "one"),
            _action("c2", "r1"),
            _observation("c2", "two"),
            _action("c3", "r2"),
            _observation("c3"),
        ]
        transcript = parse_openhands_v1(events)
        assert _roles(transcript.messages) == ["user", "assistant", "user", "assistant", "user"]
        assert _types(transcript.messages[1]) == ["text", "tool_use", "tool_use"]
        results = transcript.messages[2]["content"]
        assert [block["tool_use_id"] for block in results] == ["c1", "c2"]
        assert transcript.model_calls == 2

    def test_calls_of_the_sdk_before_1_0(self) -> None:
        """Agent-server events of September 2025 keep the call as the OpenAI SDK gives it
        (``function``: name and arguments); read as the 1.x shape is."""
        old = _action("c1", "r1", command="pwd")
        old["tool_call"] = {
            "index": 1,
            "id": "c1",
            "type": "function",
            "function": {"name": "terminal", "arguments": json.dumps({"command": "pwd"})},
        }
        old_shape = parse_openhands_v1([_user("go"), old, _observation("c1")]).messages
        current = parse_openhands_v1([_user("go"), _action("c1", "r1", "pwd"), _observation("c1")])
        assert old_shape == current.messages
        assert old_shape[1]["content"][0]["input"] == {"command": "pwd"}
        broken = _action("c1", "r1")
        broken["tool_call"] = {"id": "c1", "function": {"arguments": "{}"}}
        with pytest.raises(MalformedMessageError, match=r"tool_call\.function\.name"):
            parse_openhands_v1([_user("go"), broken, _observation("c1")])

    @pytest.mark.parametrize(
        ("observation", "text", "failed"),
        [
            (
                {
                    "kind": "ExecuteBashObservation",
                    "output": "Traceback: no module",
                    "command": "python -c 'import m'",
                    "error": False,
                    "timeout": False,
                    "metadata": {
                        "exit_code": 1,
                        "working_dir": "/w",
                        "py_interpreter_path": "/w/.venv/bin/python",
                        "prefix": "",
                        "suffix": "\n[The command completed with exit code 1.]",
                    },
                },
                "Traceback: no module\n[The command completed with exit code 1.]"
                "\n[Current working directory: /w]\n[Python interpreter: /w/.venv/bin/python]"
                "\n[Command finished with exit code 1]",
                False,
            ),
            (  # a command still running (exit code -1) has no exit line
                {"kind": "ExecuteBashObservation", "output": "...", "metadata": {"exit_code": -1}},
                "...",
                False,
            ),
            (
                {"kind": "StrReplaceEditorObservation", "command": "view", "output": "1\tx = 1"},
                "1\tx = 1",
                False,
            ),
            (
                {"kind": "StrReplaceEditorObservation", "output": "", "error": "Invalid range"},
                "Invalid range",
                True,
            ),
            ({"kind": "FinishObservation", "message": "Done: fixed it."}, "Done: fixed it.", False),
            (  # a command that failed to run: its output, marked as an error
                {"kind": "ExecuteBashObservation", "output": "no such file", "error": True},
                "no such file",
                True,
            ),
        ],
    )
    def test_results_of_the_sdk_before_1_0(
        self, observation: dict[str, Any], text: str, failed: bool
    ) -> None:
        """Observations of September 2025 hold no ``content``: the text the model saw is their
        ``output`` (a command's with the shell's lines around it), ``error`` or ``message``."""
        event = {**_observation("c1"), "observation": observation}
        messages = parse_openhands_v1([_user("go"), _action("c1", "r1", "pwd"), event]).messages
        (result,) = messages[2]["content"]
        assert result["content"] == [{"type": "text", "text": text}]
        assert result.get("is_error", False) is failed

    def test_an_older_observation_of_an_error_alone_and_a_bad_metadata(self) -> None:
        """An ``error`` text with no output is the result, marked so; ``metadata`` that is not
        an object is named."""
        alone = {**_observation("c1"), "observation": {"kind": "X", "error": "boom"}}
        messages = parse_openhands_v1([_user("go"), _action("c1", "r1"), alone]).messages
        (result,) = messages[2]["content"]
        assert (result["content"], result["is_error"]) == ([{"type": "text", "text": "boom"}], True)
        bad = {**_observation("c1"), "observation": {"output": "x", "metadata": "oops"}}
        with pytest.raises(MalformedMessageError, match=r"observation\.metadata"):
            parse_openhands_v1([_user("go"), _action("c1", "r1"), bad])

    def test_unanswered_call_is_left_out(self) -> None:
        """A call the run never answered is dropped, as the SDK's view drops it."""
        transcript = parse_openhands_v1([_user("go"), _action("c1", "r1")])
        assert _roles(transcript.messages) == ["user"]

    def test_rejection_and_unknown_kind(self) -> None:
        """A rejected call's result says so; an unknown kind is skipped and reported."""
        rejected = {
            "id": "x",
            "source": "user",
            "kind": "UserRejectObservation",
            "tool_name": "terminal",
            "tool_call_id": "c1",
            "action_id": "a-c1",
            "rejection_reason": "not now",
        }
        future = {"id": "f", "source": "environment", "kind": "NewKindEvent"}
        transcript = parse_openhands_v1([_user("go"), _action("c1", "r1"), rejected, future])
        assert transcript.messages[2]["content"][0]["content"] == "Action rejected: not now"
        assert transcript.unknown == (Unknown("<string>: [3]", "NewKindEvent"),)

    @pytest.mark.parametrize(
        ("tool", "expected"),
        [
            (  # newer SDKs: the name is the title; no parameters
                {
                    "description": "Run one shell command.",
                    "action_type": "TerminalAction",
                    "observation_type": "TerminalObservation",
                    "annotations": None,
                    "kind": "TerminalTool",
                    "title": "terminal",
                },
                {
                    "name": "terminal",
                    "description": "Run one shell command.",
                    "input_schema": {"type": "object"},
                },
            ),
            (  # a name wins over a title
                {"name": "file_editor", "title": "Edit files", "parameters": {"type": "object"}},
                {"name": "file_editor", "input_schema": {"type": "object"}},
            ),
        ],
    )
    def test_sdk_tool_definitions(self, tool: dict[str, Any], expected: dict[str, Any]) -> None:
        """A system prompt event's tools in the SDK's shapes become Anthropic definitions."""
        system = _prompt("SystemPromptEvent", "You code.", [tool])
        transcript = parse_openhands_v1([system, _user("go")])
        assert transcript.tools == (expected,)

    def test_the_latest_system_prompt_update_wins(self) -> None:
        """A restore with other tools appends a SystemPromptUpdateEvent: the SDK sends only
        the latest prompt and tools, and the event is not reported as unknown."""
        terminal = {"name": "terminal", "parameters": {"type": "object"}}
        system = _prompt("SystemPromptEvent", "You code.", [terminal])
        browser = {"name": "browser", "parameters": {"type": "object"}}
        reason = "tools_and_system_prompt_changed"
        update = _prompt(
            "SystemPromptUpdateEvent", "You code and browse.", [browser], reason=reason
        )
        events = [system, _user("go"), _action("c1", "r1"), _observation("c1"), update]
        transcript = parse_openhands_v1([*events, _user("next")])
        assert transcript.system == "You code and browse."
        assert transcript.tools == ({"name": "browser", "input_schema": {"type": "object"}},)
        assert transcript.unknown == ()
        assert _roles(transcript.messages) == ["user", "assistant", "user"]
        assert transcript.messages[-1]["content"][-1] == {"type": "text", "text": "next"}

    def test_a_tool_without_name_or_title_is_named(self) -> None:
        """Neither key: the error names where."""
        system = _prompt("SystemPromptEvent", "You code.", [{"description": "Nameless."}])
        with pytest.raises(TaskFolderError, match=r"\[0\]\.tools\[0\]\.name: expected a string"):
            parse_openhands_v1([system, _user("go")])

    def test_call_ids_of_other_providers_become_anthropic_ids(self) -> None:
        """Ids such as ``functions.terminal:0`` (OpenAI-compatible servers) are made of the
        characters Anthropic accepts, stay distinct, and still pair each call with its result."""
        events = [
            _user("go"),
            _action("functions.terminal:0", "r1"),
            _observation("functions.terminal:0", "one"),
            _action("functions.terminal:1", "r2"),
            _observation("functions.terminal:1", "two"),
            _action("call_ok-1", "r3"),
            _observation("call_ok-1", "three"),
        ]
        transcript = parse_openhands_v1(events)
        calls = [m["content"][0]["id"] for m in transcript.messages if m["role"] == "assistant"]
        results = [
            m["content"][0]["tool_use_id"] for m in transcript.messages[2:] if m["role"] == "user"
        ]
        assert calls == results
        assert calls[2] == "call_ok-1"  # a valid id is kept
        assert len(set(calls)) == 3
        assert all(re.fullmatch(r"[A-Za-z0-9_-]+", call) for call in calls)
        assert calls[0].startswith("functions_terminal_0_")
        assert validate_messages(list(transcript.messages)) == []

    def test_v0_trajectory_is_not_taken(self) -> None:
        """A V0 event (action and source, no kind) is not a V1 stream."""
        assert not looks_like_openhands_v1([{"id": 1, "source": "user", "action": "message"}])

    @pytest.mark.parametrize("compaction", ["last", "keep"])
    def test_pairing_is_valid(self, compaction: Any) -> None:
        """Every reading of the fixture keeps tool pairing."""
        transcript = parse_openhands_v1(_events(), compaction=compaction)
        assert validate_messages(list(transcript.messages)) == []


def test_unsigned_thinking_is_left_out() -> None:
    """LiteLLM's null signature (another model's reasoning): the block is gone, the thought
    text and the call stay; a signed block beside it is kept (see test_unsigned_thinking)."""
    blocks = [
        {"type": "thinking", "thinking": "deepseek reasoning", "signature": None},
        {"type": "thinking", "thinking": "claude reasoning", "signature": "sig-9"},
    ]
    action = _action("c1", "r1", thought=[{"type": "text", "text": "Listing."}])
    action["thinking_blocks"] = blocks
    transcript = parse_openhands_v1([_user("List files."), action, _observation("c1", "a.py")])
    assistant = transcript.messages[1]
    assert [b["type"] for b in assistant["content"]] == ["thinking", "text", "tool_use"]
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "claude reasoning",
        "signature": "sig-9",
    }


def _usage_entry(response: str, prompt: int, reads: int, writes: int) -> dict[str, Any]:
    return {
        "model": "m",
        "prompt_tokens": prompt,
        "completion_tokens": 40,
        "cache_read_tokens": reads,
        "cache_write_tokens": writes,
        "response_id": response,
    }


@pytest.mark.parametrize("key", ["service_to_metrics", "usage_to_metrics"])
def test_base_state_gives_each_response_its_usage(tmp_path: Path, key: str) -> None:
    """``base_state.json`` keeps the usage of every response by its id (before SDK 1.0 under
    ``service_to_metrics``, in 1.x ``usage_to_metrics``): each response the events name is a
    request of that usage; the prompt counts the cache reads, not the writes. A response of
    another LLM (the condenser's) names no event and is no request of the agent."""
    events = [
        _user("go"),
        _action("c1", "r1", "ls"),
        _observation("c1"),
        _action("c2", "r2", "pwd"),
        _observation("c2"),
    ]
    (tmp_path / "events").mkdir()
    for number, event in enumerate(events):
        path = tmp_path / "events" / f"event-{number:05d}-{event['id']}.json"
        path.write_text(json.dumps(event), encoding="utf-8")
    stats = {
        key: {
            "default": {
                "token_usages": [
                    _usage_entry("r1", 7064, 7060, 1549),
                    _usage_entry("r2", 9038, 9033, 3652),
                ]
            },
            "condenser": {"token_usages": [_usage_entry("r9", 4, 0, 5091)]},
        }
    }
    state = {"agent": {"llm": {"model": "m"}}, "stats": stats}
    (tmp_path / "base_state.json").write_text(json.dumps(state), encoding="utf-8")
    transcript = read_transcript(tmp_path)
    assert [(r.message_index, r.usage) for r in transcript.requests] == [
        (1, TokenUsage(tokens_in=4, tokens_out=40, cache_writes=1549, cache_reads=7060)),
        (3, TokenUsage(tokens_in=5, tokens_out=40, cache_writes=3652, cache_reads=9033)),
    ]
    assert parse_openhands_v1(events).requests == ()
    state["stats"] = {key: {"default": {"token_usages": "many"}}}
    (tmp_path / "base_state.json").write_text(json.dumps(state), encoding="utf-8")
    with pytest.raises(TaskFolderError, match=rf"stats\.{key}\.default\.token_usages"):
        read_transcript(tmp_path)
