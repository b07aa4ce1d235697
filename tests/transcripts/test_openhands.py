"""OpenHands trajectories: events to messages as ConversationMemory builds them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from windowkeeper import MalformedMessageError, TaskFolderError, TokenUsage, validate_messages
from windowkeeper.cli import cli
from windowkeeper.transcripts import Unknown
from windowkeeper.transcripts.openhands import looks_like_openhands, parse_openhands, read_openhands

FIXTURE = Path(__file__).parent / "fixtures" / "openhands_trajectory.json"


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


def _response(
    response_id: str, content: str | None, *calls: tuple[str, str, dict[str, Any]]
) -> dict[str, Any]:
    tool_calls = [
        {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        for call_id, name, args in calls
    ]
    message = {"role": "assistant", "content": content, "tool_calls": tool_calls}
    return {"id": response_id, "model": "gpt-x", "choices": [{"index": 0, "message": message}]}


def _action(event_id: int, action: str, args: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": event_id, "source": "agent", "action": action, "args": args, **extra}


def _observation(event_id: int, observation: str, content: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": event_id,
        "source": "agent",
        "observation": observation,
        "content": content,
        "extras": {},
        **extra,
    }


def _metadata(call_id: str, name: str, response: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "function_name": name,
        "tool_call_id": call_id,
        "model_response": response,
        "total_calls_in_response": 1,
    }


def _task(text: str = "Fix it.") -> dict[str, Any]:
    return {
        "id": 0,
        "source": "user",
        "action": "message",
        "args": {"content": text, "image_urls": None},
    }


def _run(
    event_id: int, call_id: str, response: dict[str, Any] | None, command: str = "ls"
) -> dict[str, Any]:
    args = {"command": command, "thought": "", "blocking": False, "is_input": False}
    return _action(
        event_id, "run", args, tool_call_metadata=_metadata(call_id, "execute_bash", response)
    )


def _ran(event_id: int, call_id: str, content: str, **extras: Any) -> dict[str, Any]:
    observation = _observation(
        event_id, "run", content, tool_call_metadata=_metadata(call_id, "execute_bash", None)
    )
    observation["extras"] = extras
    return observation


class TestFixture:
    """The hand-written trajectory in fixtures/openhands_trajectory.json."""

    def test_keep_reads_every_event(self) -> None:
        """With compaction="keep" the conversation holds every model response."""
        transcript = read_openhands(FIXTURE, compaction="keep")
        assert transcript.format == "openhands"
        assert [m["role"] for m in transcript.messages] == ["user", "assistant"] * 6
        assert transcript.messages[0]["content"] == [
            _text("Make greet.py print the name it is given.")
        ]
        assert validate_messages(list(transcript.messages)) == []

    def test_one_response_is_one_message(self) -> None:
        """Two actions of one model response make one assistant message, answered in call order."""
        transcript = read_openhands(FIXTURE, compaction="keep")
        assistant, results = transcript.messages[1], transcript.messages[2]
        assert assistant["content"][0] == _text("Let me look at the script and its test.")
        assert [b["id"] for b in assistant["content"][1:]] == ["toolu_A1", "toolu_A2"]
        assert [b["tool_use_id"] for b in results["content"]] == ["toolu_A1", "toolu_A2"]
        assert results["content"][0]["content"] == (
            "print('Hello')\n[The command completed with exit code 0.]"
            "\n[Current working directory: /workspace]"
            "\n[Python interpreter: /usr/bin/python]"
            "\n[Command finished with exit code 0]"
        )

    def test_system_and_tools(self) -> None:
        """The system action gives the prompt and the tools, as Anthropic tool definitions."""
        transcript = read_openhands(FIXTURE)
        assert transcript.system is not None
        assert transcript.system.startswith("You are OpenHands agent")
        assert transcript.tools is not None
        assert [tool["name"] for tool in transcript.tools] == [
            "execute_bash",
            "str_replace_editor",
            "think",
            "finish",
        ]
        assert transcript.tools[0] == {
            "name": "execute_bash",
            "description": "Execute a bash command in the terminal.",
            "input_schema": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        }

    def test_errors_user_commands_images_and_finish(self) -> None:
        """Errors are flagged, a user's command and image are user content, finish is text."""
        transcript = read_openhands(FIXTURE, compaction="keep")
        error = transcript.messages[8]["content"][0]
        assert error["is_error"] is True
        assert error["content"].endswith("[Error occurred in processing last action]")
        user = transcript.messages[10]["content"]
        assert [b["type"] for b in user] == ["text", "image", "text", "text"]
        assert user[2] == _text("User executed the command:\nls")
        assert user[3]["text"].startswith(
            "\nObserved result of command executed by user:\ngreet.py"
        )
        assert transcript.messages[11]["content"] == [_text("All done.")]

    def test_call_without_model_response(self) -> None:
        """Without model_response the call is rebuilt from the action, less OpenHands' own args."""
        transcript = read_openhands(FIXTURE, compaction="keep")
        assert transcript.messages[7]["content"] == [
            {
                "type": "tool_use",
                "id": "toolu_D1",
                "name": "execute_bash",
                "input": {"command": "python greet.py"},
            }
        ]

    def test_usage(self) -> None:
        """Each response with a token usage is one request; cached input comes off the prompt."""
        transcript = read_openhands(FIXTURE, compaction="keep")
        assert [r.message_index for r in transcript.requests] == [1, 3, 5, 7, 9, 11]
        assert transcript.requests[0].usage == TokenUsage(
            tokens_in=200, tokens_out=90, cache_writes=4000
        )
        assert transcript.requests[2].usage == TokenUsage(
            tokens_in=0, tokens_out=120, cache_writes=300, cache_reads=3000
        )
        assert transcript.model == "anthropic/claude-sonnet-4-20250514"

    def test_last_condensation(self) -> None:
        """By default forgotten events are dropped and the summary stands at its offset."""
        transcript = read_openhands(FIXTURE)
        assert transcript.compactions == 1
        assert [m["role"] for m in transcript.messages] == ["user", "assistant"] * 5
        assert transcript.messages[0]["content"] == [
            _text("Make greet.py print the name it is given."),
            _text(
                "The agent read greet.py (it prints 'Hello') and test_greet.py"
                " (it expects 'Hello Ada')."
            ),
        ]
        assert "toolu_A1" not in json.dumps(transcript.messages)
        assert [r.message_index for r in transcript.requests] == [1, 3, 5, 7, 9]
        assert validate_messages(list(transcript.messages)) == []

    def test_unknown_and_silent_events(self) -> None:
        """Recall and state changes are dropped silently; an unknown action is reported."""
        transcript = read_openhands(FIXTURE)
        assert transcript.unknown == (Unknown(f"{FIXTURE}: [20]", "x_future_action"),)
        assert "Added workspace context" not in json.dumps(transcript.messages)


