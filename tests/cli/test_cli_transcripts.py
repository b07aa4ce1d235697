"""The command reads other agents' transcripts directly, and a folder a ContextSession wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from windowkeeper import ContextSession
from windowkeeper.cli import cli
from windowkeeper.tools._trace import TraceFormat, load_trace

FIXTURES = Path(__file__).resolve().parent.parent / "transcripts" / "fixtures"
TRANSCRIPTS = {
    "claude_code_session.jsonl": "claude-code",
    "codex_rollout.jsonl": "codex",
    "gemini_session.json": "gemini-cli",
    "gemini_saved_chat.json": "gemini-cli",
    "openhands_trajectory.json": "openhands",
    "openhands_v1": "openhands",
    "roo_export.md": "roo",
}


def run(*arguments: str) -> Any:
    return CliRunner().invoke(cli, list(arguments), catch_exceptions=False)


@pytest.mark.parametrize(("name", "kind"), sorted(TRANSCRIPTS.items()))
class TestTranscripts:
    def test_detected(self, name: str, kind: str) -> None:
        assert load_trace(FIXTURES / name).format is TraceFormat(kind)

    def test_inspect_names_the_format(self, name: str, kind: str) -> None:
        result = run("inspect", str(FIXTURES / name))
        assert result.exit_code == 0, result.output
        assert result.output.splitlines()[0].endswith(f"({kind})")

    def test_the_next_request_is_valid(self, name: str, kind: str) -> None:
        for policy in ("cline", "windowkeeper"):
            result = run("check", str(FIXTURES / name), "--policy", policy)
            assert result.exit_code == 0, result.output
            assert result.output.rstrip().splitlines()[-1].startswith("ok:")

    def test_view_as_anthropic_is_a_body(self, name: str, kind: str) -> None:
        result = run("view", str(FIXTURES / name), "--as", "anthropic", "--policy", "windowkeeper")
        assert result.exit_code == 0, result.output
        body = json.loads(result.output)
        assert body["messages"][0]["role"] == "user"


def test_unknown_types_are_reported(tmp_path: Path) -> None:
    """inspect and check name what no request will carry, instead of forwarding it silently."""
    path = tmp_path / "messages.json"
    path.write_text(
        json.dumps(
            [
                {"role": "user", "content": "task"},
                {
                    "role": "assistant",
                    "content": [{"type": "reasoning", "text": "x"}, {"type": "text", "text": "ok"}],
                },
                {"role": "user", "content": "go"},
            ]
        )
    )
    assert (
        "unknown       1 left out of every request: history[1].content[0]: reasoning"
        in run("inspect", str(path)).output
    )
    checked = run("check", str(path), "--policy", "windowkeeper")
    assert "unknown" in checked.output


def test_view_shows_the_stored_sessions_request(tmp_path: Path) -> None:
    """A folder a session wrote: view shows that session's next request, and changes nothing."""
    session = ContextSession(20_000, task_dir=tmp_path)
    session.append({"role": "user", "content": "task"})
    for turn in range(10):
        call = {"type": "tool_use", "id": f"t{turn}", "name": "run", "input": {"n": turn}}
        session.extend(
            [
                {"role": "assistant", "content": [call], "ts": turn},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": f"t{turn}", "content": "y" * 6_000}
                    ],
                },
            ]
        )
        session.prepare(max_output_tokens=1_000)
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    result = run(
        "view", str(tmp_path), "--policy", "windowkeeper", "--as", "anthropic", "--window", "20000"
    )
    assert result.exit_code == 0, result.output
    expected = ContextSession(20_000, task_dir=tmp_path).prepare().messages
    assert json.loads(result.output)["messages"] == expected
    header = run("view", str(tmp_path), "--policy", "windowkeeper", "--window", "20000").output
    assert "stored session" in header.splitlines()[0]
    after = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    assert set(after) == set(before)


def test_view_bodies_carry_only_wire_fields(tmp_path: Path) -> None:
    """Block-level storage fields never reach a body; Chat Completions gets no thinking part."""
    history = [
        {"role": "user", "content": [{"type": "text", "text": "task", "call_id": "c0"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "s", "summary": []},
                {"type": "text", "text": "done", "reasoning_details": []},
            ],
        },
        {"role": "user", "content": "thanks"},
    ]
    path = tmp_path / "messages.json"
    path.write_text(json.dumps(history))
    anthropic = json.loads(run("view", str(path), "--as", "anthropic").output)
    assert anthropic["messages"][0]["content"] == [{"type": "text", "text": "task"}]
    assert anthropic["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "hmm",
        "signature": "s",
    }
    openai = json.loads(run("view", str(path), "--as", "openai").output)
    assert openai["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "done"}],
    }


def test_inspect_says_the_agent_compacted() -> None:
    """The Codex fixture compacts once: inspect says so (the messages it counts are those the
    agent kept), in text and in JSON; a transcript without a compaction says nothing of it."""
    shown = run("inspect", str(FIXTURES / "codex_rollout.jsonl"))
    assert (
        "compactions   1: the agent put a summary in place of earlier turns (the messages"
        " counted are those it kept)"
    ) in shown.output
    assert (
        json.loads(run("inspect", "--json", str(FIXTURES / "codex_rollout.jsonl")).output)[
            "compactions"
        ]
        == 1
    )
    assert "compactions" not in run("inspect", str(FIXTURES / "gemini_session.json")).output


def test_check_counts_one_message_in_the_singular(tmp_path: Path) -> None:
    path = tmp_path / "messages.json"
    path.write_text(json.dumps([{"role": "user", "content": "task"}]))
    shown = run("check", str(path))
    assert "the next request (1 message, " in shown.output
    assert "the stored history (1 message)" in run("check", "--stored", str(path)).output


def test_a_recording_never_used_says_it_holds_no_messages(tmp_path: Path) -> None:
    """A Gemini CLI recording of its first line alone is a session without messages, said so
    (it was refused as a message list that is not one)."""
    path = tmp_path / "session-a2a.jsonl"
    path.write_text(json.dumps({"sessionId": "a2a", "projectHash": "ab", "kind": "main"}) + "\n")
    shown = CliRunner().invoke(cli, ["inspect", str(path)])
    assert shown.exit_code != 0
    assert shown.output.strip().endswith("holds no messages")
