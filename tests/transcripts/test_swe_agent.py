"""SWE-agent trajectories: the two real formats of the corpus, and a small file written here."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import MalformedMessageError, TaskFolderError, validate_messages
from windowkeeper.formats import from_anthropic, validate_openai
from windowkeeper.transcripts.swe_agent import (
    ModelStats,
    SweAgentTrajectory,
    parse_swe_agent_trajectory,
    read_swe_agent_trajectory,
)

FUNCTION_CALLING = "swe-agent/marshmallow-1867_function_calling.traj"
THOUGHT_ACTION = "swe-agent/pydicom-1458_gpt4.traj"


def _tool_uses(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        block
        for message in messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_use"
    ]


class TestCorpus:
    """The real trajectories of the corpus."""

    def test_function_calling_trajectory(self, corpus: Path) -> None:
        """28 history items (system, task, 13 calls and their 13 observations) make 27 messages."""
        trajectory = read_swe_agent_trajectory(corpus / FUNCTION_CALLING)
        assert len(trajectory.openai_messages) == 28
        assert len(trajectory.messages) == 27
        assert trajectory.system is not None
        assert trajectory.system.startswith("SETTING: You are an autonomous programmer")
        assert [m["role"] for m in trajectory.messages] == ["user"] + ["assistant", "user"] * 13
        assert len(_tool_uses(trajectory.messages)) == 13
        # Four calls were written with spaces after the commas or the brace: kept verbatim.
        noted = [b for b in _tool_uses(trajectory.messages) if "openai_arguments" in b]
        assert len(noted) == 4
        assert validate_openai(trajectory.openai_messages) == []
        # The replay demo numbers its calls per turn, so ids repeat: the only rule it breaks,
        # which a session repairs by renaming (tests/test_session_loops.py).
        assert {v.rule for v in validate_messages(trajectory.messages)} <= {"duplicate-tool-use-id"}
        assert from_anthropic(trajectory.messages) == trajectory.openai_messages
        assert trajectory.model_stats == ModelStats(
            tokens_sent=0, tokens_received=0, api_calls=13, instance_cost=0.0, total_cost=None
        )

    def test_thought_action_trajectory(self, corpus: Path) -> None:
        """26 history items: system, demonstration, task, then 12 answers and 11 observations."""
        trajectory = read_swe_agent_trajectory(corpus / THOUGHT_ACTION)
        assert len(trajectory.openai_messages) == 26
        assert len(trajectory.messages) == 25
        assert _tool_uses(trajectory.messages) == []
        assert trajectory.messages[0]["content"].startswith("Here is a demonstration")
        # The demonstration and the task are two user messages in a row, as SWE-agent sent them.
        assert [str(v) for v in validate_messages(trajectory.messages)] == [
            "messages[1]: same-role-twice: two user messages in a row"
        ]
        assert validate_openai(trajectory.openai_messages) == []
        assert from_anthropic(trajectory.messages) == trajectory.openai_messages
        assert trajectory.model_stats == ModelStats(
            tokens_sent=122612,
            tokens_received=1369,
            api_calls=12,
            instance_cost=1.26719,
            total_cost=1.26719,
        )

    def test_only_sent_keys_are_kept(self, corpus: Path) -> None:
        """SWE-agent's bookkeeping keys (agent, thought, action, ...) are left out."""
        for name in (FUNCTION_CALLING, THOUGHT_ACTION):
            trajectory = read_swe_agent_trajectory(corpus / name)
            keys = set().union(*(message.keys() for message in trajectory.openai_messages))
            assert keys <= {"role", "content", "tool_calls", "tool_call_id"}


def _small_trajectory() -> dict[str, Any]:
    return {
        "environment": "main",
        "trajectory": [{"action": "ls", "observation": "a.py"}],
        "history": [
            {"role": "system", "content": "You fix bugs.", "agent": "main"},
            {"role": "user", "content": "Demo.", "is_demo": True, "agent": "main"},
            {"role": "user", "content": "Fix a.py.", "message_type": "observation"},
            {
                "role": "assistant",
                "content": "Look first.",
                "thought": "Look first.",
                "action": "ls",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                    }
                ],
            },
            {
                "role": "tool",
                "content": [
                    {"type": "text", "text": "a.py", "cache_control": {"type": "ephemeral"}}
                ],
                "tool_call_ids": ["call_1"],
                "cache_control": {"type": "ephemeral"},
            },
        ],
        "info": {"model_stats": {"tokens_sent": 10, "tokens_received": 2, "api_calls": 1}},
    }