class TestEvents:
    """Small trajectories written by the tests."""

    def test_round_trip(self) -> None:
        """A call and its observation read as the Anthropic messages they stand for."""
        response = _response("r1", "Listing.", ("c1", "execute_bash", {"command": "ls"}))
        events = [_task(), _run(1, "c1", response), _ran(2, "c1", "a.py")]
        transcript = parse_openhands(events)
        assert list(transcript.messages) == [
            {"role": "user", "content": [_text("Fix it.")]},
            {
                "role": "assistant",
                "content": [
                    _text("Listing."),
                    {
                        "type": "tool_use",
                        "id": "c1",
                        "name": "execute_bash",
                        "input": {"command": "ls"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "a.py"}],
            },
        ]

    def test_response_waits_for_every_result(self) -> None:
        """A response with a call that never got its observation is left out, with its results."""
        response = _response(
            "r1",
            None,
            ("c1", "execute_bash", {"command": "ls"}),
            ("c2", "finish", {"message": "done"}),
        )
        events = [_task(), _run(1, "c1", response), _ran(2, "c1", "a.py")]
        transcript = parse_openhands(events)
        assert len(transcript.messages) == 1
        assert validate_messages(list(transcript.messages)) == []

    def test_response_without_tool_calls(self) -> None:
        """A model response whose tool_calls miss the actions' calls gets them from the actions."""
        response = _response("r1", "Two commands.")
        events = [
            _task(),
            _run(1, "c1", response, "ls"),
            _run(2, "c2", response, "pwd"),
            _ran(3, "c2", "/repo"),
            _ran(4, "c1", "a.py"),
        ]
        transcript = parse_openhands(events)
        assert [b.get("id") for b in transcript.messages[1]["content"]] == [None, "c1", "c2"]
        assert transcript.messages[1]["content"][1]["input"] == {"command": "ls"}
        assert validate_messages(list(transcript.messages)) == []

    def test_object_with_history_and_jsonl(self) -> None:
        """An evaluation output's history and one event a line read the same."""
        events = [
            _task(),
            {"id": 1, "source": "agent", "action": "message", "args": {"content": "Done."}},
        ]
        as_object = parse_openhands({"instance_id": "x", "history": events})
        as_lines = parse_openhands("".join(json.dumps(e) + "\n" for e in events))
        assert as_object.messages == as_lines.messages
        assert [m["role"] for m in as_object.messages] == ["user", "assistant"]

    def test_forgotten_ids_list(self) -> None:
        """A condensation naming its forgotten ids drops exactly those events."""
        events = [
            _task("First"),
            {"id": 1, "source": "agent", "action": "message", "args": {"content": "Old answer"}},
            {"id": 2, "source": "user", "action": "message", "args": {"content": "Second"}},
            _action(3, "condensation", {"forgotten_event_ids": [1], "summary": None}),
        ]
        transcript = parse_openhands(events)
        assert "Old answer" not in json.dumps(transcript.messages)
        assert transcript.messages[0]["content"] == [_text("First"), _text("Second")]

    def test_agent_action_without_metadata_is_reported(self) -> None:
        """An agent tool action without tool_call_metadata cannot be a call: it is reported."""
        events = [_task(), _action(1, "run", {"command": "ls"})]
        transcript = parse_openhands(events, name="t.json")
        assert transcript.unknown == (Unknown("t.json: [1]", "run without tool_call_metadata"),)

    def test_events_are_not_modified(self) -> None:
        """Parsing loaded events leaves them as they were."""
        response = _response("r1", None, ("c1", "execute_bash", {"command": "ls"}))
        events = [
            _task(),
            _run(1, "c1", response),
            _ran(2, "c1", "a.py", metadata={"exit_code": 0}),
        ]
        before = copy.deepcopy(events)
        parse_openhands(events)
        assert events == before


class TestDetection:
    """looks_like_openhands."""

    def test_trajectories(self) -> None:
        """Lists of events, and objects holding one, are trajectories."""
        assert looks_like_openhands([_task()])
        assert looks_like_openhands({"history": [_task()]})

    def test_other_values(self) -> None:
        """SWE-agent steps (both action and observation, no source) and messages are not."""
        assert not looks_like_openhands({"trajectory": [{"action": "ls", "observation": "a"}]})
        assert not looks_like_openhands([{"role": "user", "content": "x"}])
        assert not looks_like_openhands([])


class TestErrors:
    """Bad input names the file and the JSON path."""

    def test_not_a_list(self) -> None:
        """A value that is not a list of events is refused, naming the file."""
        with pytest.raises(TaskFolderError, match=r"t\.json: expected a list of OpenHands events"):
            parse_openhands(3, name="t.json")

    def test_event_not_an_object(self) -> None:
        """An event that is not an object is named by its index."""
        with pytest.raises(TaskFolderError, match=r"t\.json: \[1\]: expected an object"):
            parse_openhands([_task(), "oops"], name="t.json")

    def test_bad_tool_call(self) -> None:
        """A tool call of the model response without an id is malformed at its path."""
        response = _response("r1", None, ("c1", "execute_bash", {}))
        del response["choices"][0]["message"]["tool_calls"][0]["id"]
        with pytest.raises(MalformedMessageError) as caught:
            parse_openhands([_task(), _run(1, "c1", response)], name="t.json")
        assert (
            caught.value.path
            == "t.json: [1].tool_call_metadata.model_response.choices[0].message.tool_calls[0].id"
        )

    def test_bad_token_usage(self) -> None:
        """A token usage that is not a count names its field."""
        usage = {"response_id": "r", "prompt_tokens": "lots"}
        event = {
            "id": 1,
            "source": "agent",
            "action": "message",
            "args": {"content": "x"},
            "llm_metrics": {"token_usages": [usage]},
        }
        with pytest.raises(
            TaskFolderError, match=r"\[1\]\.llm_metrics\.token_usages\[0\]\.prompt_tokens"
        ):
            parse_openhands([_task(), event], name="t.json")

    def test_not_json(self, tmp_path: Path) -> None:
        """A file that is neither JSON nor JSON Lines is named with its line."""
        path = tmp_path / "t.json"
        path.write_text("[{", encoding="utf-8")
        with pytest.raises(TaskFolderError, match=r"t\.json:1: not JSON"):
            read_openhands(path)


def test_a_v0_session_folder_reads_as_its_trajectory(tmp_path: Path) -> None:
    """The OpenHands server (V0) stores a session as ``events/0.json``, ``1.json``, ... one
    event a file: read in number order (10 after 9), as the same events in one file read."""
    events = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert len(events) > 10
    folder = tmp_path / "sessions" / "abc"
    (folder / "events").mkdir(parents=True)
    (folder / "metadata.json").write_text("{}", encoding="utf-8")
    for number, event in enumerate(events):
        (folder / "events" / f"{number}.json").write_text(json.dumps(event), encoding="utf-8")
    from_file = read_openhands(FIXTURE)
    for path in (folder, folder / "events"):
        read = read_openhands(path)
        assert read.messages == from_file.messages
        assert [r.usage for r in read.requests] == [r.usage for r in from_file.requests]
    shown = CliRunner().invoke(cli, ["inspect", str(folder)])
    assert shown.exit_code == 0, shown.output
    assert f"messages      {len(from_file.messages)}:" in shown.output


def test_a_v0_session_folder_names_its_model_from_its_metadata(tmp_path: Path) -> None:
    """Events that name no model: the session's ``metadata.json`` (``llm_model``) does."""
    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "Fix it."}},
        {"id": 1, "source": "agent", "action": "message", "args": {"content": "Done."}},
    ]
    (tmp_path / "events").mkdir()
    for number, event in enumerate(events):
        (tmp_path / "events" / f"{number}.json").write_text(json.dumps(event), encoding="utf-8")
    assert read_openhands(tmp_path).model is None
    (tmp_path / "metadata.json").write_text(json.dumps({"llm_model": "m-1"}), encoding="utf-8")
    assert read_openhands(tmp_path).model == "m-1"
    assert read_openhands(tmp_path / "events").model == "m-1"
    assert [m["role"] for m in read_openhands(tmp_path).messages] == ["user", "assistant"]