class TestSmallTrajectory:
    """A trajectory written by the test, read without the corpus."""

    def test_read(self, tmp_path: Path) -> None:
        """The file gives the OpenAI messages SWE-agent sent, their Anthropic form and the totals."""
        path = tmp_path / "small.traj"
        path.write_text(json.dumps(_small_trajectory()), encoding="utf-8")
        trajectory = read_swe_agent_trajectory(path)
        assert isinstance(trajectory, SweAgentTrajectory)
        text = {"type": "text", "text": "a.py", "cache_control": {"type": "ephemeral"}}
        assert trajectory.openai_messages == [
            {"role": "system", "content": "You fix bugs."},
            {"role": "user", "content": "Demo."},
            {"role": "user", "content": "Fix a.py."},
            {
                "role": "assistant",
                "content": "Look first.",
                "tool_calls": _small_trajectory()["history"][3]["tool_calls"],
            },
            {
                "role": "tool",
                "content": [text],
                "tool_call_id": "call_1",
                "cache_control": {"type": "ephemeral"},
            },
        ]
        assert trajectory.system == "You fix bugs."
        assert trajectory.messages == [
            {
                "role": "user",
                "content": "Demo.",
                "openai_system": [{"role": "system", "content": "You fix bugs."}],
            },
            {"role": "user", "content": "Fix a.py."},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Look first."},
                    {
                        "type": "tool_use",
                        "id": "call_1",
                        "name": "bash",
                        "input": {"command": "ls"},
                        "openai_arguments": '{"command": "ls"}',
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_1",
                        "content": [text],
                        "cache_control": {"type": "ephemeral"},
                    }
                ],
            },
        ]
        assert trajectory.model_stats == ModelStats(10, 2, 1, 0.0, None)

    def test_data_is_not_modified(self) -> None:
        """Parsing loaded JSON leaves it as it was."""
        data = _small_trajectory()
        before = copy.deepcopy(data)
        parse_swe_agent_trajectory(data)
        assert data == before

    def test_no_model_stats(self) -> None:
        """A trajectory without info.model_stats has no totals."""
        data = _small_trajectory()
        del data["info"]
        assert parse_swe_agent_trajectory(data).model_stats is None


class TestErrors:
    """Unreadable trajectories name the file or the place."""

    def test_not_json(self, tmp_path: Path) -> None:
        """A file that is not JSON raises TaskFolderError naming it."""
        path = tmp_path / "broken.traj"
        path.write_text("{", encoding="utf-8")
        with pytest.raises(TaskFolderError, match=r"broken\.traj"):
            read_swe_agent_trajectory(path)

    def test_missing_file(self, tmp_path: Path) -> None:
        """A missing file raises TaskFolderError naming it."""
        with pytest.raises(TaskFolderError, match=r"absent\.traj"):
            read_swe_agent_trajectory(tmp_path / "absent.traj")

    def test_no_history(self, tmp_path: Path) -> None:
        """A JSON object without a history list names the file and the key."""
        path = tmp_path / "empty.traj"
        path.write_text("{}", encoding="utf-8")
        with pytest.raises(TaskFolderError, match=r"empty\.traj: history: expected a list"):
            read_swe_agent_trajectory(path)

    def test_bad_model_stats(self) -> None:
        """A negative or non-numeric total names its JSON path."""
        data = _small_trajectory()
        data["info"]["model_stats"]["tokens_sent"] = "many"
        with pytest.raises(TaskFolderError, match=r"info\.model_stats\.tokens_sent"):
            parse_swe_agent_trajectory(data)

    def test_observation_without_call_id(self) -> None:
        """A tool observation naming no call raises MalformedMessageError at history[i]."""
        data = _small_trajectory()
        del data["history"][4]["tool_call_ids"]
        with pytest.raises(MalformedMessageError) as caught:
            parse_swe_agent_trajectory(data)
        assert caught.value.path == "history[4].tool_call_ids"

    def test_bad_message(self) -> None:
        """Messages outside the supported subset are named by their history index."""
        data = _small_trajectory()
        data["history"][3]["tool_calls"][0]["function"]["arguments"] = {"command": "ls"}
        with pytest.raises(MalformedMessageError) as caught:
            parse_swe_agent_trajectory(data)
        assert caught.value.path == "history[3].tool_calls[0].function.arguments"
